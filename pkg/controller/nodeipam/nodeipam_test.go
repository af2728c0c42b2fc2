package nodeipam_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/nodeipam"
	"github.com/minik8s/minik8s/pkg/controlplane"
)

// startControlPlane runs an apiserver on embedded etcd for the test.
func startControlPlane(t *testing.T) kubernetes.Interface {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cp, stop, err := controlplane.Start(ctx, controlplane.Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1", DisableControllers: []string{"nodeipam"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("stop control plane: %v", err)
		}
	})
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// runController starts a node IPAM controller; the returned func stops
// it and waits until it has.
func runController(t *testing.T, client kubernetes.Interface, cfg nodeipam.Config) (stop func()) {
	t.Helper()
	kc := kit.NewContext(client)
	kc.Logger = slog.New(slog.DiscardHandler)
	c, err := nodeipam.New(kc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- kit.Run(ctx, kc, kit.Part{Name: "nodeipam", Start: c.Start}) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("controller: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

func createNodes(t *testing.T, client kubernetes.Interface, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := client.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// waitCIDRs waits until every named node has a pod CIDR and returns them.
func waitCIDRs(t *testing.T, client kubernetes.Interface, names ...string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			node, err := client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if node.Spec.PodCIDR == "" {
				return false, nil
			}
			if len(node.Spec.PodCIDRs) != 1 || node.Spec.PodCIDRs[0] != node.Spec.PodCIDR {
				return false, fmt.Errorf("node %s: podCIDRs %v, want [%s]", n, node.Spec.PodCIDRs, node.Spec.PodCIDR)
			}
			got[n] = node.Spec.PodCIDR
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("pod CIDRs of %v: %v (so far %v)", names, err, got)
	}
	return got
}

// assertDistinct checks that the CIDRs are distinct /size subnets of cluster.
func assertDistinct(t *testing.T, cidrs map[string]string, cluster string, size int) {
	t.Helper()
	c := netip.MustParsePrefix(cluster)
	seen := map[string]string{}
	for node, cidr := range cidrs {
		p, err := netip.ParsePrefix(cidr)
		if err != nil || p.Bits() != size || p != p.Masked() || !c.Contains(p.Addr()) {
			t.Errorf("node %s got %s, want a /%d in %s", node, cidr, size, cluster)
		}
		if other, dup := seen[cidr]; dup {
			t.Errorf("nodes %s and %s both got %s", node, other, cidr)
		}
		seen[cidr] = node
	}
}

func TestAssignsDistinctCIDRsAndSurvivesRestart(t *testing.T) {
	client := startControlPlane(t)
	cfg := nodeipam.Config{ClusterCIDR: "10.244.0.0/16", NodeMaskSize: 24}
	stop := runController(t, client, cfg)

	createNodes(t, client, "node-1", "node-2", "node-3")
	first := waitCIDRs(t, client, "node-1", "node-2", "node-3")
	assertDistinct(t, first, "10.244.0.0/16", 24)

	// Restart; a node joins while no controller runs.
	stop()
	createNodes(t, client, "node-4")
	runController(t, client, cfg)
	all := waitCIDRs(t, client, "node-1", "node-2", "node-3", "node-4")
	for n, cidr := range first {
		if all[n] != cidr {
			t.Errorf("node %s: pod CIDR %s became %s after restart", n, cidr, all[n])
		}
	}
	assertDistinct(t, all, "10.244.0.0/16", 24)
}

func TestReleasesOnDeleteAndReportsExhaustion(t *testing.T) {
	client := startControlPlane(t)
	ctx := context.Background()
	// Two /24s only; one is already set by hand on a node.
	createNodes(t, client, "manual")
	manual, err := client.CoreV1().Nodes().Get(ctx, "manual", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	manual.Spec.PodCIDR, manual.Spec.PodCIDRs = "10.245.1.0/24", []string{"10.245.1.0/24"}
	if _, err := client.CoreV1().Nodes().Update(ctx, manual, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	runController(t, client, nodeipam.Config{ClusterCIDR: "10.245.0.0/23", NodeMaskSize: 24})

	createNodes(t, client, "a")
	if got := waitCIDRs(t, client, "a")["a"]; got != "10.245.0.0/24" {
		t.Fatalf("node a got %s, want the one free /24, 10.245.0.0/24", got)
	}
	createNodes(t, client, "b")
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("reason", nodeipam.ReasonCIDRNotAvailable).String()})
		if err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			if ev.InvolvedObject.Kind == "Node" && ev.InvolvedObject.Name == "b" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event for node b: %v", nodeipam.ReasonCIDRNotAvailable, err)
	}
	if b, _ := client.CoreV1().Nodes().Get(ctx, "b", metav1.GetOptions{}); b.Spec.PodCIDR != "" {
		t.Fatalf("node b got %s from a full range", b.Spec.PodCIDR)
	}

	// Node a goes: b gets its subnet, promptly.
	if err := client.CoreV1().Nodes().Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := waitCIDRs(t, client, "b")["b"]; got != "10.245.0.0/24" {
		t.Errorf("node b got %s, want a's freed 10.245.0.0/24", got)
	}
}
