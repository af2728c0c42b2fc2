package scheduler

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
