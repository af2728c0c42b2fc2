package scheduler

import (
	"math"

	v1 "k8s.io/api/core/v1"
)

// MaxNodeScore is the best score a plugin gives a node.
const MaxNodeScore int64 = 100

// A ScorePlugin rates a node that passed the filters, 0 to MaxNodeScore
// (after normalization, for a ScoreNormalizer).
type ScorePlugin interface {
	Name() string
	Score(pod *PodInfo, node *NodeInfo) int64
}

// ScoreNormalizer is an optional extra of a ScorePlugin whose raw scores
// are rescaled to 0-MaxNodeScore over all the nodes that passed.
type ScoreNormalizer interface {
	NormalizeScores(scores []int64)
}

// WeightedScore is a score plugin and its weight in the total.
type WeightedScore struct {
	Plugin ScorePlugin
	Weight int64
}

// A PreScorePlugin scores by what it learns from all the nodes, once per
// attempt: PreScore returns the scorer of the nodes that passed the
// filters (feasible), nil when they would all score the same.
type PreScorePlugin interface {
	Name() string
	PreScore(pod *PodInfo, feasible, all []*NodeInfo) *NodeScorer
}

// NodeScorer scores the nodes of one attempt: Score rates each node,
// Normalize rescales the raw scores to 0-MaxNodeScore.
type NodeScorer struct {
	Score     func(node *NodeInfo) int64
	Normalize func(scores []int64)
}

// WeightedPreScore is a PreScorePlugin and its weight in the total.
type WeightedPreScore struct {
	Plugin PreScorePlugin
	Weight int64
}

// DefaultScores are the score plugins of a profile, with Kubernetes'
// default weights: the resource strategy 1, taints 3, node affinity 2.
func DefaultScores(sc ScoreConfig) []WeightedScore {
	return []WeightedScore{
		{Plugin: ResourceScore{Strategy: sc.Strategy, Resources: sc.Resources}, Weight: 1},
		{Plugin: TaintTolerationScore{}, Weight: 3},
		{Plugin: NodeAffinityScore{}, Weight: 2},
	}
}

// DefaultPreScores are the scores that look at other nodes' pods, with
// Kubernetes' default weights: 2 each.
func DefaultPreScores(l *Listers) []WeightedPreScore {
	return []WeightedPreScore{
		{Plugin: PodTopologySpread{Listers: l}, Weight: 2},
		{Plugin: InterPodAffinity{Namespaces: l.Namespaces}, Weight: 2},
	}
}

// ResourceScore scores a node by what it would have allocated once the pod
// is on it, as Kubernetes' NodeResourcesFit (LeastAllocated, MostAllocated)
// and NodeResourcesBalancedAllocation do.
type ResourceScore struct {
	Strategy  ScoringStrategy
	Resources []ResourceWeight
}

func (r ResourceScore) Name() string {
	if r.Strategy == BalancedAllocation {
		return "NodeResourcesBalancedAllocation"
	}
	return "NodeResourcesFit"
}

func (r ResourceScore) Score(pod *PodInfo, node *NodeInfo) int64 {
	// LeastAllocated and MostAllocated count containers without requests
	// as Kubernetes' defaults; BalancedAllocation counts real requests.
	useRequested := r.Strategy == BalancedAllocation
	requested := make([]int64, len(r.Resources))
	allocatable := make([]int64, len(r.Resources))
	podRequestsSomething := false
	for i, rw := range r.Resources {
		alloc, req, podReq := allocatableAndRequested(pod, node, rw.Name, useRequested)
		if podReq > 0 {
			podRequestsSomething = true
		}
		allocatable[i], requested[i] = alloc, req
	}
	switch r.Strategy {
	case MostAllocated:
		return weightedScore(requested, allocatable, r.Resources, mostRequestedScore)
	case BalancedAllocation:
		if !podRequestsSomething {
			// Kubernetes skips best-effort pods: every node scores the same.
			return 0
		}
		return balancedResourceScore(requested, allocatable)
	default:
		return weightedScore(requested, allocatable, r.Resources, leastRequestedScore)
	}
}

// allocatableAndRequested returns a node's allocatable amount of a
// resource, what would be requested of it with the pod there, and the
// pod's own request. An extended resource the pod does not ask for is
// (0, 0): not scored.
func allocatableAndRequested(pod *PodInfo, node *NodeInfo, name v1.ResourceName, useRequested bool) (alloc, req, podReq int64) {
	nodeReq, podReqs := &node.NonZeroRequested, &pod.NonZero
	if useRequested {
		nodeReq, podReqs = &node.Requested, &pod.Requests
	}
	switch name {
	case v1.ResourceCPU:
		return node.Allocatable.MilliCPU, nodeReq.MilliCPU + podReqs.MilliCPU, podReqs.MilliCPU
	case v1.ResourceMemory:
		return node.Allocatable.Memory, nodeReq.Memory + podReqs.Memory, podReqs.Memory
	case v1.ResourceEphemeralStorage:
		p := pod.Requests.EphemeralStorage
		return node.Allocatable.EphemeralStorage, node.Requested.EphemeralStorage + p, p
	}
	p := pod.Requests.Scalar[name]
	if p == 0 {
		return 0, 0, 0
	}
	a, ok := node.Allocatable.Scalar[name]
	if !ok {
		return 0, 0, p
	}
	return a, node.Requested.Scalar[name] + p, p
}

func weightedScore(requested, allocatable []int64, resources []ResourceWeight, scorer func(req, alloc int64) int64) int64 {
	var score, weights int64
	for i := range requested {
		if allocatable[i] == 0 {
			continue
		}
		score += scorer(requested[i], allocatable[i]) * resources[i].Weight
		weights += resources[i].Weight
	}
	if weights == 0 {
		return 0
	}
	return score / weights
}

// leastRequestedScore: the free fraction, 0 when over capacity.
func leastRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * MaxNodeScore / capacity
}

// mostRequestedScore: the used fraction, capped at capacity.
func mostRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 {
		return 0
	}
	if requested > capacity {
		requested = capacity
	}
	return requested * MaxNodeScore / capacity
}

// balancedResourceScore is 100 × (1 − the standard deviation of the used
// fractions); for two resources that is 100 × (1 − |f1 − f2| / 2).
func balancedResourceScore(requested, allocatable []int64) int64 {
	var fractions []float64
	var total float64
	for i := range requested {
		if allocatable[i] == 0 {
			continue
		}
		f := float64(requested[i]) / float64(allocatable[i])
		if f > 1 {
			f = 1
		}
		total += f
		fractions = append(fractions, f)
	}
	std := 0.0
	switch {
	case len(fractions) == 2:
		std = math.Abs((fractions[0] - fractions[1]) / 2)
	case len(fractions) > 2:
		mean := total / float64(len(fractions))
		var sum float64
		for _, f := range fractions {
			sum += (f - mean) * (f - mean)
		}
		std = math.Sqrt(sum / float64(len(fractions)))
	}
	return int64((1 - std) * float64(MaxNodeScore))
}

// TaintTolerationScore prefers nodes with fewer PreferNoSchedule taints
// the pod does not tolerate.
type TaintTolerationScore struct{}

func (TaintTolerationScore) Name() string { return "TaintToleration" }

// Score counts the intolerable PreferNoSchedule taints; NormalizeScores
// turns the count into a score.
func (TaintTolerationScore) Score(pod *PodInfo, node *NodeInfo) int64 {
	var tolerations []v1.Toleration
	for _, t := range pod.Pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			tolerations = append(tolerations, t)
		}
	}
	var n int64
	for i := range node.Node.Spec.Taints {
		t := &node.Node.Spec.Taints[i]
		if t.Effect == v1.TaintEffectPreferNoSchedule && !tolerates(tolerations, t) {
			n++
		}
	}
	return n
}

func (TaintTolerationScore) NormalizeScores(scores []int64) { defaultNormalizeScores(scores, true) }

// NodeAffinityScore prefers nodes matching the pod's preferred node
// affinity terms, by the sum of their weights.
type NodeAffinityScore struct{}

func (NodeAffinityScore) Name() string { return "NodeAffinity" }

func (NodeAffinityScore) Score(pod *PodInfo, node *NodeInfo) int64 {
	if pod.preferredAffinity == nil {
		return 0
	}
	return pod.preferredAffinity.Score(node.Node)
}

func (NodeAffinityScore) NormalizeScores(scores []int64) { defaultNormalizeScores(scores, false) }

// defaultNormalizeScores scales scores to 0-MaxNodeScore by the highest;
// reversed, the highest raw score becomes 0.
func defaultNormalizeScores(scores []int64, reverse bool) {
	var highest int64
	for _, s := range scores {
		highest = max(highest, s)
	}
	if highest == 0 {
		if reverse {
			for i := range scores {
				scores[i] = MaxNodeScore
			}
		}
		return
	}
	for i, s := range scores {
		s = MaxNodeScore * s / highest
		if reverse {
			s = MaxNodeScore - s
		}
		scores[i] = s
	}
}

var (
	_ ScorePlugin     = ResourceScore{}
	_ ScorePlugin     = TaintTolerationScore{}
	_ ScoreNormalizer = TaintTolerationScore{}
	_ ScorePlugin     = NodeAffinityScore{}
	_ ScoreNormalizer = NodeAffinityScore{}
)
