package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/containerd"
	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	tasktypes "github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/remotes"
	"github.com/containerd/containerd/remotes/docker"

	"github.com/minik8s/minik8s/pkg/image"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime/daemon"
)

var (
	_ Runtime   = (*Containerd)(nil)
	_ Attacher  = (*Containerd)(nil)
	_ Versioner = (*Containerd)(nil)
)

// Config configures a Containerd runtime.
type Config struct {
	// Address of containerd's socket. Default /run/containerd/containerd.sock.
	Address string
	// Namespace in containerd. Default "minik8s".
	Namespace string
	// Node, when set, labels everything this runtime creates and limits
	// what it lists to those, so several nodes can share one containerd
	// namespace (a multi-node cluster on one machine) without adopting each
	// other's pods.
	Node string
	// Snapshotter for container root filesystems. Default containerd's.
	Snapshotter string
	// PauseImage runs every sandbox. Default registry.k8s.io/pause:3.10, the
	// built-in image (pkg/image).
	PauseImage string
	// CgroupRoot is the cgroup all pods go under. Default "/minik8s".
	CgroupRoot string
	// NetNSDir holds the pods' network namespace files. Default /var/run/netns.
	NetNSDir string
	// HostNetNS is the node's network namespace (a path), which
	// hostNetwork pods share, when it is not containerd's own: a node in
	// a namespace of its own (several nodes on one machine). Empty:
	// hostNetwork pods run in containerd's namespace.
	HostNetNS string
	// FIFODir holds the stdio fifos between containerd's shims and us.
	// Default /run/containerd/fifo.
	FIFODir string
	// PlainHTTPRegistries are registry hosts ("host:port") pulled from over
	// plain HTTP, besides localhost which always is.
	PlainHTTPRegistries []string
	// Logger; default slog.Default().
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Address == "" {
		c.Address = daemon.DefaultAddress
	}
	if c.Namespace == "" {
		c.Namespace = image.Namespace
	}
	if c.PauseImage == "" {
		c.PauseImage = image.PauseRef
	}
	if c.CgroupRoot == "" {
		c.CgroupRoot = "/minik8s"
	}
	if c.NetNSDir == "" {
		c.NetNSDir = "/var/run/netns"
	}
	if c.FIFODir == "" {
		c.FIFODir = "/run/containerd/fifo"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Labels on everything the runtime creates. The pod identity labels are
// exported for tools that look at containerd directly (ctr -n minik8s c ls).
const (
	labelPrefix        = "runtime.minik8s.io/"
	LabelKind          = labelPrefix + "kind" // "sandbox" or "container"
	LabelPodNamespace  = labelPrefix + "pod-namespace"
	LabelPodName       = labelPrefix + "pod-name"
	LabelPodUID        = labelPrefix + "pod-uid"
	LabelSandboxID     = labelPrefix + "sandbox-id"
	LabelContainerName = labelPrefix + "container-name"
	LabelNode          = labelPrefix + "node"

	labelNetNS        = labelPrefix + "netns"
	labelHostPID      = labelPrefix + "host-pid"
	labelHostname     = labelPrefix + "hostname"
	labelCgroup       = labelPrefix + "cgroup"
	labelCgroupParent = labelPrefix + "cgroup-parent"
	labelLogPath      = labelPrefix + "log-path"
	labelTTY          = labelPrefix + "tty"
	labelStdin        = labelPrefix + "stdin"
	labelStdinOnce    = labelPrefix + "stdin-once"
	labelImageRef     = labelPrefix + "image"
	labelImageID      = labelPrefix + "image-id"
	labelStartedAt    = labelPrefix + "started-at"
	labelFinishedAt   = labelPrefix + "finished-at"
	labelExitCode     = labelPrefix + "exit-code"
	labelReason       = labelPrefix + "reason"

	kindSandbox   = "sandbox"
	kindContainer = "container"
)

// Containerd is the Runtime on a containerd daemon.
type Containerd struct {
	cfg      Config
	client   *containerd.Client
	log      *slog.Logger
	resolver remotes.Resolver
	cg       cgroupMounts

	// ctx bounds the exit watchers, which outlive the calls that start
	// them. Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	locks idLocks
	mu    sync.Mutex
	ios   map[string]*taskIO // container ID -> its attached stdio
}

// New connects to containerd and adopts what an earlier kubelet left
// running: it re-attaches the log copiers of running containers and records
// the exits of those that stopped meanwhile.
func New(ctx context.Context, cfg Config) (*Containerd, error) {
	cfg.setDefaults()
	client, err := containerd.New(cfg.Address, containerd.WithDefaultNamespace(cfg.Namespace), containerd.WithTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("connect to containerd at %s: %w", cfg.Address, err)
	}
	if _, err := client.Version(ctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("containerd at %s: %w", cfg.Address, err)
	}
	cg, err := readCgroupMounts()
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	plain := slices.Clone(cfg.PlainHTTPRegistries)
	r := &Containerd{
		cfg:    cfg,
		cg:     cg,
		client: client,
		log:    cfg.Logger.With("component", "runtime"),
		resolver: docker.NewResolver(docker.ResolverOptions{Hosts: docker.ConfigureDefaultRegistries(
			docker.WithAuthorizer(docker.NewDockerAuthorizer()),
			docker.WithPlainHTTP(func(host string) (bool, error) {
				if slices.Contains(plain, host) {
					return true, nil
				}
				return docker.MatchLocalhost(host)
			}),
		)}),
		ios: map[string]*taskIO{},
	}
	r.ctx, r.cancel = context.WithCancel(namespaces.WithNamespace(context.Background(), cfg.Namespace))
	if err := r.adopt(r.nsCtx(ctx)); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Version is "containerd://<daemon version>".
func (r *Containerd) Version(ctx context.Context) (string, error) {
	v, err := r.client.Version(ctx)
	if err != nil {
		return "", fmt.Errorf("containerd version: %w", err)
	}
	return "containerd://" + v.Version, nil
}

// Client is the containerd client, for callers that import images.
func (r *Containerd) Client() *containerd.Client { return r.client }

// Namespace is the containerd namespace the runtime works in.
func (r *Containerd) Namespace() string { return r.cfg.Namespace }

// Close stops watching containers and copying their logs, and disconnects.
// Containers keep running; a new Containerd adopts them (as a restarted
// kubelet does).
func (r *Containerd) Close() error {
	r.cancel()
	r.mu.Lock()
	for _, tio := range r.ios {
		tio.detach()
	}
	r.mu.Unlock()
	r.wg.Wait()
	return r.client.Close()
}

func (r *Containerd) nsCtx(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, r.cfg.Namespace)
}

// adopt re-attaches to running containers and reaps stopped ones.
func (r *Containerd) adopt(ctx context.Context) error {
	cs, tasks, err := r.listAll(ctx)
	if err != nil {
		return err
	}
	for _, c := range cs {
		p, ok := tasks[c.ID]
		if !ok {
			continue
		}
		switch p.Status {
		case tasktypes.Status_STOPPED:
			if err := r.reap(ctx, c.ID); err != nil {
				r.log.Warn("record exit of container", "id", c.ID, "err", err)
			}
		case tasktypes.Status_RUNNING, tasktypes.Status_PAUSED, tasktypes.Status_PAUSING:
			if err := r.attach(ctx, c); err != nil {
				r.log.Warn("re-attach to container", "id", c.ID, "err", err)
			}
		}
	}
	return nil
}

// attach re-opens the stdio of a running container created by an earlier
// process and watches it for exit.
func (r *Containerd) attach(ctx context.Context, c containers.Container) error {
	unlock := r.locks.lock(c.ID)
	defer unlock()
	r.mu.Lock()
	_, attached := r.ios[c.ID]
	r.mu.Unlock()
	if attached {
		return nil
	}
	container, err := r.client.LoadContainer(ctx, c.ID)
	if err != nil {
		return err
	}
	var tio *taskIO
	var task containerd.Task
	if logPath := c.Labels[labelLogPath]; logPath != "" {
		task, err = container.Task(ctx, func(fifos *cio.FIFOSet) (cio.IO, error) {
			var err error
			tio, err = r.openTaskIO(fifos, logPath, c.Labels[labelStdin] == "true")
			return tio, err
		})
	} else {
		task, err = container.Task(ctx, nil)
	}
	if err != nil {
		return err
	}
	if tio != nil {
		r.mu.Lock()
		r.ios[c.ID] = tio
		r.mu.Unlock()
	}
	r.watch(c.ID, task)
	return nil
}

// watch records the exit of a container's task as soon as it happens. When
// the wait breaks off (containerd restarted) it waits again; the relist in
// ListContainers catches what a broken watch misses.
func (r *Containerd) watch(id string, task containerd.Task) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			exitC, err := task.Wait(r.ctx)
			if err == nil {
				select {
				case st := <-exitC:
					err = st.Error()
				case <-r.ctx.Done():
					return
				}
			}
			if r.ctx.Err() != nil {
				return
			}
			if err == nil || errdefs.IsNotFound(err) {
				break
			}
			r.log.Debug("wait for container exit", "id", id, "err", err)
			select {
			case <-time.After(time.Second):
			case <-r.ctx.Done():
				return
			}
		}
		ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
		defer cancel()
		if err := r.reap(ctx, id); err != nil && r.ctx.Err() == nil {
			r.log.Warn("record exit of container", "id", id, "err", err)
		}
	}()
}

// reap records a stopped task's exit in its container's labels and deletes
// the task, so the exit outlives the shim and a restarted kubelet still
// sees it. It does nothing while the task runs.
func (r *Containerd) reap(ctx context.Context, id string) error {
	unlock := r.locks.lock(id)
	defer unlock()
	return r.reapLocked(ctx, id)
}

func (r *Containerd) reapLocked(ctx context.Context, id string) error {
	container, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		r.dropIO(id)
		return nil
	}
	if err != nil {
		return err
	}
	task, err := container.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		r.dropIO(id)
		return nil
	}
	if err != nil {
		return err
	}
	st, err := task.Status(ctx)
	if err != nil {
		return err
	}
	switch st.Status {
	case containerd.Stopped:
	case containerd.Created:
		// Created but never started (a failed start): nothing to record.
		_, err := task.Delete(ctx)
		r.dropIO(id)
		return ignoreNotFound(err)
	default:
		return nil
	}
	labels, err := container.Labels(ctx)
	if err != nil {
		return err
	}
	reason := ""
	if cg := labels[labelCgroup]; cg != "" && r.cg.oomKilled(cg) {
		reason = "OOMKilled"
	}
	// Let the copiers write what the container printed last.
	r.mu.Lock()
	tio := r.ios[id]
	r.mu.Unlock()
	if tio != nil {
		tio.waitCopied(5 * time.Second)
	}
	finished := st.ExitTime
	if finished.IsZero() {
		finished = time.Now()
	}
	if _, err := container.SetLabels(ctx, map[string]string{
		labelExitCode:   strconv.Itoa(int(st.ExitStatus)),
		labelFinishedAt: finished.UTC().Format(time.RFC3339Nano),
		labelReason:     reason,
	}); err != nil {
		return fmt.Errorf("record exit: %w", err)
	}
	if _, err := task.Delete(ctx); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("delete task: %w", err)
	}
	r.dropIO(id)
	return nil
}

// dropIO closes a container's stdio and removes its fifos.
func (r *Containerd) dropIO(id string) {
	r.mu.Lock()
	tio := r.ios[id]
	delete(r.ios, id)
	r.mu.Unlock()
	if tio != nil {
		tio.close()
	}
}

// listAll returns our containers and their tasks' processes by container ID.
func (r *Containerd) listAll(ctx context.Context) ([]containers.Container, map[string]*tasktypes.Process, error) {
	filter := fmt.Sprintf("labels.%q", LabelKind)
	if r.cfg.Node != "" {
		filter += fmt.Sprintf(",labels.%q==%q", LabelNode, r.cfg.Node)
	}
	cs, err := r.client.ContainerService().List(ctx, filter)
	if err != nil {
		return nil, nil, fmt.Errorf("list containers: %w", err)
	}
	resp, err := r.client.TaskService().List(ctx, &tasksapi.ListTasksRequest{})
	if err != nil {
		return nil, nil, fmt.Errorf("list tasks: %w", err)
	}
	tasks := make(map[string]*tasktypes.Process, len(resp.Tasks))
	for _, p := range resp.Tasks {
		tasks[p.ID] = p
	}
	return cs, tasks, nil
}

// ListContainers returns all our sandboxes and containers. Exits that
// happened since the last look are recorded first.
func (r *Containerd) ListContainers(ctx context.Context) ([]ContainerStatus, error) {
	ctx = r.nsCtx(ctx)
	cs, tasks, err := r.listAll(ctx)
	if err != nil {
		return nil, err
	}
	reaped := false
	for _, c := range cs {
		if p, ok := tasks[c.ID]; ok && p.Status == tasktypes.Status_STOPPED {
			if err := r.reap(ctx, c.ID); err != nil {
				r.log.Warn("record exit of container", "id", c.ID, "err", err)
			}
			reaped = true
		}
	}
	if reaped {
		if cs, tasks, err = r.listAll(ctx); err != nil {
			return nil, err
		}
	}
	out := make([]ContainerStatus, 0, len(cs))
	for _, c := range cs {
		st := statusOf(c, tasks[c.ID])
		if st.Reason == reasonStatusUnknown {
			st = r.recheck(ctx, c, st)
		}
		out = append(out, st)
	}
	return out, nil
}

// recheck looks again at a container that seemed started but had neither
// a task nor a recorded exit: the lists of containers and of tasks are
// two reads, and a reap (labels written, then the task deleted) may have
// fallen between them. The task is read first: when it is gone, the exit
// it left is already in the labels read after it.
func (r *Containerd) recheck(ctx context.Context, c containers.Container, st ContainerStatus) ContainerStatus {
	var p *tasktypes.Process
	resp, err := r.client.TaskService().Get(ctx, &tasksapi.GetRequest{ContainerID: c.ID})
	switch {
	case err == nil:
		p = resp.Process
	case !errdefs.IsNotFound(errdefs.FromGRPC(err)):
		return st
	}
	fresh, err := r.client.ContainerService().Get(ctx, c.ID)
	if err != nil {
		return st
	}
	return statusOf(fresh, p)
}

// reasonStatusUnknown is Kubernetes' reason for a container that was
// started and is gone without a recorded exit.
const reasonStatusUnknown = "ContainerStatusUnknown"

// statusOf builds a ContainerStatus from a container's labels and its task.
func statusOf(c containers.Container, p *tasktypes.Process) ContainerStatus {
	l := c.Labels
	st := ContainerStatus{
		ID:           c.ID,
		IsSandbox:    l[LabelKind] == kindSandbox,
		SandboxID:    l[LabelSandboxID],
		PodNamespace: l[LabelPodNamespace],
		PodName:      l[LabelPodName],
		PodUID:       l[LabelPodUID],
		Name:         l[LabelContainerName],
		Labels:       map[string]string{},
		Image:        l[labelImageRef],
		ImageID:      l[labelImageID],
		CreatedAt:    c.CreatedAt,
		StartedAt:    parseTime(l[labelStartedAt]),
		LogPath:      l[labelLogPath],
		NetNSPath:    l[labelNetNS],
		CgroupParent: l[labelCgroupParent],
		User:         userFromLabel(l[labelUser]),
	}
	if st.Image == "" {
		st.Image = c.Image
	}
	for k, v := range l {
		if !strings.HasPrefix(k, labelPrefix) && !strings.HasPrefix(k, "io.containerd.") {
			st.Labels[k] = v
		}
	}
	switch {
	case p != nil:
		switch p.Status {
		case tasktypes.Status_CREATED:
			st.State = StateCreated
		case tasktypes.Status_RUNNING, tasktypes.Status_PAUSED, tasktypes.Status_PAUSING:
			st.State, st.Pid = StateRunning, p.Pid
		case tasktypes.Status_STOPPED:
			st.State, st.ExitCode = StateExited, int(p.ExitStatus)
			if p.ExitedAt != nil {
				st.FinishedAt = p.ExitedAt.AsTime()
			}
		default:
			st.State = StateUnknown
		}
	case l[labelFinishedAt] != "":
		st.State = StateExited
		st.ExitCode, _ = strconv.Atoi(l[labelExitCode])
		st.FinishedAt = parseTime(l[labelFinishedAt])
		st.Reason = l[labelReason]
	case l[labelStartedAt] != "":
		// Started, but the task is gone without a recorded exit (the node
		// rebooted): Kubernetes reports such a container this way.
		st.State, st.ExitCode, st.Reason = StateExited, 137, reasonStatusUnknown
	default:
		st.State = StateCreated
	}
	return st
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// newID returns a random container ID.
func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func ignoreNotFound(err error) error {
	if errdefs.IsNotFound(err) {
		return nil
	}
	return err
}

// idLocks serialises operations on one container ID.
type idLocks struct {
	mu    sync.Mutex
	locks map[string]*idLock
}

type idLock struct {
	sync.Mutex
	refs int
}

func (l *idLocks) lock(id string) (unlock func()) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*idLock{}
	}
	lk := l.locks[id]
	if lk == nil {
		lk = &idLock{}
		l.locks[id] = lk
	}
	lk.refs++
	l.mu.Unlock()
	lk.Lock()
	return func() {
		lk.Unlock()
		l.mu.Lock()
		if lk.refs--; lk.refs == 0 {
			delete(l.locks, id)
		}
		l.mu.Unlock()
	}
}

// mergeLabels returns base with extra's entries that do not collide with
// the runtime's own labels.
func (r *Containerd) mergeLabels(base, extra map[string]string) (map[string]string, error) {
	out := maps.Clone(base)
	if r.cfg.Node != "" {
		out[LabelNode] = r.cfg.Node
	}
	for k, v := range extra {
		if strings.HasPrefix(k, labelPrefix) {
			return nil, errors.New("label " + k + " is reserved for the runtime")
		}
		out[k] = v
	}
	return out, nil
}
