package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	"k8s.io/client-go/util/workqueue"
)

// ErrNoNodesAvailable is Kubernetes' message when the cluster has no nodes.
const ErrNoNodesAvailable = "no nodes available to schedule pods"

// FitError says why no node fits a pod: how many nodes there are and how
// many gave each reason.
type FitError struct {
	NumAllNodes int
	Reasons     map[string]int
	// PreFilterMsg, when set, is why the pod fits no node whatever the
	// node ("pod has unbound immediate PersistentVolumeClaims").
	PreFilterMsg string
}

// Error is Kubernetes' message: "0/3 nodes are available: 1 node(s) had
// untolerated taint {k: v}, 2 Insufficient cpu." (reasons sorted as text).
func (e *FitError) Error() string {
	if e.NumAllNodes == 0 {
		return ErrNoNodesAvailable
	}
	if e.PreFilterMsg != "" {
		return fmt.Sprintf("0/%d nodes are available: %s.", e.NumAllNodes, e.PreFilterMsg)
	}
	reasons := make([]string, 0, len(e.Reasons))
	for r, n := range e.Reasons {
		reasons = append(reasons, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(reasons)
	msg := fmt.Sprintf("0/%d nodes are available:", e.NumAllNodes)
	if len(reasons) > 0 {
		msg += " " + strings.Join(reasons, ", ") + "."
	}
	return msg
}

// keptOutByPods reports whether other pods kept the pod off some node (pod
// affinity, anti-affinity, topology spread): a pod assigned or relabelled
// may let it fit.
func (e *FitError) keptOutByPods() bool {
	for _, r := range []string{ReasonPodAffinity, ReasonPodAntiAffinity, ReasonExistingPodsAntiAffinity, ReasonTopologySpread} {
		if e.Reasons[r] > 0 {
			return true
		}
	}
	return false
}

// profile is one scheduling policy: filters in order, weighted scores.
type profile struct {
	filters []FilterPlugin
	// preFilters run after filters, on the nodes they pass.
	preFilters []PreFilterPlugin
	scores     []WeightedScore
	preScores  []WeightedPreScore
}

func newProfile(sc ScoreConfig, l *Listers) *profile {
	return &profile{
		filters: DefaultFilters(), preFilters: DefaultPreFilters(l),
		scores: DefaultScores(sc), preScores: DefaultPreScores(l),
	}
}

// Filtering and scoring are spread over parallelism goroutines from
// parallelFrom nodes on.
const (
	parallelism  = 16
	parallelFrom = 256
)

// parallelize calls f(0..n-1), on several goroutines when n is large.
func parallelize(n int, f func(i int)) {
	if n < parallelFrom {
		for i := range n {
			f(i)
		}
		return
	}
	chunk := max(n/(parallelism*4), 16)
	workqueue.ParallelizeUntil(context.Background(), parallelism, n, f, workqueue.WithChunkSize(chunk))
}

// filterNode runs the filters on one node, then the attempt's checks of
// the cluster-wide ones, stopping at the first that rejects it.
func (p *profile) filterNode(pod *PodInfo, node *NodeInfo, checks []NodeFilter) []string {
	for _, f := range p.filters {
		if reasons := f.Filter(pod, node); len(reasons) > 0 {
			return reasons
		}
	}
	for _, check := range checks {
		if reasons := check(node); len(reasons) > 0 {
			return reasons
		}
	}
	return nil
}

// feasible returns the nodes that pass every filter, or a FitError.
func (p *profile) feasible(pod *PodInfo, nodes []*NodeInfo) ([]*NodeInfo, error) {
	if len(nodes) == 0 {
		return nil, &FitError{}
	}
	for _, pf := range p.preFilters {
		if r, ok := pf.(PodRejecter); ok {
			if msg := r.RejectPod(pod); msg != "" {
				return nil, &FitError{NumAllNodes: len(nodes), PreFilterMsg: msg}
			}
		}
	}
	var checks []NodeFilter
	for _, pf := range p.preFilters {
		if check := pf.PreFilter(pod, nodes); check != nil {
			checks = append(checks, check)
		}
	}
	rejected := make([][]string, len(nodes))
	parallelize(len(nodes), func(i int) { rejected[i] = p.filterNode(pod, nodes[i], checks) })
	var fit []*NodeInfo
	for i, r := range rejected {
		if len(r) == 0 {
			fit = append(fit, nodes[i])
		}
	}
	if len(fit) > 0 {
		return fit, nil
	}
	fe := &FitError{NumAllNodes: len(nodes), Reasons: map[string]int{}}
	for _, reasons := range rejected {
		for _, r := range reasons {
			fe.Reasons[r]++
		}
	}
	return nil, fe
}

// score returns each feasible node's weighted total; all are every node.
func (p *profile) score(pod *PodInfo, feasible, all []*NodeInfo) []int64 {
	totals := make([]int64, len(feasible))
	scores := make([]int64, len(feasible))
	add := func(score func(n *NodeInfo) int64, normalize func([]int64), weight int64) {
		parallelize(len(feasible), func(i int) { scores[i] = score(feasible[i]) })
		if normalize != nil {
			normalize(scores)
		}
		for i, s := range scores {
			totals[i] += s * weight
		}
	}
	for _, ws := range p.scores {
		var normalize func([]int64)
		if n, ok := ws.Plugin.(ScoreNormalizer); ok {
			normalize = n.NormalizeScores
		}
		add(func(n *NodeInfo) int64 { return ws.Plugin.Score(pod, n) }, normalize, ws.Weight)
	}
	for _, ws := range p.preScores {
		if scorer := ws.Plugin.PreScore(pod, feasible, all); scorer != nil {
			add(scorer.Score, scorer.Normalize, ws.Weight)
		}
	}
	return totals
}

// schedule picks the node for a pod: the best scored of those that pass
// the filters, a random one among equals.
func (p *profile) schedule(pod *PodInfo, nodes []*NodeInfo, rnd *rand.Rand) (*NodeInfo, error) {
	fit, err := p.feasible(pod, nodes)
	if err != nil {
		return nil, err
	}
	if len(fit) == 1 {
		return fit[0], nil
	}
	return selectHost(fit, p.score(pod, fit, nodes), rnd), nil
}

// selectHost returns the node with the highest score; among several, each
// is equally likely (reservoir sampling, as kube-scheduler does).
func selectHost(nodes []*NodeInfo, scores []int64, rnd *rand.Rand) *NodeInfo {
	best, seen := 0, 0
	for i, s := range scores {
		switch {
		case s > scores[best]:
			best, seen = i, 1
		case s == scores[best]:
			seen++
			if rnd.IntN(seen) == 0 {
				best = i
			}
		}
	}
	return nodes[best]
}
