package integration

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/minik8s/minik8s/pkg/kubelet"
	"github.com/minik8s/minik8s/pkg/kubelet/simulated"
)

// startSimulatedNodes joins n simulated nodes to the cluster.
func startSimulatedNodes(t *testing.T, c *cluster, n int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	client := kubernetes.NewForConfigOrDie(c.config)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("sim-%d", i)
		p, err := simulated.New(simulated.Config{NodeName: name, NodeIP: fmt.Sprintf("172.31.0.%d", i+1), PodCIDR: fmt.Sprintf("10.244.%d.0/24", i)})
		if err != nil {
			t.Fatal(err)
		}
		k, err := kubelet.New(kubelet.Config{Client: client, NodeName: name, Provider: p, HeartbeatInterval: time.Second,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = k.Start(ctx) }()
	}
}

func waitFor(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func TestSimulatedNodesRunScheduledPods(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 3)

	waitFor(t, "3 Ready nodes with leases", func(ctx context.Context) (bool, error) {
		nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(nodes.Items) != 3 {
			return false, err
		}
		for _, n := range nodes.Items {
			if !nodeReady(&n) || n.Status.Allocatable.Cpu().IsZero() {
				return false, nil
			}
			if _, err := c.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.Name, metav1.GetOptions{}); err != nil {
				return false, nil
			}
		}
		return true, nil
	})

	pods := c.client.CoreV1().Pods("default")
	// Each simulated node has 32 CPUs, so requests of 12 fit two pods a
	// node: six pods must land on all three. (Small pods may share a node:
	// scores round to the same integer, as in Kubernetes.)
	big := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("12")}}
	for i := 0; i < 6; i++ {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: big}}}}
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	done := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "batch", Annotations: map[string]string{simulated.AnnotationExitAfter: "200ms"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := pods.Create(ctx, done, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "6 pods Running with IPs on 3 nodes", func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running"})
		if err != nil || len(list.Items) != 6 {
			return false, err
		}
		nodes := map[string]bool{}
		for _, p := range list.Items {
			if p.Status.PodIP == "" || p.Spec.NodeName == "" || !podReady(&p) {
				return false, nil
			}
			nodes[p.Spec.NodeName] = true
		}
		return len(nodes) == 3, nil
	})
	waitFor(t, "the batch pod to succeed", func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, "batch", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodSucceeded, err
	})

	// Deleting a running pod: the kubelet stops it, then removes the object.
	if err := pods.Delete(ctx, "p0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "p0 to disappear", func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, "p0", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// An extended resource advertised by patching a node's status (as one
// does without a device plugin) survives the kubelet's status writes.
func TestKubeletKeepsAdvertisedExtendedResources(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	runCtx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p, err := simulated.New(simulated.Config{NodeName: "dongles", NodeIP: "172.31.1.1", PodCIDR: "10.244.100.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := kubelet.New(kubelet.Config{Client: kubernetes.NewForConfigOrDie(c.config), NodeName: "dongles", Provider: p,
		HeartbeatInterval: 200 * time.Millisecond, NodeStatusInterval: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = k.Start(runCtx) }()
	nodes := c.client.CoreV1().Nodes()
	waitFor(t, "the node to register", func(ctx context.Context) (bool, error) {
		n, err := nodes.Get(ctx, "dongles", metav1.GetOptions{})
		return err == nil && nodeReady(n), nil
	})
	patch := []byte(`{"status":{"capacity":{"example.com/dongle":"4"}}}`)
	patched, err := nodes.PatchStatus(ctx, "dongles", patch)
	if err != nil {
		t.Fatal(err)
	}
	// Two status writes later the resource must still be there.
	writes := 0
	last := patched.ResourceVersion
	waitFor(t, "two kubelet status writes", func(ctx context.Context) (bool, error) {
		n, err := nodes.Get(ctx, "dongles", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if n.ResourceVersion != last {
			last = n.ResourceVersion
			writes++
			if q, ok := n.Status.Capacity["example.com/dongle"]; !ok || q.Value() != 4 {
				t.Fatalf("after a kubelet status write the capacity is %v, want example.com/dongle: 4 kept", n.Status.Capacity)
			}
		}
		return writes >= 2, nil
	})
}
