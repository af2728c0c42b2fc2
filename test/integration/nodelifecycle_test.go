package integration

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/nodelifecycle"
	"github.com/minik8s/minik8s/pkg/kubelet"
	"github.com/minik8s/minik8s/pkg/kubelet/simulated"
)

// nlNode is a simulated node whose kubelet can be stopped and started
// again; the provider, and so the pods it runs, outlives the kubelet.
type nlNode struct {
	name     string
	client   kubernetes.Interface
	provider *simulated.Provider
	cancel   context.CancelFunc
	done     chan struct{}
}

// nlStartNodes joins n simulated nodes, nl-0 to nl-<n-1>, whose kubelets
// heartbeat every 500ms and post node status every second.
func nlStartNodes(t *testing.T, c *cluster, n int) []*nlNode {
	t.Helper()
	client := kubernetes.NewForConfigOrDie(c.config)
	var nodes []*nlNode
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("nl-%d", i)
		p, err := simulated.New(simulated.Config{NodeName: name, NodeIP: fmt.Sprintf("172.31.1.%d", i+1), PodCIDR: fmt.Sprintf("10.244.%d.0/24", 100+i)})
		if err != nil {
			t.Fatal(err)
		}
		node := &nlNode{name: name, client: client, provider: p}
		node.start(t)
		t.Cleanup(node.stop)
		nodes = append(nodes, node)
	}
	return nodes
}

func (n *nlNode) start(t *testing.T) {
	t.Helper()
	k, err := kubelet.New(kubelet.Config{Client: n.client, NodeName: n.name, Provider: n.provider,
		HeartbeatInterval: 500 * time.Millisecond, NodeStatusInterval: time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done = cancel, make(chan struct{})
	go func() {
		defer close(n.done)
		_ = k.Start(ctx)
	}()
}

// stop stops the kubelet (its pods keep running in the provider) and
// waits until it has.
func (n *nlNode) stop() {
	if n.cancel == nil {
		return
	}
	n.cancel()
	<-n.done
	n.cancel = nil
}

// startNodeLifecycle runs the controller with a short grace period.
func startNodeLifecycle(t *testing.T, c *cluster, grace time.Duration) {
	t.Helper()
	kc := kit.NewContext(c.client)
	kc.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctrl, err := nodelifecycle.New(kc, nodelifecycle.Config{
		NodeMonitorPeriod: 500 * time.Millisecond, NodeMonitorGracePeriod: grace, NodeStartupGracePeriod: grace,
	})
	if err != nil {
		t.Fatal(err)
	}
	runControllers(t, kc, kit.Part{Name: "nodelifecycle", Start: ctrl.Start})
}

func nodeCondition(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// controllerTaints are the node's taints with the given key, as
// "key:Effect", each checked to carry timeAdded.
func controllerTaints(t *testing.T, n *corev1.Node, key string) []string {
	var out []string
	for _, taint := range n.Spec.Taints {
		if taint.Key != key {
			continue
		}
		if taint.TimeAdded == nil {
			t.Errorf("taint %s has no timeAdded", taint.ToString())
		}
		out = append(out, taint.Key+":"+string(taint.Effect))
	}
	slices.Sort(out)
	return out
}

func hasEvent(ctx context.Context, c *cluster, reason, message string) bool {
	events, err := c.client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, e := range events.Items {
		if e.Reason == reason && e.Message == message {
			return true
		}
	}
	return false
}

func TestNodeLifecycle(t *testing.T) {
	c := startClusterWith(t, withoutControllers("nodelifecycle"))
	ctx := ctxT(t)
	nodes := nlStartNodes(t, c, 2)
	startNodeLifecycle(t, c, 3*time.Second)

	waitFor(t, "2 Ready nodes", func(ctx context.Context) (bool, error) {
		list, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 2 {
			return false, err
		}
		for _, n := range list.Items {
			if !nodeReady(&n) || len(n.Spec.Taints) > 0 {
				return false, nil
			}
		}
		return true, nil
	})

	// Pods bound to nl-0: "fast" tolerates the node being unreachable
	// for 2s, "slow" for the default 300s, "forever" without a limit.
	pods := c.client.CoreV1().Pods("default")
	tolerate := func(seconds *int64) []corev1.Toleration {
		var out []corev1.Toleration
		for _, key := range []string{corev1.TaintNodeUnreachable, corev1.TaintNodeNotReady} {
			out = append(out, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds})
		}
		return out
	}
	for name, tolerations := range map[string][]corev1.Toleration{"fast": tolerate(ptr.To[int64](2)), "slow": nil, "forever": tolerate(nil)} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{NodeName: "nl-0", Tolerations: tolerations, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	slow, err := pods.Get(ctx, "slow", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(slow.Spec.Tolerations, func(tol corev1.Toleration) bool {
		return tol.Key == corev1.TaintNodeUnreachable && tol.TolerationSeconds != nil && *tol.TolerationSeconds == 300
	}) {
		t.Fatalf("slow has no default 300s unreachable toleration: %+v", slow.Spec.Tolerations)
	}
	waitFor(t, "3 pods Running and Ready on nl-0", func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=nl-0"})
		if err != nil || len(list.Items) != 3 {
			return false, err
		}
		for _, p := range list.Items {
			if p.Status.Phase != corev1.PodRunning || !podReady(&p) {
				return false, nil
			}
		}
		return true, nil
	})

	// nl-0's kubelet stops: its heartbeats stop with it.
	nodes[0].stop()
	stopped := time.Now()
	waitFor(t, "nl-0 Unknown and tainted unreachable", func(ctx context.Context) (bool, error) {
		n, err := c.client.CoreV1().Nodes().Get(ctx, "nl-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, ct := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
			cond := nodeCondition(n, ct)
			if cond == nil || cond.Status != corev1.ConditionUnknown || cond.Reason != "NodeStatusUnknown" || cond.Message != "Kubelet stopped posting node status." {
				return false, nil
			}
		}
		return slices.Equal(controllerTaints(t, n, corev1.TaintNodeUnreachable),
			[]string{"node.kubernetes.io/unreachable:NoExecute", "node.kubernetes.io/unreachable:NoSchedule"}), nil
	})
	if d := time.Since(stopped); d < 2*time.Second {
		t.Errorf("nl-0 marked Unknown %v after its kubelet stopped, before the 3s grace period", d)
	}
	waitFor(t, "the NodeNotReady event", func(ctx context.Context) (bool, error) {
		return hasEvent(ctx, c, "NodeNotReady", "Node nl-0 status is now: NodeNotReady"), nil
	})
	waitFor(t, "nl-0's pods to be not Ready", func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=nl-0"})
		if err != nil {
			return false, err
		}
		for _, p := range list.Items {
			if podReady(&p) {
				return false, nil
			}
		}
		return true, nil
	})

	// "fast" is evicted once its 2s are up; it stays Terminating, since
	// only its kubelet can say its containers stopped.
	waitFor(t, "fast to be evicted", func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, "fast", metav1.GetOptions{})
		return err == nil && p.DeletionTimestamp != nil, nil
	})
	waitFor(t, "the TaintManagerEviction event", func(ctx context.Context) (bool, error) {
		return hasEvent(ctx, c, "TaintManagerEviction", "Marking for deletion Pod default/fast"), nil
	})
	time.Sleep(2 * time.Second)
	for _, name := range []string{"slow", "forever"} {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			t.Errorf("%s evicted early: %v %+v", name, err, p.ObjectMeta)
		}
	}
	n1, err := c.client.CoreV1().Nodes().Get(ctx, "nl-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !nodeReady(n1) || len(n1.Spec.Taints) > 0 {
		t.Errorf("nl-1 = Ready %v, taints %v; want a healthy node", nodeReady(n1), n1.Spec.Taints)
	}

	// The kubelet comes back: the taints go, the evicted pod's containers
	// stop and its object goes, the others run on.
	nodes[0].start(t)
	waitFor(t, "nl-0 Ready without taints", func(ctx context.Context) (bool, error) {
		n, err := c.client.CoreV1().Nodes().Get(ctx, "nl-0", metav1.GetOptions{})
		return err == nil && nodeReady(n) && len(n.Spec.Taints) == 0, err
	})
	waitFor(t, "fast to be gone", func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, "fast", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if running, _ := nodes[0].provider.GetPod(ctx, "default", "fast"); running != nil {
		t.Error("the returning kubelet left the evicted pod running")
	}
	for _, name := range []string{"slow", "forever"} {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			t.Errorf("%s after recovery: %v %+v", name, err, p.Status.Phase)
		}
	}
}

// TestNodeLifecycleNoExecuteTaint: a NoExecute taint someone puts on a
// healthy node evicts the pods that do not tolerate it, and stays.
func TestNodeLifecycleNoExecuteTaint(t *testing.T) {
	c := startClusterWith(t, withoutControllers("nodelifecycle"))
	ctx := ctxT(t)
	nlStartNodes(t, c, 1)
	startNodeLifecycle(t, c, 3*time.Second)
	waitFor(t, "nl-0 Ready", func(ctx context.Context) (bool, error) {
		n, err := c.client.CoreV1().Nodes().Get(ctx, "nl-0", metav1.GetOptions{})
		return err == nil && nodeReady(n), nil
	})
	pods := c.client.CoreV1().Pods("default")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{NodeName: "nl-0", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "p Running", func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, "p", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	})
	n, err := c.client.CoreV1().Nodes().Get(ctx, "nl-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoExecute})
	if _, err := c.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The kubelet is alive here: it finishes the deletion itself.
	waitFor(t, "p to be evicted and gone", func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, "p", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	n, err = c.client.CoreV1().Nodes().Get(ctx, "nl-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "example.com/maintenance" }) {
		t.Errorf("the controller removed a taint it does not own: %v", n.Spec.Taints)
	}
}
