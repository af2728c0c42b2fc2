package kit

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition is one of the status condition types the controllers keep.
type Condition interface {
	appsv1.DeploymentCondition | appsv1.ReplicaSetCondition | batchv1.JobCondition |
		autoscalingv2.HorizontalPodAutoscalerCondition | corev1.NodeCondition | corev1.PodCondition
}

// fields are pointers to what the helpers read and write of a condition.
type fields struct {
	typ        string
	status     corev1.ConditionStatus
	reason     string
	transition *metav1.Time
}

func fieldsOf[C Condition](c *C) fields {
	switch c := any(c).(type) {
	case *appsv1.DeploymentCondition:
		return fields{string(c.Type), c.Status, c.Reason, &c.LastTransitionTime}
	case *appsv1.ReplicaSetCondition:
		return fields{string(c.Type), c.Status, c.Reason, &c.LastTransitionTime}
	case *batchv1.JobCondition:
		return fields{string(c.Type), c.Status, c.Reason, &c.LastTransitionTime}
	case *autoscalingv2.HorizontalPodAutoscalerCondition:
		return fields{string(c.Type), c.Status, c.Reason, &c.LastTransitionTime}
	case *corev1.NodeCondition:
		return fields{string(c.Type), c.Status, c.Reason, &c.LastTransitionTime}
	case *corev1.PodCondition:
		return fields{string(c.Type), c.Status, c.Reason, &c.LastTransitionTime}
	}
	panic("unreachable")
}

// GetCondition is the condition of type t in conds; nil when there is
// none. It points into conds.
func GetCondition[C Condition, T ~string](conds []C, t T) *C {
	for i := range conds {
		if fieldsOf(&conds[i]).typ == string(t) {
			return &conds[i]
		}
	}
	return nil
}

// IsConditionTrue: conds has a condition of type t with status True.
func IsConditionTrue[C Condition, T ~string](conds []C, t T) bool {
	c := GetCondition(conds, t)
	return c != nil && fieldsOf(c).status == corev1.ConditionTrue
}

// SetCondition adds c to conds, or replaces the condition of its type
// (moving it last). The same status and reason leave conds as they are;
// the same status keeps the old transition time.
func SetCondition[C Condition](conds []C, c C) []C {
	next := fieldsOf(&c)
	if cur := GetCondition(conds, next.typ); cur != nil {
		old := fieldsOf(cur)
		if old.status == next.status && old.reason == next.reason {
			return conds
		}
		if old.status == next.status {
			*next.transition = *old.transition
		}
	}
	return append(RemoveCondition(conds, next.typ), c)
}

// RemoveCondition is conds without the condition of type t (nil when
// none is left).
func RemoveCondition[C Condition, T ~string](conds []C, t T) []C {
	var kept []C
	for i := range conds {
		if fieldsOf(&conds[i]).typ != string(t) {
			kept = append(kept, conds[i])
		}
	}
	return kept
}
