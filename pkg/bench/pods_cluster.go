package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minik8s/minik8s/pkg/controlplane"
	"github.com/minik8s/minik8s/pkg/image"
	"github.com/minik8s/minik8s/pkg/kubelet/network"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
	"github.com/minik8s/minik8s/pkg/node"
	"github.com/minik8s/minik8s/pkg/pki"
)

const (
	// podNodeIP is the bench node's address: its kubelet listens on the
	// loopback of its own network namespace, since the benchmark needs
	// neither logs nor exec from the apiserver.
	podNodeIP = "127.0.0.1"
	// podNamespace holds the measured pods, on a control plane of the
	// benchmark's own.
	podNamespace = "default"
	podAppLabel  = "app.kubernetes.io/name"
	podAppValue  = "minik8s-bench-pods"
)

// podCluster is an in-process control plane and one node in a network
// namespace of its own, on the machine's containerd. Each field is set once
// its part has started, so close undoes exactly what was done.
type podCluster struct {
	nodeName, netnsName string
	netnsPath           string
	dataDir, rootDir    string
	stopCP              func() error
	client              kubernetes.Interface
	bundle              *pki.Bundle // the control plane's CA
	nodeCancel          context.CancelFunc
	nodeDone            chan error
	stopInformers       context.CancelFunc
	pods                cache.SharedIndexInformer
	tracker             *podTracker
}

func randomID() (string, error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// startPodCluster starts the control plane, then the node, and returns
// once the node is Ready with a pod CIDR. The node's root dir is made in
// nodeDirParent (default: the temporary directory).
func startPodCluster(ctx context.Context, containerdAddress, id, nodeDirParent string, log *slog.Logger) (_ *podCluster, err error) {
	c := &podCluster{nodeName: "bench-" + id, netnsName: "mk8s-bench-" + id, tracker: newPodTracker()}
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer cancel()
			err = errors.Join(err, c.close(cctx, nil))
		}
	}()
	if c.dataDir, err = os.MkdirTemp("", "minik8s-bench-pods-cp-"); err != nil {
		return c, err
	}
	if c.rootDir, err = os.MkdirTemp(nodeDirParent, "minik8s-bench-node-"); err != nil {
		return c, err
	}
	cp, stop, err := controlplane.Start(ctx, controlplane.Config{
		DataDir: c.dataDir, BindAddress: "127.0.0.1", Port: 0, Logger: log.With("component", "control-plane"),
	})
	if err != nil {
		return c, fmt.Errorf("in-process %w", err)
	}
	c.stopCP = stop
	c.bundle = cp.Bundle
	rc, err := clientcmd.BuildConfigFromFlags("", cp.KubeconfigPath)
	if err != nil {
		return c, fmt.Errorf("kubeconfig: %w", err)
	}
	if c.client, err = kubernetes.NewForConfig(clientConfig(rc)); err != nil {
		return c, err
	}

	if c.netnsPath, err = network.CreateNamedNetNS(network.DefaultNetNSDir, c.netnsName); err != nil {
		return c, err
	}
	certPEM, keyPEM, err := cp.Bundle.IssueClientCert("system:node:"+c.nodeName, []string{"system:nodes"}, 0)
	if err != nil {
		return c, fmt.Errorf("node certificate: %w", err)
	}
	nodeCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.nodeCancel, c.nodeDone = cancel, make(chan error, 1)
	nodeCfg := node.Config{
		NodeName: c.nodeName, NodeIP: podNodeIP,
		REST: &rest.Config{Host: cp.URL, QPS: 50, Burst: 100,
			TLSClientConfig: rest.TLSClientConfig{CAData: cp.Bundle.CAPEM, CertData: certPEM, KeyData: keyPEM}},
		ClientCA: cp.Bundle.CAPool, ContainerdAddress: containerdAddress,
		ClusterCIDR: controlplane.DefaultClusterCIDR, RootDir: c.rootDir,
		KubeletAddress: podNodeIP + ":10250", HostNetNS: c.netnsPath,
		Logger: log.With("node", c.nodeName),
	}
	go func() { c.nodeDone <- node.Run(nodeCtx, nodeCfg) }()

	// One watch on the pods of the namespace (where the latencies are
	// read) and one on the bench node.
	infCtx, stopInformers := context.WithCancel(context.WithoutCancel(ctx))
	c.stopInformers = stopInformers
	factory := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(podNamespace))
	c.pods = factory.Core().V1().Pods().Informer()
	nodes := factory.Core().V1().Nodes().Informer()
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    c.tracker.observe,
		UpdateFunc: func(_, obj any) { c.tracker.observe(obj) },
		DeleteFunc: c.tracker.observe,
	}
	if _, err := c.pods.AddEventHandler(handler); err != nil {
		return c, err
	}
	if _, err := nodes.AddEventHandler(handler); err != nil {
		return c, err
	}
	factory.Start(infCtx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.pods.HasSynced, nodes.HasSynced) {
		return c, fmt.Errorf("pod and node watches: %w", context.Cause(ctx))
	}
	err = c.waitUntil(ctx, 2*time.Minute, func() bool {
		obj, ok, _ := nodes.GetStore().GetByKey(c.nodeName)
		n, _ := obj.(*corev1.Node)
		return ok && n.Spec.PodCIDR != "" && nodeIsReady(n)
	})
	if err != nil {
		return c, fmt.Errorf("node %s Ready with a pod CIDR: %w", c.nodeName, err)
	}
	return c, nil
}

// waitUntil waits, on the watches' events, until cond holds; it fails
// early when the node stops.
func (c *podCluster) waitUntil(ctx context.Context, timeout time.Duration, cond func() bool) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for !cond() {
		select {
		case <-c.tracker.changed:
		case err := <-c.nodeDone:
			c.nodeDone <- err // for close
			return fmt.Errorf("node stopped: %v", err)
		case <-timer.C:
			return fmt.Errorf("not after %s", timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// measure starts one warm-up pod, then cfg.Pods pods, cfg.Concurrency at a
// time, each timed from its Create call to the watch event that shows it
// Running and Ready.
func (c *podCluster) measure(ctx context.Context, cfg PodsConfig) (LatencyRow, error) {
	start := func(ctx context.Context, name string) (time.Duration, error) {
		ready := c.tracker.expect(name)
		t0 := time.Now()
		if _, err := c.client.CoreV1().Pods(podNamespace).Create(ctx, benchPod(name, cfg.Image), metav1.CreateOptions{}); err != nil {
			c.tracker.forget(name)
			return 0, fmt.Errorf("create pod %s: %w", name, err)
		}
		timer := time.NewTimer(cfg.PodTimeout)
		defer timer.Stop()
		select {
		case o := <-ready:
			if o.err != nil {
				return 0, fmt.Errorf("pod %s: %w", name, o.err)
			}
			return o.at.Sub(t0), nil
		case <-timer.C:
			c.tracker.forget(name)
			return 0, fmt.Errorf("pod %s not Running and Ready %s after its creation: %s", name, cfg.PodTimeout, c.describe(name))
		case <-ctx.Done():
			c.tracker.forget(name)
			return 0, ctx.Err()
		}
	}
	d, err := start(ctx, "bench-warm-up")
	if err != nil {
		return LatencyRow{}, fmt.Errorf("warm-up: %w", err)
	}
	fmt.Fprintf(cfg.Progress, "warm-up pod Running and Ready in %s (not counted)\n", formatLatency(ms(d)))
	var done sync.Mutex
	n := 0
	lat, elapsed, err := timeConcurrent(ctx, cfg.Pods, cfg.Concurrency, func(ctx context.Context, i int) (time.Duration, error) {
		name := fmt.Sprintf("bench-%03d", i)
		d, err := start(ctx, name)
		if err == nil {
			done.Lock()
			n++
			fmt.Fprintf(cfg.Progress, "pod %d/%d %s Running and Ready in %s\n", n, cfg.Pods, name, formatLatency(ms(d)))
			done.Unlock()
		}
		return d, err
	})
	if err != nil {
		return LatencyRow{}, err
	}
	return latencyRow(RowPods, lat, cfg.Concurrency, elapsed), nil
}

func benchPod(name, img string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{podAppLabel: podAppValue}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "sleep", Image: img, Command: podCommand, ImagePullPolicy: corev1.PullIfNotPresent,
			}},
		},
	}
}

// describe is the pod's last status the watch saw, for error messages.
func (c *podCluster) describe(name string) string {
	obj, ok, _ := c.pods.GetStore().GetByKey(podNamespace + "/" + name)
	p, _ := obj.(*corev1.Pod)
	if !ok || p == nil {
		return "never seen by the watch"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase %q node %q", p.Status.Phase, p.Spec.NodeName)
	for _, cond := range p.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s", cond.Type, cond.Status)
		if cond.Reason != "" || cond.Message != "" {
			fmt.Fprintf(&b, "(%s %s)", cond.Reason, cond.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			fmt.Fprintf(&b, "; %s waiting: %s %s", cs.Name, w.Reason, w.Message)
		}
	}
	return b.String()
}

// close deletes the pods and waits until the kubelet has removed them,
// stops the node and the control plane, removes the network namespace and
// the directories, and checks that containerd holds nothing of the node's
// (removing what it finds, and saying so). client may be nil when the
// cluster never ran a pod.
func (c *podCluster) close(ctx context.Context, client *containerd.Client) error {
	var errs []error
	if c.client != nil && c.pods != nil && c.pods.HasSynced() {
		grace := int64(1) // sleep, PID 1, ignores SIGTERM: killed after 1s
		err := c.client.CoreV1().Pods(podNamespace).DeleteCollection(ctx,
			metav1.DeleteOptions{GracePeriodSeconds: &grace},
			metav1.ListOptions{LabelSelector: podAppLabel + "=" + podAppValue})
		if err != nil {
			errs = append(errs, fmt.Errorf("delete the pods: %w", err))
		} else if err := c.waitUntil(ctx, 2*time.Minute, func() bool { return len(c.pods.GetStore().ListKeys()) == 0 }); err != nil {
			errs = append(errs, fmt.Errorf("pods removed by the kubelet: %w", err))
		}
	}
	if client != nil && c.nodeDone != nil {
		// The kubelet removes the containers as it finishes each pod.
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if ids, err := nodeContainers(ctx, client, c.nodeName); err != nil || len(ids) == 0 {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	if c.stopInformers != nil {
		c.stopInformers()
	}
	if c.nodeCancel != nil {
		c.nodeCancel()
		select {
		case err := <-c.nodeDone:
			if err != nil && !errors.Is(err, context.Canceled) {
				errs = append(errs, fmt.Errorf("node %s: %w", c.nodeName, err))
			}
		case <-time.After(30 * time.Second):
			errs = append(errs, fmt.Errorf("node %s did not stop in 30s", c.nodeName))
		}
	}
	if client != nil && c.nodeDone != nil {
		if left, err := removeNodeContainers(ctx, client, c.nodeName); err != nil {
			errs = append(errs, err)
		} else if len(left) > 0 {
			errs = append(errs, fmt.Errorf("containers the kubelet left behind (removed now): %s", strings.Join(left, ", ")))
		}
	}
	if c.stopCP != nil {
		if err := c.stopCP(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.netnsPath != "" {
		if err := network.RemoveNamedNetNS(network.DefaultNetNSDir, c.netnsName); err != nil {
			errs = append(errs, err)
		}
	}
	for _, dir := range []string{c.dataDir, c.rootDir} {
		if dir != "" {
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// nodeContainers lists the containerd containers labelled with the node.
func nodeContainers(ctx context.Context, client *containerd.Client, nodeName string) ([]containerd.Container, error) {
	ctx = namespaces.WithNamespace(ctx, image.Namespace)
	return client.Containers(ctx, fmt.Sprintf("labels.%q==%q", runtime.LabelNode, nodeName))
}

// removeNodeContainers removes whatever containers of the node are left
// and returns their names.
func removeNodeContainers(ctx context.Context, client *containerd.Client, nodeName string) ([]string, error) {
	cs, err := nodeContainers(ctx, client, nodeName)
	if err != nil {
		return nil, fmt.Errorf("list the node's containers: %w", err)
	}
	ctx = namespaces.WithNamespace(ctx, image.Namespace)
	var left []string
	var errs []error
	for _, ct := range cs {
		labels, _ := ct.Labels(ctx)
		left = append(left, labels[runtime.LabelPodName]+"/"+ct.ID())
		errs = append(errs, removeContainer(ctx, ct))
	}
	return left, errors.Join(errs...)
}

// podOutcome is how a pod's start ended: Running and Ready at a time, or
// failed.
type podOutcome struct {
	at  time.Time
	err error
}

// podTracker turns watch events into outcomes for the pods being waited
// on, timed when the event arrives, and pokes changed on every event.
type podTracker struct {
	mu      sync.Mutex
	waiting map[string]chan podOutcome
	changed chan struct{}
}

func newPodTracker() *podTracker {
	return &podTracker{waiting: map[string]chan podOutcome{}, changed: make(chan struct{}, 1)}
}

// expect registers a pod before it is created, so no event is missed.
func (t *podTracker) expect(name string) <-chan podOutcome {
	ch := make(chan podOutcome, 1)
	t.mu.Lock()
	t.waiting[name] = ch
	t.mu.Unlock()
	return ch
}

func (t *podTracker) forget(name string) {
	t.mu.Lock()
	delete(t.waiting, name)
	t.mu.Unlock()
}

func (t *podTracker) observe(obj any) {
	now := time.Now()
	select {
	case t.changed <- struct{}{}:
	default:
	}
	p, ok := obj.(*corev1.Pod)
	if !ok || p.DeletionTimestamp != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ch := t.waiting[p.Name]
	if ch == nil {
		return
	}
	var o podOutcome
	switch {
	case podRunningReady(p):
		o.at = now
	case podStartFailure(p) != "":
		o.err = errors.New(podStartFailure(p))
	default:
		return
	}
	ch <- o
	delete(t.waiting, p.Name)
}

func podRunningReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// startFailureReasons are the waiting reasons after which a pod will not
// start without a change.
var startFailureReasons = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true, "InvalidImageName": true,
	"CreateContainerError": true, "CreateContainerConfigError": true, "RunContainerError": true, "CrashLoopBackOff": true,
}

// podStartFailure says why the pod will not get to Running, or "".
func podStartFailure(p *corev1.Pod) string {
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return fmt.Sprintf("phase %s: %s", p.Status.Phase, p.Status.Message)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && startFailureReasons[w.Reason] {
			return fmt.Sprintf("container %s: %s: %s", cs.Name, w.Reason, w.Message)
		}
		if term := cs.State.Terminated; term != nil {
			return fmt.Sprintf("container %s exited with %d (%s)", cs.Name, term.ExitCode, term.Reason)
		}
	}
	return ""
}

func nodeIsReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
