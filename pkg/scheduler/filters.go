package scheduler

import (
	"fmt"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// A FilterPlugin decides whether a pod may run on a node. It returns why
// not, in Kubernetes' words; nothing means it may.
type FilterPlugin interface {
	Name() string
	Filter(pod *PodInfo, node *NodeInfo) []string
}

// A PreFilterPlugin is a filter that depends on the pods of other nodes.
// Once per attempt, PreFilter looks at every node and returns the check of
// one node; nil when the pod has nothing to check.
type PreFilterPlugin interface {
	Name() string
	PreFilter(pod *PodInfo, nodes []*NodeInfo) NodeFilter
}

// NodeFilter is the check of one node in one attempt: why the pod may not
// run there, or nothing.
type NodeFilter func(node *NodeInfo) []string

// The reasons, worded as kube-scheduler words them.
const (
	ReasonUnschedulable    = "node(s) were unschedulable"
	ReasonNodeName         = "node(s) didn't match the requested node name"
	ReasonNodeAffinity     = "node(s) didn't match Pod's node affinity/selector"
	ReasonNodePorts        = "node(s) didn't have free ports for the requested pod ports"
	ReasonTooManyPods      = "Too many pods"
	reasonUntoleratedTaint = "node(s) had untolerated taint {%s: %s}"
	reasonInsufficient     = "Insufficient %s"
)

// DefaultFilters are the filters in the order they run: a node is rejected
// by the first that has reasons.
func DefaultFilters() []FilterPlugin {
	return []FilterPlugin{
		NodeUnschedulable{}, NodeReady{}, NodeName{}, TaintToleration{},
		NodeAffinity{}, NodePorts{}, NodeResourcesFit{},
	}
}

// DefaultPreFilters are the filters that look at other nodes' pods; they
// run after DefaultFilters, in this order, as in Kubernetes.
func DefaultPreFilters(l *Listers) []PreFilterPlugin {
	return []PreFilterPlugin{VolumeBinding{Listers: &l.Volumes}, PodTopologySpread{Listers: l}, InterPodAffinity{Namespaces: l.Namespaces}}
}

// A PodRejecter is a PreFilterPlugin that can keep a pod off every node
// before any node is looked at (a claim missing or unbound): its message
// is the attempt's, as Kubernetes reports a PreFilter's rejection.
type PodRejecter interface {
	RejectPod(pod *PodInfo) string
}

// tolerates reports whether the tolerations tolerate the taint. Tolerations
// with the alpha Gt/Lt operators tolerate nothing, as in Kubernetes with
// the TaintTolerationComparisonOperators gate off.
func tolerates(tolerations []v1.Toleration, taint *v1.Taint) bool {
	return corev1helpers.TolerationsTolerateTaint(logr.Discard(), tolerations, taint, false)
}

// NodeUnschedulable rejects cordoned nodes (spec.unschedulable) unless the
// pod tolerates node.kubernetes.io/unschedulable:NoSchedule.
type NodeUnschedulable struct{}

func (NodeUnschedulable) Name() string { return "NodeUnschedulable" }

func (NodeUnschedulable) Filter(pod *PodInfo, node *NodeInfo) []string {
	if !node.Node.Spec.Unschedulable {
		return nil
	}
	if tolerates(pod.Pod.Spec.Tolerations, &v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}) {
		return nil
	}
	return []string{ReasonUnschedulable}
}

// NodeReady treats a node whose Ready condition is not True as Kubernetes'
// node lifecycle controller would taint it: node.kubernetes.io/not-ready
// when False, node.kubernetes.io/unreachable when Unknown or missing, with
// effect NoSchedule. When the node already carries that taint,
// TaintToleration judges it instead.
type NodeReady struct{}

func (NodeReady) Name() string { return "NodeReady" }

func (NodeReady) Filter(pod *PodInfo, node *NodeInfo) []string {
	taint, ok := readinessTaint(node.Node)
	if !ok || tolerates(pod.Pod.Spec.Tolerations, &taint) {
		return nil
	}
	return []string{fmt.Sprintf(reasonUntoleratedTaint, taint.Key, taint.Value)}
}

// readinessTaint returns the taint a node that is not Ready stands for.
func readinessTaint(node *v1.Node) (v1.Taint, bool) {
	key := v1.TaintNodeUnreachable
	for _, c := range node.Status.Conditions {
		if c.Type != v1.NodeReady {
			continue
		}
		if c.Status == v1.ConditionTrue {
			return v1.Taint{}, false
		}
		if c.Status == v1.ConditionFalse {
			key = v1.TaintNodeNotReady
		}
		break
	}
	for _, t := range node.Spec.Taints {
		if t.Key == key {
			return v1.Taint{}, false
		}
	}
	return v1.Taint{Key: key, Effect: v1.TaintEffectNoSchedule}, true
}

// NodeName: a pod that names its node fits that node only.
type NodeName struct{}

func (NodeName) Name() string { return "NodeName" }

func (NodeName) Filter(pod *PodInfo, node *NodeInfo) []string {
	if pod.Pod.Spec.NodeName == "" || pod.Pod.Spec.NodeName == node.Node.Name {
		return nil
	}
	return []string{ReasonNodeName}
}

// TaintToleration rejects nodes with a NoSchedule or NoExecute taint the
// pod does not tolerate, naming the first one.
type TaintToleration struct{}

func (TaintToleration) Name() string { return "TaintToleration" }

func (TaintToleration) Filter(pod *PodInfo, node *NodeInfo) []string {
	for i := range node.Node.Spec.Taints {
		t := &node.Node.Spec.Taints[i]
		if t.Effect != v1.TaintEffectNoSchedule && t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		if !tolerates(pod.Pod.Spec.Tolerations, t) {
			return []string{fmt.Sprintf(reasonUntoleratedTaint, t.Key, t.Value)}
		}
	}
	return nil
}

// NodeAffinity checks spec.nodeSelector and the required node affinity
// (matchExpressions over labels, matchFields over metadata.name).
type NodeAffinity struct{}

func (NodeAffinity) Name() string { return "NodeAffinity" }

func (NodeAffinity) Filter(pod *PodInfo, node *NodeInfo) []string {
	// An error (a term validation should have refused) does not match.
	if ok, _ := pod.requiredAffinity.Match(node.Node); ok {
		return nil
	}
	return []string{ReasonNodeAffinity}
}

// NodePorts rejects nodes where one of the pod's host ports is taken.
type NodePorts struct{}

func (NodePorts) Name() string { return "NodePorts" }

func (NodePorts) Filter(pod *PodInfo, node *NodeInfo) []string {
	for _, hp := range pod.HostPorts {
		if node.portConflict(hp) {
			return []string{ReasonNodePorts}
		}
	}
	return nil
}

// NodeResourcesFit compares the pod's requests with what the node has left
// of its allocatable resources: one reason per resource that is short.
type NodeResourcesFit struct{}

func (NodeResourcesFit) Name() string { return "NodeResourcesFit" }

func (NodeResourcesFit) Filter(pod *PodInfo, node *NodeInfo) []string {
	var reasons []string
	alloc, used, req := &node.Allocatable, &node.Requested, &pod.Requests
	if int64(len(node.Pods))+1 > alloc.AllowedPodNumber {
		reasons = append(reasons, ReasonTooManyPods)
	}
	if req.MilliCPU == 0 && req.Memory == 0 && req.EphemeralStorage == 0 && len(req.Scalar) == 0 {
		return reasons
	}
	if req.MilliCPU > 0 && req.MilliCPU > alloc.MilliCPU-used.MilliCPU {
		reasons = append(reasons, fmt.Sprintf(reasonInsufficient, v1.ResourceCPU))
	}
	if req.Memory > 0 && req.Memory > alloc.Memory-used.Memory {
		reasons = append(reasons, fmt.Sprintf(reasonInsufficient, v1.ResourceMemory))
	}
	if req.EphemeralStorage > 0 && req.EphemeralStorage > alloc.EphemeralStorage-used.EphemeralStorage {
		reasons = append(reasons, fmt.Sprintf(reasonInsufficient, v1.ResourceEphemeralStorage))
	}
	for name, q := range req.Scalar {
		if q == 0 {
			continue
		}
		if q > alloc.Scalar[name]-used.Scalar[name] {
			reasons = append(reasons, fmt.Sprintf(reasonInsufficient, name))
		}
	}
	return reasons
}

// Compile-time checks.
var (
	_ FilterPlugin = NodeUnschedulable{}
	_ FilterPlugin = NodeReady{}
	_ FilterPlugin = NodeName{}
	_ FilterPlugin = TaintToleration{}
	_ FilterPlugin = NodeAffinity{}
	_ FilterPlugin = NodePorts{}
	_ FilterPlugin = NodeResourcesFit{}
)
