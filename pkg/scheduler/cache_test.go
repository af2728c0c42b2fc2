package scheduler

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func snapshotOf(t *testing.T, c *nodeCache, s *snapshot) map[string]*NodeInfo {
	t.Helper()
	out := map[string]*NodeInfo{}
	for _, ni := range c.updateSnapshot(s) {
		out[ni.Node.Name] = ni
	}
	return out
}

func TestCacheAssumeConfirmForget(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	c := newNodeCache(clk, 30*time.Second)
	c.addNode(node("a", "4", "8Gi", 10))
	var s snapshot

	p := pod("p", "1", "1Gi", onNode("a"))
	if err := c.assume(NewPodInfo(p)); err != nil {
		t.Fatal(err)
	}
	if err := c.assume(NewPodInfo(p)); err == nil {
		t.Error("assuming a pod twice succeeded")
	}
	if got := snapshotOf(t, c, &s)["a"]; got.Requested.MilliCPU != 1000 || len(got.Pods) != 1 {
		t.Fatalf("assumed: requested %dm, %d pods; want 1000m, 1", got.Requested.MilliCPU, len(got.Pods))
	}
	// The informer confirms: counted once, not twice.
	c.addOrUpdatePod(p)
	if got := snapshotOf(t, c, &s)["a"]; got.Requested.MilliCPU != 1000 || len(got.Pods) != 1 {
		t.Fatalf("confirmed: requested %dm, %d pods; want 1000m, 1", got.Requested.MilliCPU, len(got.Pods))
	}
	// A confirmed pod is not forgotten, nor expired.
	c.forget("default/p")
	c.finishBinding("default/p")
	clk.Step(time.Hour)
	c.expire()
	if !c.counted("default/p") {
		t.Fatal("confirmed pod dropped by forget or expire")
	}
	c.removePod("default/p")
	if got := snapshotOf(t, c, &s)["a"]; got.Requested.MilliCPU != 0 || len(got.Pods) != 0 {
		t.Fatalf("deleted: requested %dm, %d pods; want 0", got.Requested.MilliCPU, len(got.Pods))
	}

	// A failed binding forgets the assumed pod.
	q := pod("q", "2", "1Gi", onNode("a"))
	_ = c.assume(NewPodInfo(q))
	c.forget("default/q")
	if c.counted("default/q") {
		t.Error("forgotten pod still counted")
	}
}

func TestCacheExpiresUnconfirmedAssumedPods(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	c := newNodeCache(clk, 30*time.Second)
	c.addNode(node("a", "4", "8Gi", 10))
	_ = c.assume(NewPodInfo(pod("p", "1", "1Gi", onNode("a"))))
	clk.Step(time.Hour)
	if n := c.expire(); n != 0 {
		t.Fatalf("expired %d pods still binding", n)
	}
	c.finishBinding("default/p")
	clk.Step(29 * time.Second)
	if n := c.expire(); n != 0 {
		t.Fatalf("expired %d pods before their deadline", n)
	}
	clk.Step(2 * time.Second)
	if n := c.expire(); n != 1 {
		t.Fatalf("expired %d pods, want 1", n)
	}
	if c.counted("default/p") {
		t.Error("expired pod still counted")
	}
}

func TestCacheNodesAndSnapshot(t *testing.T) {
	c := newNodeCache(clocktesting.NewFakeClock(time.Now()), time.Minute)
	var s snapshot
	// A pod seen before its node counts once the node arrives.
	c.addOrUpdatePod(pod("early", "1", "", onNode("b")))
	if got := snapshotOf(t, c, &s); len(got) != 0 {
		t.Fatalf("snapshot has %d nodes before any node exists", len(got))
	}
	c.addNode(node("a", "4", "8Gi", 10))
	c.addNode(node("b", "4", "8Gi", 10))
	got := snapshotOf(t, c, &s)
	if len(got) != 2 || got["b"].Requested.MilliCPU != 1000 {
		t.Fatalf("snapshot = %v nodes, b requested %dm; want 2 nodes, 1000m", len(got), got["b"].Requested.MilliCPU)
	}
	// Only changed nodes are copied again.
	a1, b1 := got["a"], got["b"]
	c.addOrUpdatePod(pod("p", "1", "", onNode("b")))
	got = snapshotOf(t, c, &s)
	if got["a"] != a1 {
		t.Error("unchanged node a was copied again")
	}
	if got["b"] == b1 || got["b"].Requested.MilliCPU != 2000 || b1.Requested.MilliCPU != 1000 {
		t.Error("changed node b was not copied, or the old copy changed")
	}
	// A pod moving between updates (not possible in Kubernetes, but the
	// cache must stay consistent) and a pod update.
	c.addOrUpdatePod(pod("p", "2", "", onNode("a")))
	got = snapshotOf(t, c, &s)
	if got["a"].Requested.MilliCPU != 2000 || got["b"].Requested.MilliCPU != 1000 {
		t.Errorf("after update: a %dm, b %dm; want 2000m, 1000m", got["a"].Requested.MilliCPU, got["b"].Requested.MilliCPU)
	}
	// A deleted node with pods leaves the snapshot.
	c.removeNode("b")
	if got = snapshotOf(t, c, &s); len(got) != 1 || got["a"] == nil {
		t.Errorf("after removing b: %d nodes", len(got))
	}
	c.removePod("default/early")
	c.removeNode("a")
	if got = snapshotOf(t, c, &s); len(got) != 0 {
		t.Errorf("after removing all: %d nodes", len(got))
	}
	c.removePod("default/p")
	if len(c.nodes) != 0 {
		t.Errorf("cache keeps %d empty node entries", len(c.nodes))
	}
}

func TestCacheHostPortsReleased(t *testing.T) {
	c := newNodeCache(clocktesting.NewFakeClock(time.Now()), time.Minute)
	c.addNode(node("a", "4", "8Gi", 10))
	web := pod("web", "", "", onNode("a"), hostPorts(v1.ContainerPort{ContainerPort: 80, HostPort: 8080}))
	c.addOrUpdatePod(web)
	var s snapshot
	want := NewPodInfo(pod("p", "", "", hostPorts(v1.ContainerPort{ContainerPort: 80, HostPort: 8080})))
	if r := (NodePorts{}).Filter(want, snapshotOf(t, c, &s)["a"]); len(r) == 0 {
		t.Fatal("port in use not seen")
	}
	c.removePod("default/web")
	if r := (NodePorts{}).Filter(want, snapshotOf(t, c, &s)["a"]); len(r) != 0 {
		t.Fatalf("port still in use after the pod left: %v", r)
	}
}
