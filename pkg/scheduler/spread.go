package scheduler

import (
	"math"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// The reasons of PodTopologySpread, worded as kube-scheduler words them.
const (
	ReasonTopologySpread             = "node(s) didn't match pod topology spread constraints"
	ReasonTopologySpreadMissingLabel = ReasonTopologySpread + " (missing required label)"
)

// defaultSpreadConstraints are kube-scheduler's system defaults for a pod
// that sets no topologySpreadConstraints: spread its siblings over nodes
// and zones, as a preference. The selector is the pod's default selector.
var defaultSpreadConstraints = []v1.TopologySpreadConstraint{
	{TopologyKey: v1.LabelHostname, WhenUnsatisfiable: v1.ScheduleAnyway, MaxSkew: 3},
	{TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.ScheduleAnyway, MaxSkew: 5},
}

// Listers are what the scheduler reads besides pods and nodes: namespaces,
// for the namespaceSelector of affinity terms, and the Services,
// ReplicaSets, StatefulSets and ReplicationControllers that select a pod,
// for its default spreading. A nil lister lists nothing.
type Listers struct {
	Namespaces             corelisters.NamespaceLister
	Services               corelisters.ServiceLister
	ReplicationControllers corelisters.ReplicationControllerLister
	ReplicaSets            appslisters.ReplicaSetLister
	StatefulSets           appslisters.StatefulSetLister
	// Volumes are the claims, volumes and classes VolumeBinding reads.
	Volumes VolumeListers
}

var (
	rcKind = v1.SchemeGroupVersion.WithKind("ReplicationController")
	rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	ssKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
)

// defaultSelector selects a pod's siblings as Kubernetes does for default
// spreading: by the selectors of the Services that select the pod and of
// its controller (a ReplicationController, ReplicaSet or StatefulSet), all
// together. It is empty when nothing selects the pod.
func (l *Listers) defaultSelector(pod *v1.Pod) labels.Selector {
	set := labels.Set{}
	if l.Services != nil {
		services, _ := l.Services.Services(pod.Namespace).List(labels.Everything())
		for _, svc := range services {
			// A nil selector selects nothing, not everything.
			if svc.Spec.Selector != nil && labels.SelectorFromValidatedSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
				set = labels.Merge(set, svc.Spec.Selector)
			}
		}
	}
	selector := labels.SelectorFromSet(set)
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil {
		return selector
	}
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	if err != nil {
		return selector
	}
	var controllerSelector *metav1.LabelSelector
	switch gv.WithKind(owner.Kind) {
	case rcKind:
		if l.ReplicationControllers != nil {
			if rc, err := l.ReplicationControllers.ReplicationControllers(pod.Namespace).Get(owner.Name); err == nil {
				return labels.SelectorFromSet(labels.Merge(set, rc.Spec.Selector))
			}
		}
	case rsKind:
		if l.ReplicaSets != nil {
			if rs, err := l.ReplicaSets.ReplicaSets(pod.Namespace).Get(owner.Name); err == nil {
				controllerSelector = rs.Spec.Selector
			}
		}
	case ssKind:
		if l.StatefulSets != nil {
			if ss, err := l.StatefulSets.StatefulSets(pod.Namespace).Get(owner.Name); err == nil {
				controllerSelector = ss.Spec.Selector
			}
		}
	}
	if controllerSelector != nil {
		if s, err := metav1.LabelSelectorAsSelector(controllerSelector); err == nil {
			if reqs, ok := s.Requirements(); ok {
				selector = selector.Add(reqs...)
			}
		}
	}
	return selector
}

// spreadConstraint is a TopologySpreadConstraint with its selector parsed
// and its defaults filled in.
type spreadConstraint struct {
	maxSkew     int32
	minDomains  int32
	topologyKey string
	selector    labels.Selector
	// nodeAffinityPolicy Honor (the default) counts only the pods of the
	// nodes the pod's nodeSelector and required node affinity allow;
	// nodeTaintsPolicy Honor (Ignore is the default) only those of the
	// nodes whose NoSchedule and NoExecute taints the pod tolerates.
	nodeAffinityPolicy v1.NodeInclusionPolicy
	nodeTaintsPolicy   v1.NodeInclusionPolicy
}

// parseSpreadConstraints returns the constraints with the action. The keys
// of matchLabelKeys join the selector with the pod's values. A selector
// that does not parse selects nothing.
func parseSpreadConstraints(cs []v1.TopologySpreadConstraint, podLabels map[string]string, action v1.UnsatisfiableConstraintAction) []spreadConstraint {
	var out []spreadConstraint
	for _, c := range cs {
		if c.WhenUnsatisfiable != action {
			continue
		}
		sc := spreadConstraint{
			maxSkew: c.MaxSkew, minDomains: 1, topologyKey: c.TopologyKey,
			selector:           parseSelector(c.LabelSelector),
			nodeAffinityPolicy: v1.NodeInclusionPolicyHonor, nodeTaintsPolicy: v1.NodeInclusionPolicyIgnore,
		}
		if c.MinDomains != nil {
			sc.minDomains = *c.MinDomains
		}
		if c.NodeAffinityPolicy != nil {
			sc.nodeAffinityPolicy = *c.NodeAffinityPolicy
		}
		if c.NodeTaintsPolicy != nil {
			sc.nodeTaintsPolicy = *c.NodeTaintsPolicy
		}
		match := labels.Set{}
		for _, k := range c.MatchLabelKeys {
			if v, ok := podLabels[k]; ok {
				match[k] = v
			}
		}
		if len(match) > 0 {
			merged := labels.SelectorFromSet(match)
			if reqs, ok := sc.selector.Requirements(); ok {
				merged = merged.Add(reqs...)
			}
			sc.selector = merged
		}
		out = append(out, sc)
	}
	return out
}

// counts reports whether the constraint counts the pods of the node.
func (c *spreadConstraint) counts(pod *PodInfo, node *NodeInfo) bool {
	if c.nodeAffinityPolicy == v1.NodeInclusionPolicyHonor && len((NodeAffinity{}).Filter(pod, node)) > 0 {
		return false
	}
	return c.nodeTaintsPolicy != v1.NodeInclusionPolicyHonor || !untoleratedTaint(pod, node)
}

// untoleratedTaint: the node has a NoSchedule or NoExecute taint the pod
// does not tolerate, counting the taints Kubernetes puts on cordoned and
// not ready nodes.
func untoleratedTaint(pod *PodInfo, node *NodeInfo) bool {
	return len((NodeUnschedulable{}).Filter(pod, node)) > 0 || len((NodeReady{}).Filter(pod, node)) > 0 ||
		len((TaintToleration{}).Filter(pod, node)) > 0
}

// hasTopologyKeys: the node has the label of each constraint.
func hasTopologyKeys(node *v1.Node, cs []spreadConstraint) bool {
	for _, c := range cs {
		if _, ok := node.Labels[c.topologyKey]; !ok {
			return false
		}
	}
	return true
}

// countMatching counts the pods of the namespace the selector selects,
// leaving out those being deleted.
func countMatching(pods []*PodInfo, selector labels.Selector, ns string) int {
	n := 0
	for _, p := range pods {
		if p.Pod.DeletionTimestamp == nil && p.Pod.Namespace == ns && selector.Matches(labels.Set(p.Pod.Labels)) {
			n++
		}
	}
	return n
}

// PodTopologySpread is Kubernetes' PodTopologySpread plugin. Each of a
// pod's topologySpreadConstraints limits the skew, the number of selected
// pods in a topology domain minus the smallest number in any domain (0
// while there are fewer than minDomains domains), with the pod placed:
// DoNotSchedule constraints filter, ScheduleAnyway ones score. A pod
// without constraints has the default ones, ScheduleAnyway by hostname
// (maxSkew 3) and zone (maxSkew 5), over the pods its Services and
// controller select.
type PodTopologySpread struct {
	// Listers give the default selector; nil: no default spreading.
	Listers *Listers
}

func (PodTopologySpread) Name() string { return "PodTopologySpread" }

// constraints are the pod's constraints with the action, or the default
// ones.
func (pl PodTopologySpread) constraints(pod *v1.Pod, action v1.UnsatisfiableConstraintAction) []spreadConstraint {
	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		return parseSpreadConstraints(pod.Spec.TopologySpreadConstraints, pod.Labels, action)
	}
	cs := parseSpreadConstraints(defaultSpreadConstraints, pod.Labels, action)
	if len(cs) == 0 || pl.Listers == nil {
		return nil
	}
	selector := pl.Listers.defaultSelector(pod)
	if selector.Empty() {
		return nil
	}
	for i := range cs {
		cs[i].selector = selector
	}
	return cs
}

// PreFilter counts the selected pods of each topology domain, on the nodes
// that have every constraint's topology key.
func (pl PodTopologySpread) PreFilter(pod *PodInfo, nodes []*NodeInfo) NodeFilter {
	cs := pl.constraints(pod.Pod, v1.DoNotSchedule)
	if len(cs) == 0 {
		return nil
	}
	// counts[i*len(cs)+j]: the pods of node i constraint j selects, -1
	// when it does not count the node.
	counts := make([]int, len(nodes)*len(cs))
	parallelize(len(nodes), func(i int) {
		n, counts := nodes[i], counts[i*len(cs):(i+1)*len(cs)]
		for j := range cs {
			counts[j] = -1
			if hasTopologyKeys(n.Node, cs) && cs[j].counts(pod, n) {
				counts[j] = countMatching(n.Pods, cs[j].selector, pod.Pod.Namespace)
			}
		}
	})
	domains := make([]map[string]int, len(cs))
	for j := range cs {
		domains[j] = map[string]int{}
	}
	for i, n := range counts {
		if c := &cs[i%len(cs)]; n >= 0 {
			domains[i%len(cs)][nodes[i/len(cs)].Node.Labels[c.topologyKey]] += n
		}
	}
	minMatch, self := make([]int, len(cs)), make([]int, len(cs))
	for j, c := range cs {
		minMatch[j] = math.MaxInt32
		for _, n := range domains[j] {
			minMatch[j] = min(minMatch[j], n)
		}
		if len(domains[j]) < int(c.minDomains) {
			minMatch[j] = 0
		}
		if c.selector.Matches(labels.Set(pod.Pod.Labels)) {
			self[j] = 1
		}
	}
	return func(node *NodeInfo) []string {
		for j, c := range cs {
			v, ok := node.Node.Labels[c.topologyKey]
			if !ok {
				return []string{ReasonTopologySpreadMissingLabel}
			}
			if domains[j][v]+self[j]-minMatch[j] > int(c.maxSkew) {
				return []string{ReasonTopologySpread}
			}
		}
		return nil
	}
}

// PreScore counts the selected pods of the topology domains of the nodes
// that passed the filters (by hostname: per node, when scoring). A node
// scores less the more selected pods its domains hold, each domain's count
// weighted by the log of the number of domains, softened by maxSkew. With
// its own constraints, a pod's nodes that lack a topology key score 0; the
// default constraints spread over hostnames where nodes have no zone.
func (pl PodTopologySpread) PreScore(pod *PodInfo, feasible, all []*NodeInfo) *NodeScorer {
	cs := pl.constraints(pod.Pod, v1.ScheduleAnyway)
	if len(cs) == 0 || len(all) == 0 {
		return nil
	}
	requireAll := len(pod.Pod.Spec.TopologySpreadConstraints) > 0
	ignored := func(n *NodeInfo) bool { return requireAll && !hasTopologyKeys(n.Node, cs) }
	domains := make([]map[string]*int64, len(cs))
	for j := range cs {
		domains[j] = map[string]*int64{}
	}
	scored := 0
	for _, n := range feasible {
		if ignored(n) {
			continue
		}
		scored++
		for j, c := range cs {
			if v := n.Node.Labels[c.topologyKey]; c.topologyKey != v1.LabelHostname && domains[j][v] == nil {
				domains[j][v] = new(int64)
			}
		}
	}
	weights := make([]float64, len(cs))
	for j, c := range cs {
		size := len(domains[j])
		if c.topologyKey == v1.LabelHostname {
			size = scored
		}
		weights[j] = math.Log(float64(size + 2))
	}
	parallelize(len(all), func(i int) {
		n := all[i]
		if ignored(n) {
			return
		}
		for j := range cs {
			c := &cs[j]
			if c.topologyKey == v1.LabelHostname || !c.counts(pod, n) {
				continue
			}
			if count := domains[j][n.Node.Labels[c.topologyKey]]; count != nil {
				atomic.AddInt64(count, int64(countMatching(n.Pods, c.selector, pod.Pod.Namespace)))
			}
		}
	})
	return &NodeScorer{
		Score: func(n *NodeInfo) int64 {
			if ignored(n) {
				return -1
			}
			var score float64
			for j, c := range cs {
				v, ok := n.Node.Labels[c.topologyKey]
				if !ok {
					continue
				}
				var count int64
				if c.topologyKey == v1.LabelHostname {
					count = int64(countMatching(n.Pods, c.selector, pod.Pod.Namespace))
				} else {
					count = *domains[j][v]
				}
				score += float64(count)*weights[j] + float64(c.maxSkew-1)
			}
			return int64(math.Round(score))
		},
		Normalize: normalizeSpreadScores,
	}
}

// normalizeSpreadScores turns counts into scores: the lowest count scores
// highest, MaxNodeScore × (highest + lowest − count) / highest; ignored
// nodes (negative) score 0.
func normalizeSpreadScores(scores []int64) {
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, s := range scores {
		if s >= 0 {
			lo, hi = min(lo, s), max(hi, s)
		}
	}
	for i, s := range scores {
		switch {
		case s < 0:
			scores[i] = 0
		case hi == 0:
			scores[i] = MaxNodeScore
		default:
			scores[i] = MaxNodeScore * (hi + lo - s) / hi
		}
	}
}

var (
	_ PreFilterPlugin = PodTopologySpread{}
	_ PreScorePlugin  = PodTopologySpread{}
)
