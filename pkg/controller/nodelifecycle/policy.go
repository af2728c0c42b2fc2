package nodelifecycle

import (
	"math"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons and messages, as Kubernetes writes them.
const (
	reasonNodeStatusUnknown      = "NodeStatusUnknown"
	messageNodeStatusUnknown     = "Kubelet stopped posting node status."
	reasonNodeStatusNeverUpdated = "NodeStatusNeverUpdated"
	messageNeverUpdated          = "Kubelet never posted node status."
)

// monitoredConditions are the conditions the kubelet posts and the
// controller marks Unknown when it stops.
var monitoredConditions = []corev1.NodeConditionType{
	corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure,
}

func condition(node *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// markUnknown returns node with its monitored conditions set to Unknown:
// missing ones are added (never updated), the others keep their last
// heartbeat and get a new transition time. wasReady tells whether Ready
// was True before.
func markUnknown(node *corev1.Node, now metav1.Time) (updated *corev1.Node, changed, wasReady bool) {
	updated = node.DeepCopy()
	for _, t := range monitoredConditions {
		c := condition(updated, t)
		if c == nil {
			updated.Status.Conditions = append(updated.Status.Conditions, corev1.NodeCondition{
				Type: t, Status: corev1.ConditionUnknown,
				Reason: reasonNodeStatusNeverUpdated, Message: messageNeverUpdated,
				LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: now,
			})
			changed = true
			continue
		}
		if c.Status == corev1.ConditionUnknown {
			continue
		}
		if t == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			wasReady = true
		}
		c.Status, c.Reason, c.Message, c.LastTransitionTime = corev1.ConditionUnknown, reasonNodeStatusUnknown, messageNodeStatusUnknown, now
		changed = true
	}
	return updated, changed, wasReady
}

// conditionTaints are the NoSchedule taints that mirror a condition
// being True.
var conditionTaints = map[corev1.NodeConditionType]string{
	corev1.NodeMemoryPressure:     corev1.TaintNodeMemoryPressure,
	corev1.NodeDiskPressure:       corev1.TaintNodeDiskPressure,
	corev1.NodePIDPressure:        corev1.TaintNodePIDPressure,
	corev1.NodeNetworkUnavailable: corev1.TaintNodeNetworkUnavailable,
}

// managed tells whether the controller owns a taint: it adds and removes
// it according to the node's conditions.
func managed(t corev1.Taint) bool {
	switch t.Key {
	case corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable:
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	case corev1.TaintNodeMemoryPressure, corev1.TaintNodeDiskPressure, corev1.TaintNodePIDPressure,
		corev1.TaintNodeNetworkUnavailable, corev1.TaintNodeUnschedulable:
		return t.Effect == corev1.TaintEffectNoSchedule
	}
	return false
}

// desiredTaints are the managed taints the node's conditions call for.
func desiredTaints(node *corev1.Node) []corev1.Taint {
	var out []corev1.Taint
	both := func(key string) {
		out = append(out, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule},
			corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute})
	}
	if ready := condition(node, corev1.NodeReady); ready != nil {
		switch ready.Status {
		case corev1.ConditionFalse:
			both(corev1.TaintNodeNotReady)
		case corev1.ConditionUnknown:
			both(corev1.TaintNodeUnreachable)
		}
	}
	for _, t := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure,
		corev1.NodePIDPressure, corev1.NodeNetworkUnavailable} {
		if c := condition(node, t); c != nil && c.Status == corev1.ConditionTrue {
			out = append(out, corev1.Taint{Key: conditionTaints[t], Effect: corev1.TaintEffectNoSchedule})
		}
	}
	if node.Spec.Unschedulable {
		out = append(out, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	}
	return out
}

// reconcileTaints returns the node's taints with the managed ones made
// equal to desired: present ones keep their value and timeAdded, missing
// ones are added with timeAdded now, others go. Unmanaged taints stay as
// they are, in place.
func reconcileTaints(current, desired []corev1.Taint, now metav1.Time) ([]corev1.Taint, bool) {
	want := func(t corev1.Taint) bool {
		for _, d := range desired {
			if d.MatchTaint(&t) {
				return true
			}
		}
		return false
	}
	var out []corev1.Taint
	changed := false
	for _, t := range current {
		if managed(t) && !want(t) {
			changed = true
			continue
		}
		out = append(out, t)
	}
	for _, d := range desired {
		found := false
		for _, t := range out {
			if t.MatchTaint(&d) {
				found = true
				break
			}
		}
		if !found {
			d.TimeAdded = &now
			out = append(out, d)
			changed = true
		}
	}
	return out, changed
}

// tolerationWindow says whether a pod with the given tolerations is to be
// evicted from a node with the given NoExecute taints, and after how
// long. A taint no toleration matches evicts at once. A taint is
// tolerated for as long as the most lenient matching toleration allows
// (no tolerationSeconds: forever); the pod goes when the first of its
// taints runs out.
func tolerationWindow(tolerations []corev1.Toleration, taints []corev1.Taint) (after time.Duration, evict bool) {
	after = time.Duration(math.MaxInt64)
	for i := range taints {
		taint := &taints[i]
		matched, forever := false, false
		var longest time.Duration
		for j := range tolerations {
			// Gt/Lt tolerations tolerate nothing, as in Kubernetes with the
			// TaintTolerationComparisonOperators gate off (and as our
			// scheduler judges them).
			if !tolerations[j].ToleratesTaint(logr.Discard(), taint, false) {
				continue
			}
			matched = true
			s := tolerations[j].TolerationSeconds
			if s == nil {
				forever = true
				break
			}
			if d := time.Duration(min(max(*s, 0), math.MaxInt64/int64(time.Second))) * time.Second; d > longest {
				longest = d
			}
		}
		switch {
		case !matched:
			return 0, true
		case forever:
			continue
		}
		evict = true
		after = min(after, longest)
	}
	if !evict {
		return 0, false
	}
	return after, true
}

// noExecuteTaints are the node's taints that evict pods.
func noExecuteTaints(node *corev1.Node) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}
