package scheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func withPriority(p int32) func(*v1.Pod) { return func(pod *v1.Pod) { pod.Spec.Priority = ptr.To(p) } }

func TestPreemptionCandidate(t *testing.T) {
	p := newProfile(ScoreConfig{Strategy: LeastAllocated, Resources: cpuMem}, &Listers{})
	nodes := []*NodeInfo{
		// Room needs the priority-50 pod gone: a worse choice than b.
		NewNodeInfo(node("a", "2", "8Gi", 110),
			pod("a-mid", "1", "0", onNode("a"), withPriority(50)),
			pod("a-low", "1", "0", onNode("a"), withPriority(1))),
		// Room needs both priority-1 and priority-2 pods gone.
		NewNodeInfo(node("b", "2", "8Gi", 110),
			pod("b-low1", "1", "0", onNode("b"), withPriority(1)),
			pod("b-low2", "1", "0", onNode("b"), withPriority(2))),
		// Pods of equal or higher priority are never victims.
		NewNodeInfo(node("c", "2", "8Gi", 110),
			pod("c-high", "2", "0", onNode("c"), withPriority(100))),
		// A taint no victim can lift.
		NewNodeInfo(node("d", "2", "8Gi", 110, withTaints(v1.Taint{Key: "k", Effect: v1.TaintEffectNoSchedule})),
			pod("d-low", "2", "0", onNode("d"), withPriority(0))),
	}
	preemptor := NewPodInfo(pod("big", "2", "0", withPriority(100)))
	c := p.preemptionCandidate(preemptor, nodes)
	if c == nil || c.node.Node.Name != "b" || len(c.victims) != 2 {
		t.Fatalf("candidate %+v, want node b with two victims", c)
	}

	// Only as many victims as needed, the least important first.
	small := NewPodInfo(pod("small", "1", "0", withPriority(100)))
	c = p.preemptionCandidate(small, nodes[:1])
	if c == nil || len(c.victims) != 1 || c.victims[0].Name != "a-low" {
		t.Fatalf("candidate %+v, want a-low alone", c)
	}
	// Nothing of lower priority to remove: no candidate.
	if c := p.preemptionCandidate(NewPodInfo(pod("peer", "1", "0", withPriority(1))), nodes[1:2]); c != nil {
		t.Fatalf("a priority-1 pod preempts %+v on a node of priority 1 and 2 pods, want nothing", c.victims)
	}
}
