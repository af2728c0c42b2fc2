package scheduler

import (
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
)

// AdmitOnNode is the check a kubelet makes before it runs a pod bound to
// its node, against the pods it already runs there, as Kubernetes'
// kubelet runs the scheduler's general predicates: a pod bound by name
// (spec.nodeName set by its author) never met the scheduler. It returns
// the kubelet's reason and message for the first failure (OutOfcpu,
// NodePorts, NodeAffinity, NodeName), or empty strings.
func AdmitOnNode(pod *v1.Pod, node *v1.Node, running []*v1.Pod) (reason, message string) {
	pi := NewPodInfo(pod)
	ni := NewNodeInfo(node, running...)
	if reason, message := insufficientResource(pi, ni); reason != "" {
		return reason, message
	}
	for _, f := range []FilterPlugin{NodeName{}, NodePorts{}, NodeAffinity{}} {
		if reasons := f.Filter(pi, ni); len(reasons) > 0 {
			return f.Name(), fmt.Sprintf("Predicate %s failed: %s", f.Name(), reasons[0])
		}
	}
	return "", ""
}

// insufficientResource names the first resource the node lacks for the
// pod, in the kubelet's words ("OutOfcpu", "Node didn't have enough
// resource: cpu, requested: 500, used: 1800, capacity: 2000").
func insufficientResource(pod *PodInfo, node *NodeInfo) (reason, message string) {
	short := func(name v1.ResourceName, requested, used, capacity int64) (string, string) {
		return "OutOf" + string(name), fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
			name, requested, used, capacity)
	}
	alloc, used, req := &node.Allocatable, &node.Requested, &pod.Requests
	if n := int64(len(node.Pods)); n+1 > alloc.AllowedPodNumber {
		return short(v1.ResourcePods, 1, n, alloc.AllowedPodNumber)
	}
	if req.MilliCPU > 0 && req.MilliCPU > alloc.MilliCPU-used.MilliCPU {
		return short(v1.ResourceCPU, req.MilliCPU, used.MilliCPU, alloc.MilliCPU)
	}
	if req.Memory > 0 && req.Memory > alloc.Memory-used.Memory {
		return short(v1.ResourceMemory, req.Memory, used.Memory, alloc.Memory)
	}
	if req.EphemeralStorage > 0 && req.EphemeralStorage > alloc.EphemeralStorage-used.EphemeralStorage {
		return short(v1.ResourceEphemeralStorage, req.EphemeralStorage, used.EphemeralStorage, alloc.EphemeralStorage)
	}
	for _, name := range slices.Sorted(maps.Keys(req.Scalar)) {
		if q := req.Scalar[name]; q > 0 && q > alloc.Scalar[name]-used.Scalar[name] {
			return short(name, q, used.Scalar[name], alloc.Scalar[name])
		}
	}
	return "", ""
}
