package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/kubelet"
	"github.com/minik8s/minik8s/pkg/kubelet/network"
	"github.com/minik8s/minik8s/pkg/kubelet/podcert"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
	"github.com/minik8s/minik8s/pkg/kubelet/stats"
)

// Config is what a local provider is built from.
type Config struct {
	// NodeName is the Node this provider runs pods for (required).
	NodeName string
	// NodeIP is the node's InternalIP: status.hostIP, and the address of
	// hostNetwork pods (required).
	NodeIP string
	// Runtime runs the sandboxes and containers (required).
	Runtime runtime.Runtime
	// Network attaches pods to the pod network. When nil, NewNetwork
	// builds it once the Node has a spec.podCIDR (read through Client);
	// when both are nil only hostNetwork pods run, and the others wait
	// with a "network is not ready" message.
	Network    network.Network
	NewNetwork func(podCIDR string) (network.Network, error)
	// HostNetNS is the node's network namespace (network.Config.HostNetNS),
	// where httpGet, tcpSocket and grpc probes dial from. Empty: the
	// process's own.
	HostNetNS string
	// Client reads ConfigMaps, Secrets and Services for volumes and
	// environment, and the Node's podCIDR for NewNetwork. Nil: pods that
	// need them fail with CreateContainerConfigError.
	Client kubernetes.Interface
	// RootDir holds volumes, pod files and logs. Default /var/lib/minik8s/kubelet.
	RootDir string
	// LocalPathRoot, when set, is where this node's local-path volumes
	// live; the Node is registered with it (minik8s.io/local-path-root),
	// so the provisioner never sees the node without it.
	LocalPathRoot string
	// ClusterDNS are the cluster's DNS servers for dnsPolicy ClusterFirst;
	// empty: pods get the host's resolv.conf. ClusterDomain defaults to
	// cluster.local.
	ClusterDNS    []string
	ClusterDomain string
	// ResolvConf is the host's resolver configuration, for dnsPolicy
	// Default. Default /etc/resolv.conf, or systemd-resolved's upstream
	// file when that one only names a loopback stub.
	ResolvConf string
	// Capacity adds to and overrides what the machine reports (cpu and
	// memory from /proc, pods 110, ephemeral-storage of RootDir's file
	// system): extended resources go here.
	Capacity corev1.ResourceList
	// Reserved is subtracted from capacity for allocatable (system and
	// kube reserved). Memory also loses the 100Mi hard eviction threshold
	// of Kubernetes' kubelet.
	Reserved corev1.ResourceList
	// Credential is the node's client certificate and key and the
	// cluster's CA (data or files, as in its REST config), which GlusterFS
	// mounts present (pkg/glusterfs). Nil: such volumes fail to mount here.
	Credential *rest.TLSClientConfig
	// RuntimeVersion is the Node's containerRuntimeVersion; default
	// "containerd://<version>" asked from the runtime.
	RuntimeVersion string
	// Recorder receives pod events (Pulling, Started, BackOff, Unhealthy,
	// Killing...). Nil: none are recorded.
	Recorder record.EventRecorder
	// SyncPeriod is how often each pod worker reconciles (default 1s).
	SyncPeriod time.Duration
	Clock      clock.WithTicker
	Logger     *slog.Logger
}

// Back-off of container restarts and image pulls, as Kubernetes' kubelet.
const (
	backOffInitial = 10 * time.Second
	backOffMax     = 5 * time.Minute
	// listTTL is how old a shared relist may be for a worker's sync.
	listTTL = 500 * time.Millisecond
)

func (c *Config) complete() error {
	switch {
	case c.NodeName == "":
		return errors.New("local provider: a node name is required")
	case c.Runtime == nil:
		return errors.New("local provider: a container runtime is required")
	}
	if _, err := netip.ParseAddr(c.NodeIP); err != nil {
		return fmt.Errorf("local provider: node IP %q: %w", c.NodeIP, err)
	}
	for _, s := range c.ClusterDNS {
		if _, err := netip.ParseAddr(s); err != nil {
			return fmt.Errorf("local provider: cluster DNS %q: %w", s, err)
		}
	}
	if c.RootDir == "" {
		c.RootDir = "/var/lib/minik8s/kubelet"
	}
	root, err := filepath.Abs(c.RootDir)
	if err != nil {
		return fmt.Errorf("local provider: root dir: %w", err)
	}
	c.RootDir = root
	if c.ClusterDomain == "" {
		c.ClusterDomain = "cluster.local"
	}
	if c.SyncPeriod == 0 {
		c.SyncPeriod = time.Second
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Provider runs the pods bound to this node as containers.
type Provider struct {
	cfg    Config
	rt     runtime.Runtime
	log    *slog.Logger
	clock  clock.WithTicker
	events record.EventRecorder

	// crashBackOff delays container restarts, pullBackOff image pulls,
	// sandboxBackOff failed sandbox or network setups.
	crashBackOff   *flowcontrol.Backoff
	pullBackOff    *flowcontrol.Backoff
	sandboxBackOff *flowcontrol.Backoff

	// ctx bounds the pod workers; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	pods   map[string]*podWorker // namespace/name
	notify func(*corev1.Pod)
	loaded bool // the runtime's pods have been adopted

	netMu     sync.Mutex
	net       network.Network
	netTried  time.Time
	netReason string

	list   listCache
	node   nodeCache
	files  fileCache
	shared sharedMounts
	// certs keeps the credentials of podCertificate projected sources
	// (nil without an API client).
	certs *podcert.Manager

	// cpu turns cumulative cpu times into rates for Summary (stats.go);
	// readNode measures the machine (readProcNode; tests replace it).
	cpu      stats.CPUTracker
	readNode func() (nodeUsage, error)
	// mounter mounts memory-backed emptyDirs (emptydir.go).
	mounter mounter
}

var (
	_ kubelet.Provider          = (*Provider)(nil)
	_ kubelet.NodeProvider      = (*Provider)(nil)
	_ kubelet.ContainerLogger   = (*Provider)(nil)
	_ kubelet.ContainerExecer   = (*Provider)(nil)
	_ kubelet.ContainerAttacher = (*Provider)(nil)
)

// New validates cfg, fills its defaults and builds the provider. It starts
// nothing: pods found running in the runtime are adopted on the first call
// that needs them (GetPods, as a starting kubelet makes).
func New(cfg Config) (*Provider, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.RootDir, 0o755); err != nil {
		return nil, fmt.Errorf("local provider: %w", err)
	}
	p := &Provider{
		cfg:            cfg,
		rt:             cfg.Runtime,
		log:            cfg.Logger.With("component", "local-provider"),
		clock:          cfg.Clock,
		events:         cfg.Recorder,
		crashBackOff:   flowcontrol.NewFakeBackOff(backOffInitial, backOffMax, cfg.Clock),
		pullBackOff:    flowcontrol.NewFakeBackOff(backOffInitial, backOffMax, cfg.Clock),
		sandboxBackOff: flowcontrol.NewFakeBackOff(time.Second, time.Minute, cfg.Clock),
		pods:           map[string]*podWorker{},
		readNode:       readProcNode,
		mounter:        sysMounter{},
	}
	if cfg.Network != nil {
		p.net = cfg.Network
	}
	if p.events == nil {
		p.events = noEvents{}
	}
	if cfg.Client != nil {
		certs, err := podcert.New(podcert.Config{Client: cfg.Client, NodeName: cfg.NodeName, Recorder: cfg.Recorder,
			Clock: cfg.Clock, Logger: p.log})
		if err != nil {
			return nil, err
		}
		p.certs = certs
	}
	p.list.ttl = listTTL
	p.ctx, p.cancel = context.WithCancel(context.Background())
	go p.runGlusterfsSweeper()
	return p, nil
}

// Close stops the pod workers and probes. Containers keep running: a new
// provider adopts them, as a restarted kubelet does.
func (p *Provider) Close() error {
	p.cancel()
	p.mu.Lock()
	workers := make([]*podWorker, 0, len(p.pods))
	for _, w := range p.pods {
		workers = append(workers, w)
	}
	p.mu.Unlock()
	for _, w := range workers {
		w.stop()
	}
	return nil
}

func podKey(ns, name string) string { return ns + "/" + name }

// network returns the pod network, building it with NewNetwork once the
// Node has a podCIDR. reason says why there is none.
func (p *Provider) network(ctx context.Context) (n network.Network, reason string) {
	p.netMu.Lock()
	defer p.netMu.Unlock()
	if p.net != nil {
		return p.net, ""
	}
	if p.cfg.NewNetwork == nil || p.cfg.Client == nil {
		return nil, "network is not ready: this node has no pod network (only hostNetwork pods run here)"
	}
	if now := p.clock.Now(); now.Sub(p.netTried) < 2*time.Second && p.netReason != "" {
		return nil, p.netReason
	} else {
		p.netTried = now
	}
	node, err := p.cfg.Client.CoreV1().Nodes().Get(ctx, p.cfg.NodeName, metaGet)
	switch {
	case err != nil:
		p.netReason = fmt.Sprintf("network is not ready: read node %s: %v", p.cfg.NodeName, err)
	case node.Spec.PodCIDR == "":
		p.netReason = fmt.Sprintf("network is not ready: node %s has no spec.podCIDR yet", p.cfg.NodeName)
	default:
		n, err := p.cfg.NewNetwork(node.Spec.PodCIDR)
		if err != nil {
			p.netReason = fmt.Sprintf("network is not ready: %v", err)
			break
		}
		p.net, p.netReason = n, ""
		p.log.Info("pod network ready", "podCIDR", node.Spec.PodCIDR)
		return p.net, ""
	}
	return nil, p.netReason
}

// worker returns the pod's worker, or nil.
func (p *Provider) worker(ns, name string) *podWorker {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pods[podKey(ns, name)]
}

// CreatePod starts a worker for the pod; it returns at once.
func (p *Provider) CreatePod(ctx context.Context, pod *corev1.Pod) error {
	if err := p.ensureLoaded(ctx); err != nil {
		return err
	}
	key := podKey(pod.Namespace, pod.Name)
	p.mu.Lock()
	if w, ok := p.pods[key]; ok && w.uid == pod.UID {
		p.mu.Unlock()
		w.setPod(pod)
		return nil
	} else if ok {
		p.mu.Unlock()
		return fmt.Errorf("create pod %s: a pod with UID %s still runs under that name", key, w.uid)
	}
	w := newPodWorker(p, pod, false)
	p.pods[key] = w
	p.mu.Unlock()
	w.start(p.ctx)
	return nil
}

// UpdatePod hands a pod's current spec to its worker: an image change
// restarts that container; a pod adopted after a restart gets its full
// spec this way.
func (p *Provider) UpdatePod(ctx context.Context, pod *corev1.Pod) error {
	if err := p.ensureLoaded(ctx); err != nil {
		return err
	}
	w := p.worker(pod.Namespace, pod.Name)
	if w == nil || w.uid != pod.UID {
		return p.CreatePod(ctx, pod)
	}
	w.setPod(pod)
	return nil
}

// GetPod returns the pod as it runs here, or nil.
func (p *Provider) GetPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	if err := p.ensureLoaded(ctx); err != nil {
		return nil, err
	}
	w := p.worker(ns, name)
	if w == nil {
		return nil, nil
	}
	return w.snapshot(), nil
}

// GetPodStatus returns the pod's last computed status, or nil.
func (p *Provider) GetPodStatus(ctx context.Context, ns, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, ns, name)
	if err != nil || pod == nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods lists the pods running here, those found in the runtime included.
func (p *Provider) GetPods(ctx context.Context) ([]*corev1.Pod, error) {
	if err := p.ensureLoaded(ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	workers := make([]*podWorker, 0, len(p.pods))
	for _, w := range p.pods {
		workers = append(workers, w)
	}
	p.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(workers))
	for _, w := range workers {
		out = append(out, w.snapshot())
	}
	return out, nil
}

// NotifyPods registers the callback that hears of every status change.
func (p *Provider) NotifyPods(_ context.Context, notify func(*corev1.Pod)) {
	p.mu.Lock()
	p.notify = notify
	p.mu.Unlock()
}

func (p *Provider) notifyPod(pod *corev1.Pod) {
	p.mu.Lock()
	notify := p.notify
	p.mu.Unlock()
	if notify != nil {
		notify(pod)
	}
}

// DeletePod stops the pod's containers in parallel, giving them the pod's
// grace period (preStop hooks first, sidecars last: stopContainers),
// removes them, its network and sandbox, and its files. It
// returns once all is gone; deleting a pod that is gone is not an error.
func (p *Provider) DeletePod(ctx context.Context, pod *corev1.Pod) error {
	_, err := p.DeletePodWithStatus(ctx, pod)
	return err
}

// DeletePodWithStatus is DeletePod that also returns the status the pod
// ended with: its containers' exit codes once stopped, and a terminal
// phase (nil for a pod this provider did not run).
func (p *Provider) DeletePodWithStatus(ctx context.Context, pod *corev1.Pod) (*corev1.PodStatus, error) {
	if err := p.ensureLoaded(ctx); err != nil {
		return nil, err
	}
	key := podKey(pod.Namespace, pod.Name)
	p.mu.Lock()
	w := p.pods[key]
	if w != nil && pod.UID != "" && w.uid != pod.UID {
		w = nil // another pod of that name; only pod.UID's leftovers go
	}
	p.mu.Unlock()
	uid := pod.UID
	var spec *corev1.Pod
	var final *corev1.PodStatus
	var stopped func(podObservation)
	if w != nil {
		w.stop()
		uid = w.uid
		spec = w.snapshot()
		stopped = func(obs podObservation) { final = w.finalStatus(obs) }
	}
	if spec == nil {
		spec = pod.DeepCopy()
	}
	if err := p.killPod(ctx, spec, uid, gracePeriod(pod, spec), stopped); err != nil {
		return nil, fmt.Errorf("delete pod %s: %w", key, err)
	}
	p.mu.Lock()
	if p.pods[key] == w && w != nil {
		delete(p.pods, key)
	}
	p.mu.Unlock()
	p.forgetBackOffs(spec, uid)
	return final, nil
}

// gracePeriod is how long a deleted pod's containers get: the deletion's
// grace period, else the spec's, else Kubernetes' default of 30s.
func gracePeriod(deleted, running *corev1.Pod) time.Duration {
	switch {
	case deleted.DeletionGracePeriodSeconds != nil:
		return time.Duration(max(*deleted.DeletionGracePeriodSeconds, 0)) * time.Second
	case deleted.Spec.TerminationGracePeriodSeconds != nil:
		return time.Duration(max(*deleted.Spec.TerminationGracePeriodSeconds, 0)) * time.Second
	case running != nil && running.Spec.TerminationGracePeriodSeconds != nil:
		return time.Duration(max(*running.Spec.TerminationGracePeriodSeconds, 0)) * time.Second
	}
	return corev1.DefaultTerminationGracePeriodSeconds * time.Second
}

// killPod stops and removes everything the runtime holds for pod uid,
// tears its network down and removes its files.
func (p *Provider) killPod(ctx context.Context, pod *corev1.Pod, uid types.UID, grace time.Duration, stopped func(podObservation)) error {
	all, err := p.list.get(ctx, p.rt, 0)
	if err != nil {
		return err
	}
	obs := observe(all, uid)
	var running []runtime.ContainerStatus
	for _, c := range obs.containers {
		if c.State == runtime.StateRunning {
			p.event(pod, c.Name, corev1.EventTypeNormal, "Killing", "Stopping container %s", c.Name)
			running = append(running, c)
		}
	}
	if err := p.stopContainers(ctx, pod, pod.Status.PodIP, running, grace); err != nil {
		return err
	}
	if stopped != nil {
		// What the containers ended with, before they are removed.
		p.list.invalidate()
		if all, err := p.list.get(ctx, p.rt, 0); err == nil {
			stopped(observe(all, uid))
		}
	}
	var errs []error
	for _, c := range obs.containers {
		if err := p.rt.RemoveContainer(ctx, c.ID); err != nil {
			errs = append(errs, err)
		}
	}
	ports := hostPorts(pod)
	for _, sb := range obs.sandboxes {
		if err := p.teardownNetwork(ctx, sb, ports); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := p.rt.RemoveSandbox(ctx, sb.ID); err != nil {
			errs = append(errs, err)
		}
	}
	p.list.invalidate()
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if uid != "" {
		p.releaseGlusterfs(uid)
		if err := p.unmountImageVolumes(ctx, uid); err != nil {
			// Removing the pod's directory would go into the image.
			return err
		}
		if err := p.unmountEmptyDirs(uid); err != nil {
			// Removing the files would empty the tmpfs, not free it.
			return err
		}
		if err := os.RemoveAll(p.podDir(uid)); err != nil {
			return err
		}
		if err := os.RemoveAll(p.podLogDir(pod.Namespace, pod.Name, uid)); err != nil {
			return err
		}
	}
	return nil
}

// teardownNetwork detaches a sandbox from the pod network (nothing for a
// hostNetwork sandbox or when there is no network).
func (p *Provider) teardownNetwork(ctx context.Context, sb runtime.ContainerStatus, ports []network.PortMapping) error {
	if sb.Labels[labelHostNetwork] == "true" {
		return nil
	}
	p.netMu.Lock()
	n := p.net
	p.netMu.Unlock()
	if n == nil {
		return nil
	}
	return n.Teardown(ctx, sb.ID, sb.NetNSPath, ports)
}

// forgetBackOffs drops a deleted pod's back-off entries, tokens and
// certificates.
func (p *Provider) forgetBackOffs(pod *corev1.Pod, uid types.UID) {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			p.crashBackOff.DeleteEntry(string(uid) + "/" + c.Name)
			p.pullBackOff.DeleteEntry(string(uid) + "/" + c.Image)
		}
	}
	p.crashBackOff.GC()
	p.pullBackOff.GC()
	p.sandboxBackOff.DeleteEntry(string(uid))
	p.files.tokens.forget(uid)
	if p.certs != nil {
		p.certs.Forget(uid)
	}
}

// podDir is where a pod's volumes and files live.
func (p *Provider) podDir(uid types.UID) string {
	return filepath.Join(p.cfg.RootDir, "pods", string(uid))
}

// podLogDir holds a pod's container logs, as /var/log/pods does.
func (p *Provider) podLogDir(ns, name string, uid types.UID) string {
	return filepath.Join(p.cfg.RootDir, "logs", ns+"_"+name+"_"+string(uid))
}

// logPath is one container instance's log file.
func (p *Provider) logPath(pod *corev1.Pod, container string, restart int) string {
	return filepath.Join(p.podLogDir(pod.Namespace, pod.Name, pod.UID), container, fmt.Sprintf("%d.log", restart))
}

// listCache shares one relist of the runtime among the pod workers.
type listCache struct {
	ttl time.Duration

	mu      sync.Mutex // held while listing
	all     []runtime.ContainerStatus
	started time.Time // when the cached list was asked of the runtime

	changedMu sync.Mutex
	changed   time.Time // the last invalidate
}

// get returns the runtime's containers. maxAge > 0 takes a list asked for
// at most maxAge ago (the cache's ttl when maxAge < 0); maxAge 0 takes one
// asked for after get was called, so that it shows what the caller just
// did, and callers that wait for the same relist share it. A list asked
// for before the last invalidate is never taken.
func (c *listCache) get(ctx context.Context, rt runtime.Runtime, maxAge time.Duration) ([]runtime.ContainerStatus, error) {
	called := time.Now()
	if maxAge < 0 {
		maxAge = c.ttl
	}
	c.changedMu.Lock()
	changed := c.changed
	c.changedMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.all != nil && c.started.After(changed) &&
		(c.started.After(called) || maxAge > 0 && time.Since(c.started) < maxAge) {
		return c.all, nil
	}
	started := time.Now()
	all, err := rt.ListContainers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	if all == nil {
		all = []runtime.ContainerStatus{}
	}
	c.all, c.started = all, started
	return all, nil
}

// invalidate makes the next get relist. It does not wait for a relist
// under way, which does not count as fresh.
func (c *listCache) invalidate() {
	c.changedMu.Lock()
	c.changed = time.Now()
	c.changedMu.Unlock()
}
