package scheduler

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/util/workqueue"
)

// The reasons of InterPodAffinity, worded as kube-scheduler words them.
const (
	ReasonPodAffinity              = "node(s) didn't match pod affinity rules"
	ReasonPodAntiAffinity          = "node(s) didn't match pod anti-affinity rules"
	ReasonExistingPodsAntiAffinity = "node(s) didn't satisfy existing pods anti-affinity rules"
)

// hardPodAffinityWeight is what an existing pod's required affinity term
// that the incoming pod matches adds to the score of its topology domain,
// as kube-scheduler's default hardPodAffinityWeight.
const hardPodAffinityWeight = 1

// affinityTerm is a PodAffinityTerm with its selectors parsed. It selects
// the pods of its namespaces, or of the namespaces its namespaceSelector
// selects, whose labels match its selector.
type affinityTerm struct {
	namespaces  sets.Set[string]
	nsSelector  labels.Selector
	selector    labels.Selector
	topologyKey string
	// weight of a preferred term.
	weight int64
}

// newAffinityTerm parses a term of the pod. Without namespaces and
// namespaceSelector a term selects the pod's own namespace. matchLabelKeys
// and mismatchLabelKeys become "key in (value)" and "key notin (value)"
// with the pod's values, as Kubernetes' apiserver merges them into the
// selector when the pod is created. A selector that does not parse (one
// validation refuses) selects nothing.
func newAffinityTerm(pod *v1.Pod, term *v1.PodAffinityTerm, weight int64) affinityTerm {
	t := affinityTerm{topologyKey: term.TopologyKey, weight: weight}
	t.selector = parseSelector(term.LabelSelector)
	t.selector = withLabelValues(t.selector, pod.Labels, term.MatchLabelKeys, selection.In)
	t.selector = withLabelValues(t.selector, pod.Labels, term.MismatchLabelKeys, selection.NotIn)
	if len(term.Namespaces) == 0 && term.NamespaceSelector == nil {
		t.namespaces = sets.New(pod.Namespace)
	} else {
		t.namespaces = sets.New(term.Namespaces...)
	}
	t.nsSelector = parseSelector(term.NamespaceSelector)
	return t
}

// parseSelector is metav1.LabelSelectorAsSelector, with nothing selected
// when the selector is nil or does not parse.
func parseSelector(ls *metav1.LabelSelector) labels.Selector {
	s, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return labels.Nothing()
	}
	return s
}

// withLabelValues adds "key op (value)" to s for each key the pod has a
// label for.
func withLabelValues(s labels.Selector, podLabels map[string]string, keys []string, op selection.Operator) labels.Selector {
	for _, k := range keys {
		v, ok := podLabels[k]
		if !ok {
			continue
		}
		if r, err := labels.NewRequirement(k, op, []string{v}); err == nil {
			s = s.Add(*r)
		}
	}
	return s
}

// matches reports whether the term selects the pod, whose namespace has
// the labels nsLabels.
func (t *affinityTerm) matches(pod *v1.Pod, nsLabels labels.Set) bool {
	if !t.namespaces.Has(pod.Namespace) && !t.nsSelector.Matches(nsLabels) {
		return false
	}
	return t.selector.Matches(labels.Set(pod.Labels))
}

// matchesAll reports whether every one of some terms (at least one)
// selects the pod.
func matchesAll(terms []affinityTerm, pod *v1.Pod, nsLabels labels.Set) bool {
	for i := range terms {
		if !terms[i].matches(pod, nsLabels) {
			return false
		}
	}
	return len(terms) > 0
}

// podAffinityTerms are a pod's inter-pod affinity and anti-affinity terms.
type podAffinityTerms struct {
	required, requiredAnti   []affinityTerm
	preferred, preferredAnti []affinityTerm
}

func newPodAffinityTerms(pod *v1.Pod) podAffinityTerms {
	var out podAffinityTerms
	a := pod.Spec.Affinity
	if a == nil {
		return out
	}
	required := func(terms []v1.PodAffinityTerm) []affinityTerm {
		var ts []affinityTerm
		for i := range terms {
			ts = append(ts, newAffinityTerm(pod, &terms[i], 0))
		}
		return ts
	}
	preferred := func(terms []v1.WeightedPodAffinityTerm) []affinityTerm {
		var ts []affinityTerm
		for i := range terms {
			ts = append(ts, newAffinityTerm(pod, &terms[i].PodAffinityTerm, int64(terms[i].Weight)))
		}
		return ts
	}
	if pa := a.PodAffinity; pa != nil {
		out.required = required(pa.RequiredDuringSchedulingIgnoredDuringExecution)
		out.preferred = preferred(pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		out.requiredAnti = required(pa.RequiredDuringSchedulingIgnoredDuringExecution)
		out.preferredAnti = preferred(pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	return out
}

func (t *podAffinityTerms) any() bool {
	return len(t.required)+len(t.requiredAnti)+len(t.preferred)+len(t.preferredAnti) > 0
}

// topologyPair is one topology domain: a node label and its value.
type topologyPair struct{ key, value string }

// topologyCounts holds a number per topology domain.
type topologyCounts map[topologyPair]int64

// add adds n to the domain of the node for the key; nothing when the node
// lacks the label.
func (c *topologyCounts) add(node *v1.Node, key string, n int64) {
	v, ok := node.Labels[key]
	if !ok {
		return
	}
	if *c == nil {
		*c = topologyCounts{}
	}
	(*c)[topologyPair{key, v}] += n
}

// nodesWith returns the nodes for which has is true.
func nodesWith(nodes []*NodeInfo, has func(n *NodeInfo) bool) []*NodeInfo {
	var out []*NodeInfo
	for _, n := range nodes {
		if has(n) {
			out = append(out, n)
		}
	}
	return out
}

// sumOverNodes runs count for every node and adds up what it counted. Many
// nodes are split in parallelism parts, each counted on a goroutine of its
// own.
func sumOverNodes(nodes []*NodeInfo, count func(n *NodeInfo, c *topologyCounts)) topologyCounts {
	parts := 1
	if len(nodes) >= parallelFrom {
		parts = parallelism
	}
	size := (len(nodes) + parts - 1) / parts
	perPart := make([]topologyCounts, parts)
	countPart := func(p int) {
		for _, n := range nodes[min(p*size, len(nodes)):min((p+1)*size, len(nodes))] {
			count(n, &perPart[p])
		}
	}
	if parts == 1 {
		countPart(0)
		return perPart[0]
	}
	workqueue.ParallelizeUntil(context.Background(), parts, parts, countPart)
	sum := perPart[0]
	for _, c := range perPart[1:] {
		for tp, n := range c {
			if sum == nil {
				sum = topologyCounts{}
			}
			sum[tp] += n
		}
	}
	return sum
}

// InterPodAffinity is Kubernetes' InterPodAffinity plugin. As a filter it
// places a pod only where each of its required affinity terms selects a
// pod in the node's topology domain (the first pod of a group that selects
// itself goes anywhere), where none of its required anti-affinity terms
// does, and where no pod's required anti-affinity term selects it. As a
// score it adds, per topology domain, the weights of the pod's preferred
// terms that select pods there (anti-affinity subtracts), and of those
// pods' preferred terms (and required affinity terms, with weight
// hardPodAffinityWeight) that select the pod.
type InterPodAffinity struct {
	// Namespaces resolves namespaceSelectors; nil knows no namespace.
	Namespaces corelisters.NamespaceLister
}

func (InterPodAffinity) Name() string { return "InterPodAffinity" }

// namespaceLabels returns the labels of a namespace (none when unknown).
func (pl InterPodAffinity) namespaceLabels(ns string) labels.Set {
	if pl.Namespaces == nil {
		return nil
	}
	n, err := pl.Namespaces.Get(ns)
	if err != nil {
		return nil
	}
	return n.Labels
}

// resolved returns copies of the incoming pod's terms whose
// namespaceSelector is replaced by the namespaces it selects now, so that
// each existing pod is matched without looking its namespace up. An empty
// namespaceSelector ({}), which selects every namespace, stays.
func (pl InterPodAffinity) resolved(terms []affinityTerm) []affinityTerm {
	out := make([]affinityTerm, len(terms))
	for i, t := range terms {
		out[i] = t
		if t.nsSelector.Empty() {
			continue
		}
		out[i].nsSelector = labels.Nothing()
		if pl.Namespaces == nil {
			continue
		}
		if nss, err := pl.Namespaces.List(t.nsSelector); err == nil && len(nss) > 0 {
			out[i].namespaces = t.namespaces.Clone()
			for _, ns := range nss {
				out[i].namespaces.Insert(ns.Name)
			}
		}
	}
	return out
}

// PreFilter counts, per topology domain, the pods the incoming pod's
// required terms select and the pods whose required anti-affinity selects
// the incoming pod.
func (pl InterPodAffinity) PreFilter(pod *PodInfo, nodes []*NodeInfo) NodeFilter {
	nsLabels := pl.namespaceLabels(pod.Pod.Namespace)
	withAnti := nodesWith(nodes, func(n *NodeInfo) bool { return n.podsWithRequiredAntiAffinity > 0 })
	existingAnti := sumOverNodes(withAnti, func(n *NodeInfo, c *topologyCounts) {
		for _, ep := range n.Pods {
			for i := range ep.podAffinity.requiredAnti {
				t := &ep.podAffinity.requiredAnti[i]
				if t.matches(pod.Pod, nsLabels) {
					c.add(n.Node, t.topologyKey, 1)
				}
			}
		}
	})
	required := pl.resolved(pod.podAffinity.required)
	requiredAnti := pl.resolved(pod.podAffinity.requiredAnti)
	if len(existingAnti) == 0 && len(required) == 0 && len(requiredAnti) == 0 {
		return nil
	}
	var affinity, anti topologyCounts
	if len(required)+len(requiredAnti) > 0 {
		affinity = sumOverNodes(nodes, func(n *NodeInfo, c *topologyCounts) {
			for _, ep := range n.Pods {
				if matchesAll(required, ep.Pod, nil) {
					for _, t := range required {
						c.add(n.Node, t.topologyKey, 1)
					}
				}
			}
		})
		anti = sumOverNodes(nodes, func(n *NodeInfo, c *topologyCounts) {
			for _, ep := range n.Pods {
				for _, t := range requiredAnti {
					if t.matches(ep.Pod, nil) {
						c.add(n.Node, t.topologyKey, 1)
					}
				}
			}
		})
	}
	// The first pod of a group whose affinity selects the group itself
	// would otherwise wait forever.
	firstOfGroup := len(affinity) == 0 && matchesAll(required, pod.Pod, nil)
	return func(node *NodeInfo) []string {
		nodeLabels := node.Node.Labels
		if len(required) > 0 {
			found := true
			for _, t := range required {
				v, ok := nodeLabels[t.topologyKey]
				if !ok {
					return []string{ReasonPodAffinity}
				}
				if affinity[topologyPair{t.topologyKey, v}] <= 0 {
					found = false
				}
			}
			if !found && !firstOfGroup {
				return []string{ReasonPodAffinity}
			}
		}
		for _, t := range requiredAnti {
			if v, ok := nodeLabels[t.topologyKey]; ok && anti[topologyPair{t.topologyKey, v}] > 0 {
				return []string{ReasonPodAntiAffinity}
			}
		}
		if len(existingAnti) > 0 {
			for k, v := range nodeLabels {
				if existingAnti[topologyPair{k, v}] > 0 {
					return []string{ReasonExistingPodsAntiAffinity}
				}
			}
		}
		return nil
	}
}

// PreScore sums the weights of the terms per topology domain. Unless the
// pod has preferred terms of its own, only the nodes with pods that have
// terms are looked at.
func (pl InterPodAffinity) PreScore(pod *PodInfo, _, all []*NodeInfo) *NodeScorer {
	preferred := pl.resolved(pod.podAffinity.preferred)
	preferredAnti := pl.resolved(pod.podAffinity.preferredAnti)
	nodes := all
	if len(preferred)+len(preferredAnti) == 0 {
		nodes = nodesWith(all, func(n *NodeInfo) bool { return n.podsWithAffinity > 0 })
	}
	nsLabels := pl.namespaceLabels(pod.Pod.Namespace)
	scores := sumOverNodes(nodes, func(n *NodeInfo, c *topologyCounts) {
		if len(n.Node.Labels) == 0 {
			return
		}
		add := func(terms []affinityTerm, target *v1.Pod, nsLabels labels.Set, sign int64) {
			for i := range terms {
				if terms[i].matches(target, nsLabels) {
					c.add(n.Node, terms[i].topologyKey, sign*terms[i].weight)
				}
			}
		}
		for _, ep := range n.Pods {
			add(preferred, ep.Pod, nil, 1)
			add(preferredAnti, ep.Pod, nil, -1)
			theirs := &ep.podAffinity
			for i := range theirs.required {
				if theirs.required[i].matches(pod.Pod, nsLabels) {
					c.add(n.Node, theirs.required[i].topologyKey, hardPodAffinityWeight)
				}
			}
			add(theirs.preferred, pod.Pod, nsLabels, 1)
			add(theirs.preferredAnti, pod.Pod, nsLabels, -1)
		}
	})
	if len(scores) == 0 {
		return nil
	}
	keys := sets.New[string]()
	for tp := range scores {
		keys.Insert(tp.key)
	}
	return &NodeScorer{
		Score: func(node *NodeInfo) int64 {
			var s int64
			for k := range keys {
				if v, ok := node.Node.Labels[k]; ok {
					s += scores[topologyPair{k, v}]
				}
			}
			return s
		},
		Normalize: minMaxNormalize,
	}
}

// minMaxNormalize scales scores linearly so that the lowest becomes 0 and
// the highest MaxNodeScore; all 0 when they are equal.
func minMaxNormalize(scores []int64) {
	if len(scores) == 0 {
		return
	}
	lo, hi := scores[0], scores[0]
	for _, s := range scores {
		lo, hi = min(lo, s), max(hi, s)
	}
	for i, s := range scores {
		if hi == lo {
			scores[i] = 0
			continue
		}
		scores[i] = int64(float64(MaxNodeScore) * float64(s-lo) / float64(hi-lo))
	}
}

var (
	_ PreFilterPlugin = InterPodAffinity{}
	_ PreScorePlugin  = InterPodAffinity{}
)
