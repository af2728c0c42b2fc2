package scheduler

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// node returns a Ready node with allocatable cpu, memory and pods; opts
// adjust it.
func node(name, cpu, memory string, pods int64, opts ...func(*v1.Node)) *v1.Node {
	alloc := v1.ResourceList{v1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)}
	if cpu != "" {
		alloc[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		alloc[v1.ResourceMemory] = resource.MustParse(memory)
	}
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}},
		Status: v1.NodeStatus{
			Allocatable: alloc, Capacity: alloc,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func withLabels(kv ...string) func(*v1.Node) {
	return func(n *v1.Node) {
		for i := 0; i+1 < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
	}
}

func withTaints(taints ...v1.Taint) func(*v1.Node) {
	return func(n *v1.Node) { n.Spec.Taints = append(n.Spec.Taints, taints...) }
}

func withAllocatable(name v1.ResourceName, q string) func(*v1.Node) {
	return func(n *v1.Node) { n.Status.Allocatable[name] = resource.MustParse(q) }
}

func withReady(s v1.ConditionStatus) func(*v1.Node) {
	return func(n *v1.Node) {
		if s == "" {
			n.Status.Conditions = nil
			return
		}
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: s}}
	}
}

func cordoned(n *v1.Node) { n.Spec.Unschedulable = true }

// pod returns a pod with one container requesting cpu and memory (empty:
// no request); opts adjust it.
func pod(name, cpu, memory string, opts ...func(*v1.Pod)) *v1.Pod {
	req := v1.ResourceList{}
	if cpu != "" {
		req[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		req[v1.ResourceMemory] = resource.MustParse(memory)
	}
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{
			SchedulerName: v1.DefaultSchedulerName,
			Containers:    []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req}}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func onNode(name string) func(*v1.Pod) { return func(p *v1.Pod) { p.Spec.NodeName = name } }

func tolerating(t ...v1.Toleration) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, t...) }
}

func selecting(kv ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.NodeSelector = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Spec.NodeSelector[kv[i]] = kv[i+1]
		}
	}
}

func requiring(terms ...v1.NodeSelectorTerm) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms},
		}}
	}
}

func preferring(terms ...v1.PreferredSchedulingTerm) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: terms,
		}}
	}
}

func hostPorts(ports ...v1.ContainerPort) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, ports...) }
}

func requesting(name v1.ResourceName, q string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests[name] = resource.MustParse(q) }
}

func withInit(cpu, memory string, sidecar bool) func(*v1.Pod) {
	return func(p *v1.Pod) {
		c := v1.Container{Name: "init", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory),
		}}}
		if sidecar {
			always := v1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
}

func withOverhead(cpu, memory string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory)}
	}
}

func expr(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirement {
	return v1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func labelled(kv ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func inNamespace(ns string) func(*v1.Pod) { return func(p *v1.Pod) { p.Namespace = ns } }

func terminating(p *v1.Pod) {
	now := metav1.Now()
	p.DeletionTimestamp = &now
}

// ownedBy makes a controller the pod's controller.
func ownedBy(apiVersion, kind, name string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		yes := true
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
			APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("uid-" + name), Controller: &yes,
		})
	}
}

// podTerm selects the pods with the labels kv, in the pod's namespace.
func podTerm(topologyKey string, kv ...string) v1.PodAffinityTerm {
	ml := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		ml[kv[i]] = kv[i+1]
	}
	return v1.PodAffinityTerm{TopologyKey: topologyKey, LabelSelector: &metav1.LabelSelector{MatchLabels: ml}}
}

func weighted(weight int32, t v1.PodAffinityTerm) v1.WeightedPodAffinityTerm {
	return v1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: t}
}

// affinity sets the pod affinity (anti: anti-affinity) terms, leaving the
// rest of spec.affinity as it is.
func affinity(anti bool, required []v1.PodAffinityTerm, preferred ...v1.WeightedPodAffinityTerm) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &v1.Affinity{}
		}
		if anti {
			p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: required, PreferredDuringSchedulingIgnoredDuringExecution: preferred,
			}
			return
		}
		p.Spec.Affinity.PodAffinity = &v1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: required, PreferredDuringSchedulingIgnoredDuringExecution: preferred,
		}
	}
}

func requirePods(terms ...v1.PodAffinityTerm) func(*v1.Pod) { return affinity(false, terms) }
func avoidPods(terms ...v1.PodAffinityTerm) func(*v1.Pod)   { return affinity(true, terms) }
func preferPods(terms ...v1.WeightedPodAffinityTerm) func(*v1.Pod) {
	return affinity(false, nil, terms...)
}
func preferAvoidPods(terms ...v1.WeightedPodAffinityTerm) func(*v1.Pod) {
	return affinity(true, nil, terms...)
}

func spreading(cs ...v1.TopologySpreadConstraint) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, cs...) }
}

// spread is a constraint over the pods with the labels kv.
func spread(maxSkew int32, key string, action v1.UnsatisfiableConstraintAction, kv ...string) v1.TopologySpreadConstraint {
	ml := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		ml[kv[i]] = kv[i+1]
	}
	return v1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: action,
		LabelSelector: &metav1.LabelSelector{MatchLabels: ml}}
}

// cluster returns the nodes' infos with the pods on the node their
// spec.nodeName names.
func cluster(nodes []*v1.Node, pods ...*v1.Pod) []*NodeInfo {
	var out []*NodeInfo
	for _, n := range nodes {
		var on []*v1.Pod
		for _, p := range pods {
			if p.Spec.NodeName == n.Name {
				on = append(on, p)
			}
		}
		out = append(out, NewNodeInfo(n, on...))
	}
	return out
}

// listersOf returns listers of the objects (namespaces, services,
// replication controllers, replica sets, stateful sets).
func listersOf(objs ...runtime.Object) *Listers {
	index := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	ns, svc, rc, rs, ss := index(), index(), index(), index(), index()
	for _, o := range objs {
		var err error
		switch o.(type) {
		case *v1.Namespace:
			err = ns.Add(o)
		case *v1.Service:
			err = svc.Add(o)
		case *v1.ReplicationController:
			err = rc.Add(o)
		case *appsv1.ReplicaSet:
			err = rs.Add(o)
		case *appsv1.StatefulSet:
			err = ss.Add(o)
		default:
			panic(fmt.Sprintf("listersOf: %T", o))
		}
		if err != nil {
			panic(err)
		}
	}
	return &Listers{
		Namespaces: corelisters.NewNamespaceLister(ns), Services: corelisters.NewServiceLister(svc),
		ReplicationControllers: corelisters.NewReplicationControllerLister(rc),
		ReplicaSets:            appslisters.NewReplicaSetLister(rs), StatefulSets: appslisters.NewStatefulSetLister(ss),
	}
}

func namespace(name string, kv ...string) *v1.Namespace {
	n := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Labels[kv[i]] = kv[i+1]
	}
	return n
}

func replicaSet(name string, kv ...string) *appsv1.ReplicaSet {
	ml := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		ml[kv[i]] = kv[i+1]
	}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: ml}},
	}
}
