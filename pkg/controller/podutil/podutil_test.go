package podutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodState(t *testing.T) {
	now := metav1.Now()
	pod := func(phase corev1.PodPhase, deleting bool, ready corev1.ConditionStatus) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: phase}}
		if deleting {
			p.DeletionTimestamp = &now
		}
		if ready != "" {
			p.Status.Conditions = []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: ready},
			}
		}
		return p
	}
	tests := []struct {
		name                                 string
		pod                                  *corev1.Pod
		ready, terminal, active, terminating bool
	}{
		{name: "pending", pod: pod(corev1.PodPending, false, ""), active: true},
		{name: "running, not ready", pod: pod(corev1.PodRunning, false, corev1.ConditionFalse), active: true},
		{name: "running, ready", pod: pod(corev1.PodRunning, false, corev1.ConditionTrue), ready: true, active: true},
		{name: "running, being deleted", pod: pod(corev1.PodRunning, true, corev1.ConditionTrue), ready: true, terminating: true},
		{name: "succeeded", pod: pod(corev1.PodSucceeded, false, corev1.ConditionFalse), terminal: true},
		{name: "failed, being deleted", pod: pod(corev1.PodFailed, true, ""), terminal: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsReady(tc.pod); got != tc.ready {
				t.Errorf("IsReady = %v, want %v", got, tc.ready)
			}
			if got := IsTerminal(tc.pod); got != tc.terminal {
				t.Errorf("IsTerminal = %v, want %v", got, tc.terminal)
			}
			if got := IsActive(tc.pod); got != tc.active {
				t.Errorf("IsActive = %v, want %v", got, tc.active)
			}
			if got := IsTerminating(tc.pod); got != tc.terminating {
				t.Errorf("IsTerminating = %v, want %v", got, tc.terminating)
			}
			if c := ReadyCondition(tc.pod); c != nil && c.Type != corev1.PodReady {
				t.Errorf("ReadyCondition is of type %s", c.Type)
			}
		})
	}
}
