package podutil

import corev1 "k8s.io/api/core/v1"

// ReadyCondition is the Pod's Ready condition; nil when it has none.
func ReadyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// IsReady: the Pod's Ready condition is True.
func IsReady(p *corev1.Pod) bool {
	c := ReadyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsTerminal: the Pod has Succeeded or Failed.
func IsTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// IsActive: the Pod has not finished and is not being deleted.
func IsActive(p *corev1.Pod) bool { return !IsTerminal(p) && p.DeletionTimestamp == nil }

// IsTerminating: the Pod is being deleted but has not finished.
func IsTerminating(p *corev1.Pod) bool { return !IsTerminal(p) && p.DeletionTimestamp != nil }
