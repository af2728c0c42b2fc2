package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/netip"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet/network"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

// fakeRuntime keeps sandboxes and containers in memory; tests make
// containers exit with exit().
type fakeRuntime struct {
	mu      sync.Mutex
	clock   *testclock.FakeClock
	next    int
	all     map[string]*runtime.ContainerStatus
	configs map[string]runtime.ContainerConfig
	// sandboxes are the configs sandboxes were created with, by ID.
	sandboxes map[string]runtime.SandboxConfig
	images    map[string]bool
	// pullErrs fail EnsureImage for an image; startErrs StartContainer
	// for a container name.
	pullErrs  map[string]error
	startErrs map[string]error
	// stopCode is the exit code StopContainer gives (default 137).
	stopCode int
	stops    map[string]time.Duration // container ID -> grace it was stopped with
	stopped  map[string]time.Time     // container ID -> when it was stopped
	exec     func(id string, cmd []string, s runtime.ExecStreams) (int, error)
	ops      []string
	usage    map[string]fakeUsage // by ID, for Stats
	// resources are what UpdateResources last set, by ID; updateErr
	// fails it.
	resources map[string]runtime.Resources
	updateErr error
}

var _ runtime.Runtime = (*fakeRuntime)(nil)

func newFakeRuntime(clk *testclock.FakeClock) *fakeRuntime {
	return &fakeRuntime{
		clock: clk, all: map[string]*runtime.ContainerStatus{}, configs: map[string]runtime.ContainerConfig{},
		sandboxes: map[string]runtime.SandboxConfig{},
		images:    map[string]bool{}, pullErrs: map[string]error{}, startErrs: map[string]error{},
		stopCode: 137, stops: map[string]time.Duration{}, stopped: map[string]time.Time{},
		resources: map[string]runtime.Resources{},
	}
}

func (f *fakeRuntime) op(format string, args ...any) {
	f.ops = append(f.ops, fmt.Sprintf(format, args...))
}

func (f *fakeRuntime) EnsureImage(_ context.Context, ref string, policy corev1.PullPolicy) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.pullErrs[ref]; err != nil {
		return false, &runtime.PullError{Image: ref, Err: err}
	}
	if policy == corev1.PullNever && !f.images[ref] {
		return false, fmt.Errorf("%w: %s", runtime.ErrImageNeverPull, ref)
	}
	pulled := !f.images[ref] || policy == corev1.PullAlways
	f.images[ref] = true
	return pulled, nil
}

func (f *fakeRuntime) CreateSandbox(ctx context.Context, cfg runtime.SandboxConfig) (*runtime.Sandbox, error) {
	f.mu.Lock()
	f.next++
	id := fmt.Sprintf("sb%d", f.next)
	netns := "/var/run/netns/fake-" + id
	f.mu.Unlock()
	if cfg.AttachNetwork != nil {
		if err := cfg.AttachNetwork(ctx, id, netns); err != nil {
			return nil, fmt.Errorf("create sandbox for %s: %w", cfg.Name, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	f.all[id] = &runtime.ContainerStatus{
		ID: id, IsSandbox: true, PodNamespace: cfg.Namespace, PodName: cfg.Name, PodUID: cfg.UID,
		Labels: cfg.Labels, State: runtime.StateRunning, CreatedAt: now, StartedAt: now,
		NetNSPath: netns,
	}
	f.sandboxes[id] = cfg
	f.op("sandbox %s", cfg.Name)
	return &runtime.Sandbox{ID: id, NetNSPath: netns}, nil
}

func (f *fakeRuntime) RemoveSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for cid, c := range f.all {
		if c.SandboxID == id || cid == id {
			delete(f.all, cid)
		}
	}
	f.op("remove sandbox %s", id)
	return nil
}

func (f *fakeRuntime) CreateContainer(_ context.Context, sb *runtime.Sandbox, cfg runtime.ContainerConfig) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.all[sb.ID]
	if !ok || s.State != runtime.StateRunning {
		return "", fmt.Errorf("sandbox %s is not running", sb.ID)
	}
	f.next++
	id := fmt.Sprintf("c%d", f.next)
	f.all[id] = &runtime.ContainerStatus{
		ID: id, SandboxID: sb.ID, PodNamespace: s.PodNamespace, PodName: s.PodName, PodUID: s.PodUID,
		Name: cfg.Name, Labels: cfg.Labels, Image: cfg.Image, ImageID: "docker.io/library/" + cfg.Image + ":latest@sha256:0123",
		State: runtime.StateCreated, CreatedAt: f.clock.Now(), LogPath: cfg.LogPath,
	}
	f.configs[id] = cfg
	f.op("create %s/%s", cfg.Name, cfg.Labels[labelRestartCount])
	return id, nil
}

func (f *fakeRuntime) StartContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.all[id]
	if err := f.startErrs[c.Name]; err != nil {
		return err
	}
	c.State, c.StartedAt = runtime.StateRunning, f.clock.Now()
	f.op("start %s/%s", c.Name, c.Labels[labelRestartCount])
	return nil
}

func (f *fakeRuntime) StopContainer(_ context.Context, id string, grace time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.all[id]
	if !ok {
		return nil
	}
	f.stops[id] = grace
	f.stopped[id] = f.clock.Now()
	if c.State == runtime.StateRunning {
		c.State, c.ExitCode, c.FinishedAt = runtime.StateExited, f.stopCode, f.clock.Now()
		f.op("stop %s", c.Name)
	}
	return nil
}

func (f *fakeRuntime) RemoveContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.all[id]; ok {
		f.op("remove %s/%s", c.Name, c.Labels[labelRestartCount])
	}
	delete(f.all, id)
	return nil
}

func (f *fakeRuntime) UpdateResources(_ context.Context, id string, res runtime.Resources, labels map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.all[id]
	if !ok || c.State != runtime.StateRunning {
		return fmt.Errorf("container %s is not running", id)
	}
	if f.updateErr != nil {
		return f.updateErr
	}
	f.resources[id] = res
	if len(labels) > 0 {
		merged := maps.Clone(c.Labels)
		maps.Copy(merged, labels)
		c.Labels = merged
	}
	name := c.Name
	if c.IsSandbox {
		name = "pod"
	}
	f.op("update %s cpu=%dm/%dm mem=%d", name, res.CPURequestMilli, res.CPULimitMilli, res.MemoryLimitBytes)
	return nil
}

func (f *fakeRuntime) ListContainers(context.Context) ([]runtime.ContainerStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]runtime.ContainerStatus, 0, len(f.all))
	for _, c := range f.all {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (f *fakeRuntime) Exec(_ context.Context, id string, cmd []string, s runtime.ExecStreams) (int, error) {
	f.mu.Lock()
	fn := f.exec
	f.mu.Unlock()
	if fn == nil {
		return 0, nil
	}
	return fn(id, cmd, s)
}

// Stats reports what setUsage gave the ID: a steady cpu rate since then
// (cumulative time grows with the fake clock) and a working set.
func (f *fakeRuntime) Stats(_ context.Context, id string) (*runtime.Stats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.usage[id]
	if !ok {
		return nil, errors.New("no stats")
	}
	now := f.clock.Now()
	return &runtime.Stats{
		Timestamp: now, CPUUsageNanos: u.cpuBase + uint64(u.cores*float64(now.Sub(u.since))),
		MemoryUsageBytes: 2 * u.workingSet, MemoryWorkingSetBytes: u.workingSet, MemoryRSSBytes: u.workingSet,
	}, nil
}

// fakeUsage is what an ID uses: cores of cpu since since, on top of
// cpuBase nanoseconds, and workingSet bytes.
type fakeUsage struct {
	cores      float64
	cpuBase    uint64
	since      time.Time
	workingSet uint64
}

// setUsage makes id use cores of cpu from now on, and workingSet bytes.
func (f *fakeRuntime) setUsage(id string, cores float64, workingSet uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.usage == nil {
		f.usage = map[string]fakeUsage{}
	}
	now := f.clock.Now()
	var base uint64
	if u, ok := f.usage[id]; ok {
		base = u.cpuBase + uint64(u.cores*float64(now.Sub(u.since)))
	}
	f.usage[id] = fakeUsage{cores: cores, cpuBase: base, since: now, workingSet: workingSet}
}

// exit ends the running attempt of container name with code.
func (f *fakeRuntime) exit(t *testing.T, name string, code int) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.all {
		if c.Name == name && c.State == runtime.StateRunning {
			c.State, c.ExitCode, c.FinishedAt = runtime.StateExited, code, f.clock.Now()
			return
		}
	}
	t.Fatalf("no running container %s", name)
}

// running lists the running containers' "name/attempt".
func (f *fakeRuntime) running() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.all {
		if !c.IsSandbox && c.State == runtime.StateRunning {
			out = append(out, c.Name+"/"+c.Labels[labelRestartCount])
		}
	}
	sort.Strings(out)
	return out
}

func (f *fakeRuntime) takeOps() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ops := f.ops
	f.ops = nil
	return ops
}

// fakeNetwork hands out addresses from 10.244.0.0/24.
type fakeNetwork struct {
	mu        sync.Mutex
	next      int
	pods      map[string]netip.Addr
	teardowns []string
	setupErr  error
}

var _ network.Network = (*fakeNetwork)(nil)

func newFakeNetwork() *fakeNetwork { return &fakeNetwork{pods: map[string]netip.Addr{}} }

func (n *fakeNetwork) NewNetNS(string) (string, error) { return "", errors.New("not used") }
func (n *fakeNetwork) DeleteNetNS(string) error        { return errors.New("not used") }

func (n *fakeNetwork) Setup(_ context.Context, podID, _ string, _ []network.PortMapping) (*network.Result, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.setupErr != nil {
		return nil, n.setupErr
	}
	if ip, ok := n.pods[podID]; ok {
		return &network.Result{IP: ip}, nil
	}
	n.next++
	ip := netip.AddrFrom4([4]byte{10, 244, 0, byte(n.next + 1)})
	n.pods[podID] = ip
	return &network.Result{IP: ip}, nil
}

func (n *fakeNetwork) Teardown(_ context.Context, podID, _ string, _ []network.PortMapping) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.pods, podID)
	n.teardowns = append(n.teardowns, podID)
	return nil
}

func (n *fakeNetwork) Status(_ context.Context, podID, _ string) (*network.Result, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ip, ok := n.pods[podID]; ok {
		return &network.Result{IP: ip}, nil
	}
	return nil, nil
}

// testEnv is a provider on fakes with a fake clock.
type testEnv struct {
	t     *testing.T
	clock *testclock.FakeClock
	rt    *fakeRuntime
	net   *fakeNetwork
	p     *Provider
	root  string
	// mounts are the tmpfs mounts of memory-backed emptyDirs.
	mounts *fakeMounter
	// providerClock, when set, is the clock provider() gives (one that
	// wraps clock).
	providerClock clock.WithTicker
}

var epoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func newTestEnv(t *testing.T, objs ...apiruntime.Object) *testEnv {
	t.Helper()
	clk := testclock.NewFakeClock(epoch)
	e := &testEnv{t: t, clock: clk, rt: newFakeRuntime(clk), net: newFakeNetwork(), root: t.TempDir()}
	e.p = e.provider(objs...)
	return e
}

func (e *testEnv) provider(objs ...apiruntime.Object) *Provider {
	e.t.Helper()
	p, err := New(Config{
		NodeName: "node1", NodeIP: "192.168.1.10",
		Runtime: e.rt, Network: e.net, Client: fake.NewClientset(objs...),
		RootDir: e.root, ClusterDNS: []string{"10.96.0.10"}, ResolvConf: writeTemp(e.t, "nameserver 1.1.1.1\nsearch example.com\n"),
		Clock: e.clock, Logger: slog.New(slog.DiscardHandler),
	}.withClock(e.providerClock))
	if err != nil {
		e.t.Fatal(err)
	}
	p.list.ttl = 0
	if e.mounts == nil {
		e.mounts = &fakeMounter{mounted: map[string]int64{}}
	}
	p.mounter = e.mounts
	e.t.Cleanup(func() { _ = p.Close() })
	return p
}

// worker adds pod to the provider without starting its goroutine: tests
// step it with sync.
func (e *testEnv) worker(pod *corev1.Pod) *podWorker {
	e.t.Helper()
	if err := e.p.ensureLoaded(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	w := newPodWorker(e.p, pod, false)
	e.p.mu.Lock()
	e.p.pods[w.key] = w
	e.p.mu.Unlock()
	return w
}

// sync runs one reconcile and returns the resulting status.
func (e *testEnv) sync(w *podWorker) corev1.PodStatus {
	e.t.Helper()
	w.syncAndReport(context.Background())
	return w.snapshot().Status
}

// withClock is c with clk as its clock, when clk is set.
func (c Config) withClock(clk clock.WithTicker) Config {
	if clk != nil {
		c.Clock = clk
	}
	return c
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	path := t.TempDir() + "/file"
	if err := writeFileAtomic(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// testPod is a pod with containers running busybox.
func testPod(name string, containers ...string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeName: "node1", RestartPolicy: corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
		},
	}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent})
	}
	return pod
}

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Event(_ apiruntime.Object, eventType, reason, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, eventType+" "+reason+" "+message)
}

func (r *recorder) Eventf(obj apiruntime.Object, eventType, reason, format string, args ...any) {
	r.Event(obj, eventType, reason, fmt.Sprintf(format, args...))
}

func (r *recorder) AnnotatedEventf(obj apiruntime.Object, _ map[string]string, eventType, reason, format string, args ...any) {
	r.Eventf(obj, eventType, reason, format, args...)
}

var _ io.Writer = (*limitedBuffer)(nil)

// fakeMounter keeps the tmpfs mounts, by directory, with their size.
type fakeMounter struct {
	mu      sync.Mutex
	mounted map[string]int64
}

func (m *fakeMounter) mountTmpfs(dir string, size int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.mounted[dir]; !ok {
		m.mounted[dir] = size
	}
	return nil
}

func (m *fakeMounter) unmount(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.mounted, dir)
	return nil
}

// size is the size of the tmpfs on dir, and whether there is one.
func (m *fakeMounter) size(dir string) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.mounted[dir]
	return s, ok
}
