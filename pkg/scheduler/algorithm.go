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
}

// Error is Kubernetes' message: "0/3 nodes are available: 1 node(s) had
// untolerated taint {k: v}, 2 Insufficient cpu." (reasons sorted as text).
func (e *FitError) Error() string {
	if e.NumAllNodes == 0 {
		return ErrNoNodesAvailable
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

// profile is one scheduling policy: filters in order, weighted scores.
type profile struct {
	filters []FilterPlugin
	scores  []WeightedScore
	// parallelism is how many goroutines filter and score when there are
	// many nodes.
	parallelism int
}

func newProfile(sc ScoreConfig) *profile {
	return &profile{filters: DefaultFilters(), scores: DefaultScores(sc), parallelism: 16}
}

// parallelFrom is the node count from which filtering and scoring are
// spread over goroutines.
const parallelFrom = 256

func (p *profile) each(n int, f func(i int)) {
	if n < parallelFrom || p.parallelism <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	chunk := max(n/(p.parallelism*4), 16)
	workqueue.ParallelizeUntil(context.Background(), p.parallelism, n, f, workqueue.WithChunkSize(chunk))
}

// filterNode runs the filters on one node, stopping at the first that
// rejects it.
func (p *profile) filterNode(pod *PodInfo, node *NodeInfo) []string {
	for _, f := range p.filters {
		if reasons := f.Filter(pod, node); len(reasons) > 0 {
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
	rejected := make([][]string, len(nodes))
	p.each(len(nodes), func(i int) { rejected[i] = p.filterNode(pod, nodes[i]) })
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

// score returns each node's weighted total.
func (p *profile) score(pod *PodInfo, nodes []*NodeInfo) []int64 {
	totals := make([]int64, len(nodes))
	plugin := make([]int64, len(nodes))
	for _, ws := range p.scores {
		p.each(len(nodes), func(i int) { plugin[i] = ws.Plugin.Score(pod, nodes[i]) })
		if n, ok := ws.Plugin.(ScoreNormalizer); ok {
			n.NormalizeScores(plugin)
		}
		for i, s := range plugin {
			totals[i] += s * ws.Weight
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
	return selectHost(fit, p.score(pod, fit), rnd), nil
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
