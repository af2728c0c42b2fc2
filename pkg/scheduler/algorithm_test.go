package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func infos(nodes ...*v1.Node) []*NodeInfo {
	out := make([]*NodeInfo, len(nodes))
	for i, n := range nodes {
		out[i] = NewNodeInfo(n)
	}
	return out
}

func TestFitErrorMessage(t *testing.T) {
	cases := []struct {
		name  string
		pod   *v1.Pod
		nodes []*NodeInfo
		want  string
	}{
		{name: "no nodes", pod: pod("p", "", ""), want: "no nodes available to schedule pods"},
		{name: "taint and cpu", pod: pod("p", "8", ""),
			nodes: infos(node("a", "4", "8Gi", 10), node("b", "4", "8Gi", 10), node("c", "16", "8Gi", 10, withTaints(noSchedule))),
			want:  "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 Insufficient cpu."},
		{name: "the first failing filter speaks for a node", pod: pod("p", "8", ""),
			nodes: infos(node("a", "4", "8Gi", 10, withTaints(noSchedule)), node("b", "4", "8Gi", 10, cordoned)),
			want:  "0/2 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) were unschedulable."},
		{name: "a node can give several reasons", pod: pod("p", "8", "16Gi"),
			nodes: infos(node("a", "4", "8Gi", 10), node("b", "4", "8Gi", 10)),
			want:  "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory."},
		{name: "selector and readiness", pod: pod("p", "", "", selecting("zone", "a")),
			nodes: infos(node("a", "4", "8Gi", 10, withLabels("zone", "a"), withReady(v1.ConditionFalse)), node("b", "4", "8Gi", 10)),
			want:  "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }."},
	}
	p := newProfile(ScoreConfig{Strategy: LeastAllocated, Resources: cpuMem}, &Listers{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.schedule(NewPodInfo(tc.pod), tc.nodes, rand.New(rand.NewPCG(1, 2)))
			if err == nil {
				t.Fatalf("scheduled on %s, want an error", got.Node.Name)
			}
			if err.Error() != tc.want {
				t.Errorf("message\n got %q\nwant %q", err.Error(), tc.want)
			}
		})
	}
}

func TestScheduleStrategies(t *testing.T) {
	// "full" already has 3 of its 4 cpus requested, "empty" none.
	full := NewNodeInfo(node("full", "4", "8Gi", 10), pod("e", "3", "1Gi"))
	empty := NewNodeInfo(node("empty", "4", "8Gi", 10))
	cases := []struct {
		strategy ScoringStrategy
		pod      *v1.Pod
		want     string
	}{
		{LeastAllocated, pod("p", "500m", "1Gi"), "empty"},
		{MostAllocated, pod("p", "500m", "1Gi"), "full"},
		// On "full" cpu would be 7/8 used and memory 2/8; on "empty" 1/8
		// and 1/8: balanced.
		{BalancedAllocation, pod("p", "500m", "1Gi"), "empty"},
		// Only "empty" fits 2 cpus: no choice to make.
		{MostAllocated, pod("p", "2", "1Gi"), "empty"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%s", tc.strategy, tc.pod.Spec.Containers[0].Resources.Requests.Cpu()), func(t *testing.T) {
			p := newProfile(ScoreConfig{Strategy: tc.strategy, Resources: cpuMem}, &Listers{})
			for range 20 {
				got, err := p.schedule(NewPodInfo(tc.pod), []*NodeInfo{full, empty}, rand.New(rand.NewPCG(rand.Uint64(), 0)))
				if err != nil {
					t.Fatal(err)
				}
				if got.Node.Name != tc.want {
					t.Fatalf("scheduled on %s, want %s", got.Node.Name, tc.want)
				}
			}
		})
	}
}

func TestScheduleWeighsPreferences(t *testing.T) {
	// A PreferNoSchedule taint (weight 3) outweighs a node's emptier cpu.
	p := newProfile(ScoreConfig{Strategy: LeastAllocated, Resources: cpuMem}, &Listers{})
	busy := NewNodeInfo(node("busy", "4", "8Gi", 10), pod("e", "2", "1Gi"))
	tainted := NewNodeInfo(node("tainted", "4", "8Gi", 10, withTaints(preferNo)))
	got, err := p.schedule(NewPodInfo(pod("p", "100m", "100Mi")), []*NodeInfo{busy, tainted}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if got.Node.Name != "busy" {
		t.Errorf("scheduled on %s, want busy", got.Node.Name)
	}
}

func TestSelectHostBreaksTiesAtRandom(t *testing.T) {
	nodes := infos(node("a", "1", "1Gi", 1), node("b", "1", "1Gi", 1), node("c", "1", "1Gi", 1), node("d", "1", "1Gi", 1))
	scores := []int64{50, 90, 90, 90}
	rnd := rand.New(rand.NewPCG(7, 7))
	seen := map[string]int{}
	for range 3000 {
		seen[selectHost(nodes, scores, rnd).Node.Name]++
	}
	if seen["a"] != 0 {
		t.Errorf("the lower-scored node was picked %d times", seen["a"])
	}
	for _, n := range []string{"b", "c", "d"} {
		if seen[n] < 800 || seen[n] > 1200 {
			t.Errorf("node %s picked %d times of 3000, want about 1000 (%v)", n, seen[n], seen)
		}
	}
}

func TestScheduleManyNodesInParallel(t *testing.T) {
	var nodes []*NodeInfo
	for i := range 1000 {
		n := node(fmt.Sprintf("n%04d", i), "2", "4Gi", 110)
		if i == 737 {
			n = node("big", "64", "4Gi", 110)
		}
		nodes = append(nodes, NewNodeInfo(n))
	}
	p := newProfile(ScoreConfig{Strategy: LeastAllocated, Resources: cpuMem}, &Listers{})
	got, err := p.schedule(NewPodInfo(pod("p", "8", "")), nodes, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if got.Node.Name != "big" {
		t.Errorf("scheduled on %s, want big", got.Node.Name)
	}
	_, err = p.schedule(NewPodInfo(pod("p", "100", "")), nodes, rand.New(rand.NewPCG(1, 2)))
	if want := "0/1000 nodes are available: 1000 Insufficient cpu."; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

func BenchmarkScheduleAlgorithm(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			var nodes []*NodeInfo
			for i := range n {
				nodes = append(nodes, NewNodeInfo(node(fmt.Sprintf("n%05d", i), "32", "64Gi", 110, withLabels("zone", fmt.Sprint(i%3))), pod("e", fmt.Sprintf("%dm", i%2000), "1Gi")))
			}
			p := newProfile(ScoreConfig{Strategy: LeastAllocated, Resources: cpuMem}, &Listers{})
			pi := NewPodInfo(pod("p", "100m", "128Mi"))
			rnd := rand.New(rand.NewPCG(1, 2))
			b.ResetTimer()
			for range b.N {
				if _, err := p.schedule(pi, nodes, rnd); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// place schedules the pods one by one, each counted on its node before the
// next is scheduled (as the cache assumes them), and returns how many went
// to each node.
func place(t *testing.T, p *profile, nodes []*NodeInfo, rnd *rand.Rand, pods ...*v1.Pod) (map[string]int, error) {
	t.Helper()
	perNode := map[string]int{}
	for _, pd := range pods {
		pi := NewPodInfo(pd)
		n, err := p.schedule(pi, nodes, rnd)
		if err != nil {
			return perNode, err
		}
		assumed := *pd
		assumed.Spec.NodeName = n.Node.Name
		pi.Pod = &assumed
		n.addPod(pi)
		perNode[n.Node.Name]++
	}
	return perNode, nil
}

func TestDefaultSpreadingOfBestEffortReplicas(t *testing.T) {
	// Big nodes: 100m and 200Mi more or less round to the same resource
	// score, so only the default spreading tells the nodes apart.
	l := listersOf(replicaSet("web", "app", "web"))
	p := newProfile(ScoreConfig{Strategy: LeastAllocated, Resources: cpuMem}, l)
	var replicas []*v1.Pod
	for i := range 6 {
		replicas = append(replicas, webPod(fmt.Sprintf("web-%d", i), ownedBy("apps/v1", "ReplicaSet", "web")))
	}
	for seed := range uint64(50) {
		nodes := infos(node("a", "32", "64Gi", 110), node("b", "32", "64Gi", 110), node("c", "32", "64Gi", 110))
		perNode, err := place(t, p, nodes, rand.New(rand.NewPCG(seed, seed)), replicas...)
		if err != nil {
			t.Fatal(err)
		}
		if perNode["a"] != 2 || perNode["b"] != 2 || perNode["c"] != 2 {
			t.Fatalf("seed %d: replicas per node %v, want 2 on each", seed, perNode)
		}
	}
}

func TestRequiredAntiAffinityLeavesAReplicaPending(t *testing.T) {
	p := newProfile(ScoreConfig{Strategy: LeastAllocated, Resources: cpuMem}, listersOf())
	nodes := infos(node("a", "4", "8Gi", 110), node("b", "4", "8Gi", 110), node("c", "4", "8Gi", 110))
	var replicas []*v1.Pod
	for i := range 4 {
		replicas = append(replicas, webPod(fmt.Sprintf("web-%d", i), avoidPods(podTerm(hostname, "app", "web"))))
	}
	perNode, err := place(t, p, nodes, rand.New(rand.NewPCG(1, 2)), replicas...)
	if perNode["a"] != 1 || perNode["b"] != 1 || perNode["c"] != 1 {
		t.Errorf("replicas per node %v, want 1 on each", perNode)
	}
	if want := "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."; err == nil || err.Error() != want {
		t.Errorf("the fourth replica: %v, want %q", err, want)
	}
	// A pod the replicas' anti-affinity selects is kept off their nodes
	// too, by their terms.
	_, err = p.schedule(NewPodInfo(webPod("plain")), nodes, rand.New(rand.NewPCG(1, 2)))
	if want := "0/3 nodes are available: 3 node(s) didn't satisfy existing pods anti-affinity rules."; err == nil || err.Error() != want {
		t.Errorf("a pod matching their terms: %v, want %q", err, want)
	}
}

func TestTopologySpreadMessage(t *testing.T) {
	// One node per zone; zone b's node is cordoned but still a domain.
	p := newProfile(ScoreConfig{Strategy: LeastAllocated, Resources: cpuMem}, listersOf())
	nodes := infos(node("a1", "4", "8Gi", 110, withLabels(zone, "a")), node("a2", "4", "8Gi", 110, withLabels(zone, "a")),
		node("b1", "4", "8Gi", 110, withLabels(zone, "b"), cordoned))
	var replicas []*v1.Pod
	for i := range 2 {
		replicas = append(replicas, webPod(fmt.Sprintf("web-%d", i), spreading(spread(1, zone, v1.DoNotSchedule, "app", "web"))))
	}
	perNode, err := place(t, p, nodes, rand.New(rand.NewPCG(1, 2)), replicas...)
	if perNode["a1"]+perNode["a2"] != 1 {
		t.Errorf("replicas per node %v, want 1 in zone a", perNode)
	}
	if want := "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match pod topology spread constraints."; err == nil || err.Error() != want {
		t.Errorf("the second replica: %v, want %q", err, want)
	}
}

// BenchmarkScheduleWithPodAffinity schedules a ReplicaSet's pod with
// required anti-affinity, preferred affinity and two spread constraints
// among nodes in 3 zones, each running pods with terms of their own.
func BenchmarkScheduleWithPodAffinity(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			owned := ownedBy("apps/v1", "ReplicaSet", "web")
			var nodes []*NodeInfo
			for i := range n {
				name := fmt.Sprintf("n%05d", i)
				var pods []*v1.Pod
				if i%2 == 0 {
					pods = append(pods, pod("db-"+name, "100m", "128Mi", onNode(name), labelled("app", "db"),
						preferAvoidPods(weighted(5, podTerm(hostname, "app", "web")))))
				}
				if i%3 == 0 {
					pods = append(pods, webPod("web-"+name, onNode(name), owned))
				}
				nodes = append(nodes, NewNodeInfo(node(name, "32", "64Gi", 110, withLabels(zone, fmt.Sprint(i%3))), pods...))
			}
			p := newProfile(ScoreConfig{Strategy: LeastAllocated, Resources: cpuMem}, listersOf(replicaSet("web", "app", "web")))
			pi := NewPodInfo(webPod("p", owned, avoidPods(podTerm(hostname, "app", "web")), preferPods(weighted(10, podTerm(zone, "app", "db"))),
				spreading(spread(100, zone, v1.DoNotSchedule, "app", "web"), spread(1, hostname, v1.ScheduleAnyway, "app", "web"))))
			rnd := rand.New(rand.NewPCG(1, 2))
			b.ResetTimer()
			for range b.N {
				if _, err := p.schedule(pi, nodes, rnd); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
