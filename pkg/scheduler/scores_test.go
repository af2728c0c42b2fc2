package scheduler

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

var cpuMem = []ResourceWeight{{Name: v1.ResourceCPU, Weight: 1}, {Name: v1.ResourceMemory, Weight: 1}}

func TestResourceScore(t *testing.T) {
	// The node has 4 cpu and 10000 bytes... of memory, as in Kubernetes'
	// own tests: scores are easy to check by hand.
	n := node("n", "4", "10000", 110)
	gpuNode := node("g", "4", "10000", 110, withAllocatable("nvidia.com/gpu", "4"))
	cases := []struct {
		name      string
		strategy  ScoringStrategy
		resources []ResourceWeight
		pod       *v1.Pod
		node      *v1.Node
		existing  []*v1.Pod
		want      int64
	}{
		// cpu (4000-3000)*100/4000 = 25, memory (10000-5000)*100/10000 = 50.
		{name: "least: mean of cpu and memory", strategy: LeastAllocated, pod: pod("p", "3", "5000"), node: n, want: 37},
		{name: "least: existing pods count", strategy: LeastAllocated, pod: pod("p", "1", "2500"), node: n,
			existing: []*v1.Pod{pod("e", "2", "2500")}, want: 37},
		{name: "least: weights", strategy: LeastAllocated, pod: pod("p", "3", "5000"), node: n,
			resources: []ResourceWeight{{Name: v1.ResourceCPU, Weight: 2}, {Name: v1.ResourceMemory, Weight: 1}}, want: 33},
		{name: "least: empty node, best effort pod counts 100m", strategy: LeastAllocated, pod: pod("p", "", ""),
			node: node("n", "1", "1Gi", 110), want: (90 + 80) / 2},
		{name: "least: over capacity scores 0", strategy: LeastAllocated, pod: pod("p", "5", "20000"), node: n, want: 0},
		// cpu 3000*100/4000 = 75, memory 50.
		{name: "most", strategy: MostAllocated, pod: pod("p", "3", "5000"), node: n, want: 62},
		{name: "most: over capacity is capped", strategy: MostAllocated, pod: pod("p", "5", "20000"), node: n, want: 100},
		{name: "most: existing pods count", strategy: MostAllocated, pod: pod("p", "1", "2500"), node: n,
			existing: []*v1.Pod{pod("e", "2", "2500")}, want: 62},
		// fractions 0.75 and 0.5: std 0.125.
		{name: "balanced", strategy: BalancedAllocation, pod: pod("p", "3", "5000"), node: n, want: 87},
		{name: "balanced: perfectly balanced", strategy: BalancedAllocation, pod: pod("p", "2", "5000"), node: n, want: 100},
		{name: "balanced: counts real requests of existing pods", strategy: BalancedAllocation, pod: pod("p", "1", "2500"), node: n,
			existing: []*v1.Pod{pod("e", "2", "")}, want: 75}, // 0.75 and 0.25, not 200Mi of default memory
		{name: "balanced: best effort pod is not scored", strategy: BalancedAllocation, pod: pod("p", "", ""), node: n, want: 0},
		{name: "extended resource the pod does not request is not scored", strategy: LeastAllocated, pod: pod("p", "3", "5000"), node: gpuNode,
			resources: append(slices.Clone(cpuMem), ResourceWeight{Name: "nvidia.com/gpu", Weight: 1}), want: 37},
		// gpu (4-1)*100/4 = 75: (25+50+75)/3.
		{name: "extended resource requested", strategy: LeastAllocated, pod: pod("p", "3", "5000", requesting("nvidia.com/gpu", "1")), node: gpuNode,
			resources: append(slices.Clone(cpuMem), ResourceWeight{Name: "nvidia.com/gpu", Weight: 1}), want: 50},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.resources
			if res == nil {
				res = cpuMem
			}
			s := ResourceScore{Strategy: tc.strategy, Resources: res}
			if got := s.Score(NewPodInfo(tc.pod), NewNodeInfo(tc.node, tc.existing...)); got != tc.want {
				t.Errorf("%s score = %d, want %d", tc.strategy, got, tc.want)
			}
		})
	}
}

func TestBalancedResourceScore(t *testing.T) {
	cases := []struct {
		requested, allocatable []int64
		want                   int64
	}{
		{[]int64{3000, 5000}, []int64{4000, 10000}, 87},
		{[]int64{1000, 5000}, []int64{4000, 10000}, 87},
		{[]int64{0, 0}, []int64{4000, 10000}, 100},
		{[]int64{8000, 0}, []int64{4000, 10000}, 50}, // over capacity counts as 1
		{[]int64{1, 1}, []int64{0, 10}, 100},         // one resource: no deviation
		// three fractions 0.2, 0.5, 0.8: std sqrt(0.06) = 0.2449.
		{[]int64{2, 5, 8}, []int64{10, 10, 10}, 75},
	}
	for _, tc := range cases {
		if got := balancedResourceScore(tc.requested, tc.allocatable); got != tc.want {
			t.Errorf("balancedResourceScore(%v, %v) = %d, want %d", tc.requested, tc.allocatable, got, tc.want)
		}
	}
}

// scoreAll scores nodes with one plugin, normalized as the scheduler does.
func scoreAll(p ScorePlugin, pi *PodInfo, nodes ...*v1.Node) []int64 {
	out := make([]int64, len(nodes))
	for i, n := range nodes {
		out[i] = p.Score(pi, NewNodeInfo(n))
	}
	if n, ok := p.(ScoreNormalizer); ok {
		n.NormalizeScores(out)
	}
	return out
}

func TestTaintTolerationScore(t *testing.T) {
	other := v1.Taint{Key: "other", Value: "y", Effect: v1.TaintEffectPreferNoSchedule}
	cases := []struct {
		name  string
		pod   *v1.Pod
		nodes []*v1.Node
		want  []int64
	}{
		{name: "no taints: all equal", pod: pod("p", "", ""),
			nodes: []*v1.Node{node("a", "1", "1Gi", 1), node("b", "1", "1Gi", 1)}, want: []int64{100, 100}},
		{name: "fewer intolerable PreferNoSchedule taints is better", pod: pod("p", "", ""),
			nodes: []*v1.Node{node("a", "1", "1Gi", 1), node("b", "1", "1Gi", 1, withTaints(preferNo)), node("c", "1", "1Gi", 1, withTaints(preferNo, other))},
			want:  []int64{100, 50, 0}},
		{name: "tolerated taints do not count", pod: pod("p", "", "", tolerating(v1.Toleration{Key: "soft", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectPreferNoSchedule})),
			nodes: []*v1.Node{node("a", "1", "1Gi", 1), node("b", "1", "1Gi", 1, withTaints(preferNo))}, want: []int64{100, 100}},
		{name: "NoSchedule tolerations do not help with PreferNoSchedule", pod: pod("p", "", "", tolerating(v1.Toleration{Key: "soft", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule})),
			nodes: []*v1.Node{node("a", "1", "1Gi", 1), node("b", "1", "1Gi", 1, withTaints(preferNo))}, want: []int64{100, 0}},
		{name: "NoSchedule taints are not scored", pod: pod("p", "", "", tolerating(v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule})),
			nodes: []*v1.Node{node("a", "1", "1Gi", 1), node("b", "1", "1Gi", 1, withTaints(noSchedule))}, want: []int64{100, 100}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := scoreAll(TaintTolerationScore{}, NewPodInfo(tc.pod), tc.nodes...); !slices.Equal(got, tc.want) {
				t.Errorf("scores = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNodeAffinityScore(t *testing.T) {
	prefs := preferring(
		v1.PreferredSchedulingTerm{Weight: 2, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("zone", v1.NodeSelectorOpIn, "a")}}},
		v1.PreferredSchedulingTerm{Weight: 8, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{expr("disk", v1.NodeSelectorOpIn, "ssd")}}},
	)
	nodes := []*v1.Node{
		node("none", "1", "1Gi", 1),
		node("zone", "1", "1Gi", 1, withLabels("zone", "a")),
		node("ssd", "1", "1Gi", 1, withLabels("disk", "ssd")),
		node("both", "1", "1Gi", 1, withLabels("zone", "a", "disk", "ssd")),
	}
	if got, want := scoreAll(NodeAffinityScore{}, NewPodInfo(pod("p", "", "", prefs)), nodes...), []int64{0, 20, 80, 100}; !slices.Equal(got, want) {
		t.Errorf("with preferences: scores = %v, want %v", got, want)
	}
	if got, want := scoreAll(NodeAffinityScore{}, NewPodInfo(pod("p", "", "")), nodes...), []int64{0, 0, 0, 0}; !slices.Equal(got, want) {
		t.Errorf("without preferences: scores = %v, want %v", got, want)
	}
}
