package replicaset

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// testPod is a pod with the given name (also its UID), node, phase and
// readiness; mutate sets the rest.
func testPod(name, node string, phase corev1.PodPhase, ready bool, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: phase},
	}
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))}}
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func created(ago time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(-ago)) }
}

func readyFor(ago time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-ago)) }
}

func restarts(n int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: n}}
	}
}

func cost(v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{AnnotationPodDeletionCost: v} }
}

func TestPodsToDelete(t *testing.T) {
	cases := []struct {
		name    string
		pods    []*corev1.Pod
		related []*corev1.Pod // nil: the pods themselves
		n       int
		want    []string
	}{
		{
			name: "unscheduled before scheduled",
			pods: []*corev1.Pod{testPod("sched", "n1", corev1.PodPending, false), testPod("unsched", "", corev1.PodPending, false)},
			n:    1, want: []string{"unsched"},
		},
		{
			name: "pending before unknown before running",
			pods: []*corev1.Pod{
				testPod("running", "n1", corev1.PodRunning, false), testPod("unknown", "n2", corev1.PodUnknown, false),
				testPod("pending", "n3", corev1.PodPending, false),
			},
			n: 2, want: []string{"pending", "unknown"},
		},
		{
			name: "not ready before ready",
			pods: []*corev1.Pod{testPod("ready", "n1", corev1.PodRunning, true), testPod("notready", "n2", corev1.PodRunning, false)},
			n:    1, want: []string{"notready"},
		},
		{
			name: "lower deletion cost first",
			pods: []*corev1.Pod{
				testPod("cheap", "n1", corev1.PodRunning, true, cost("-5")), testPod("default", "n2", corev1.PodRunning, true),
				testPod("dear", "n3", corev1.PodRunning, true, cost("100")),
			},
			n: 2, want: []string{"cheap", "default"},
		},
		{
			name: "doubled-up node first",
			pods: []*corev1.Pod{
				testPod("alone", "n1", corev1.PodRunning, true, readyFor(time.Second)),
				testPod("crowded", "n2", corev1.PodRunning, true, readyFor(10*time.Hour)),
			},
			related: []*corev1.Pod{
				testPod("alone", "n1", corev1.PodRunning, true), testPod("crowded", "n2", corev1.PodRunning, true),
				testPod("sibling", "n2", corev1.PodRunning, true),
			},
			n: 1, want: []string{"crowded"},
		},
		{
			name: "ready for less time first",
			pods: []*corev1.Pod{
				testPod("old", "n1", corev1.PodRunning, true, readyFor(10*time.Hour)),
				testPod("new", "n2", corev1.PodRunning, true, readyFor(time.Minute)),
			},
			n: 1, want: []string{"new"},
		},
		{
			name: "more restarts first",
			pods: []*corev1.Pod{testPod("calm", "n1", corev1.PodRunning, true), testPod("flaky", "n2", corev1.PodRunning, true, restarts(4))},
			n:    1, want: []string{"flaky"},
		},
		{
			name: "newer first",
			pods: []*corev1.Pod{
				testPod("older", "n1", corev1.PodPending, false, created(10*time.Hour)),
				testPod("newer", "n2", corev1.PodPending, false, created(time.Minute)),
			},
			n: 1, want: []string{"newer"},
		},
		{
			name: "same log2 age ties go by UID",
			pods: []*corev1.Pod{
				testPod("b", "n1", corev1.PodPending, false, created(70*time.Second)),
				testPod("a", "n2", corev1.PodPending, false, created(80*time.Second)),
			},
			n: 1, want: []string{"a"},
		},
		{
			name: "phase outranks readiness and age",
			pods: []*corev1.Pod{
				testPod("running-notready", "n1", corev1.PodRunning, false, created(time.Second)),
				testPod("pending-old", "n2", corev1.PodPending, false, created(100*time.Hour)),
			},
			n: 1, want: []string{"pending-old"},
		},
		{
			name: "all of them",
			pods: []*corev1.Pod{testPod("x", "n1", corev1.PodRunning, true), testPod("y", "n1", corev1.PodRunning, true)},
			n:    5, want: []string{"x", "y"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			related := tc.related
			if related == nil {
				related = tc.pods
			}
			got := podsToDelete(tc.pods, related, tc.n, t0)
			var names []string
			for _, p := range got {
				names = append(names, p.Name)
			}
			if len(names) != len(tc.want) {
				t.Fatalf("deleted %v, want %v", names, tc.want)
			}
			for i := range names {
				if names[i] != tc.want[i] {
					t.Fatalf("deleted %v, want %v", names, tc.want)
				}
			}
		})
	}
}

func TestSlowStartBatch(t *testing.T) {
	cases := []struct {
		name        string
		count       int
		failFrom    int // the call number (1-based) from which calls fail; 0: none
		wantOK      int
		wantCalls   int
		wantFailure bool
	}{
		{name: "all succeed", count: 10, wantOK: 10, wantCalls: 10},
		{name: "none to do", count: 0, wantOK: 0, wantCalls: 0},
		{name: "first call fails: nothing more is tried", count: 10, failFrom: 1, wantOK: 0, wantCalls: 1, wantFailure: true},
		// Batches 1, 2, 4: the fourth call is in the third batch, which
		// runs whole and stops the rest.
		{name: "failure in the third batch", count: 20, failFrom: 4, wantOK: 3, wantCalls: 7, wantFailure: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			ok, err := slowStartBatch(tc.count, 1, func() error {
				if n := calls.Add(1); tc.failFrom > 0 && int(n) >= tc.failFrom {
					return errors.New("forbidden")
				}
				return nil
			})
			if ok != tc.wantOK || int(calls.Load()) != tc.wantCalls || (err != nil) != tc.wantFailure {
				t.Fatalf("got ok=%d calls=%d err=%v; want ok=%d calls=%d failure=%v", ok, calls.Load(), err, tc.wantOK, tc.wantCalls, tc.wantFailure)
			}
		})
	}
}
