package disruption

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func budget(minAvailable, maxUnavailable *intstr.IntOrString) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", Generation: 1},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: minAvailable, MaxUnavailable: maxUnavailable}}
}

func TestDesired(t *testing.T) {
	scaleOf := func(n int32) expectedScale { return func() (int32, error) { return n, nil } }
	failed := func() (int32, error) { return 0, errors.New("no scale") }
	for _, tc := range []struct {
		name                      string
		pdb                       *policyv1.PodDisruptionBudget
		pods                      int
		scale                     expectedScale
		wantExpected, wantDesired int32
		wantErr                   bool
	}{
		{"minAvailable count: the pods there", budget(ptr.To(intstr.FromInt32(2)), nil), 3, failed, 3, 2, false},
		{"minAvailable above the pods", budget(ptr.To(intstr.FromInt32(5)), nil), 3, failed, 3, 5, false},
		{"minAvailable percent rounds up", budget(ptr.To(intstr.FromString("50%")), nil), 3, scaleOf(5), 5, 3, false},
		{"minAvailable 100%", budget(ptr.To(intstr.FromString("100%")), nil), 2, scaleOf(4), 4, 4, false},
		{"maxUnavailable count", budget(nil, ptr.To(intstr.FromInt32(1))), 3, scaleOf(3), 3, 2, false},
		{"maxUnavailable above the scale", budget(nil, ptr.To(intstr.FromInt32(7))), 3, scaleOf(3), 3, 0, false},
		{"maxUnavailable percent rounds up", budget(nil, ptr.To(intstr.FromString("25%"))), 3, scaleOf(10), 10, 7, false},
		{"neither", budget(nil, nil), 3, failed, 0, 0, false},
		{"maxUnavailable without a scale", budget(nil, ptr.To(intstr.FromInt32(1))), 3, failed, 0, 0, true},
		{"minAvailable percent without a scale", budget(ptr.To(intstr.FromString("10%")), nil), 3, failed, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expected, desiredHealthy, err := desired(tc.pdb, tc.pods, tc.scale)
			if (err != nil) != tc.wantErr || expected != tc.wantExpected || desiredHealthy != tc.wantDesired {
				t.Errorf("desired = %d, %d, %v; want %d, %d, error %v", expected, desiredHealthy, err, tc.wantExpected, tc.wantDesired, tc.wantErr)
			}
		})
	}
}

func pod(name string, ready, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	if deleting {
		p.DeletionTimestamp = &metav1.Time{}
	}
	return p
}

func TestDisruptedPodsAndHealthy(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) metav1.Time { return metav1.NewTime(now.Add(-ago)) }
	pdb := budget(ptr.To(intstr.FromInt32(1)), nil)
	pdb.Status.DisruptedPods = map[string]metav1.Time{
		"recent":  at(30 * time.Second),
		"older":   at(90 * time.Second),
		"expired": at(3 * time.Minute),
		"going":   at(10 * time.Second),
		"gone":    at(10 * time.Second),
	}
	pods := []*corev1.Pod{pod("recent", true, false), pod("older", true, false), pod("expired", true, false),
		pod("going", true, true), pod("plain", true, false), pod("unready", false, false)}
	kept, recheck, expired := disruptedPods(pdb, pods, now)
	if len(kept) != 2 || kept["recent"] != at(30*time.Second) || kept["older"] != at(90*time.Second) {
		t.Errorf("kept = %v, want recent and older", kept)
	}
	if want := now.Add(30 * time.Second); !recheck.Equal(want) {
		t.Errorf("recheck = %v, want %v (when older expires)", recheck, want)
	}
	if len(expired) != 1 || expired[0] != "expired" {
		t.Errorf("expired = %v, want [expired]", expired)
	}
	// expired counts again; evicted, going and unready pods do not.
	if got := healthy(pods, kept); got != 2 {
		t.Errorf("healthy = %d, want 2 (expired, plain)", got)
	}
	if _, recheck, _ := disruptedPods(budget(nil, nil), pods, now); !recheck.IsZero() {
		t.Errorf("recheck without disrupted pods = %v, want zero", recheck)
	}
}

func TestWithStatus(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		current, desired, expected int32
		wantAllowed                int32
		wantStatus                 metav1.ConditionStatus
		wantReason                 string
	}{
		{"one to spare", 3, 2, 3, 1, metav1.ConditionTrue, policyv1.SufficientPodsReason},
		{"none to spare", 2, 2, 3, 0, metav1.ConditionFalse, policyv1.InsufficientPodsReason},
		{"below", 1, 2, 3, 0, metav1.ConditionFalse, policyv1.InsufficientPodsReason},
		{"no pods expected", 3, 0, 0, 0, metav1.ConditionFalse, policyv1.InsufficientPodsReason},
		{"minAvailable 0", 3, 0, 3, 3, metav1.ConditionTrue, policyv1.SufficientPodsReason},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pdb := budget(nil, nil)
			pdb.Generation = 4
			out := withStatus(pdb, tc.current, tc.desired, tc.expected, map[string]metav1.Time{})
			if out == nil {
				t.Fatal("no new status")
			}
			st := out.Status
			if st.DisruptionsAllowed != tc.wantAllowed || st.CurrentHealthy != tc.current || st.DesiredHealthy != tc.desired ||
				st.ExpectedPods != tc.expected || st.ObservedGeneration != 4 {
				t.Errorf("status = %+v", st)
			}
			c := apimeta.FindStatusCondition(st.Conditions, policyv1.DisruptionAllowedCondition)
			if c == nil || c.Status != tc.wantStatus || c.Reason != tc.wantReason {
				t.Errorf("condition = %+v, want %s %s", c, tc.wantStatus, tc.wantReason)
			}
			if again := withStatus(out, tc.current, tc.desired, tc.expected, map[string]metav1.Time{}); again != nil {
				t.Errorf("a budget whose status is up to date changes: %+v", again.Status)
			}
			if pdb.Status.ObservedGeneration != 0 {
				t.Error("withStatus changed its argument")
			}
		})
	}
}

func TestFailedSafe(t *testing.T) {
	pdb := budget(ptr.To(intstr.FromInt32(1)), nil)
	pdb.Status.DisruptionsAllowed = 2
	out := failedSafe(pdb, errors.New(`found no controllers for pod "p"`))
	c := apimeta.FindStatusCondition(out.Status.Conditions, policyv1.DisruptionAllowedCondition)
	if out.Status.DisruptionsAllowed != 0 || c == nil || c.Status != metav1.ConditionFalse || c.Reason != policyv1.SyncFailedReason ||
		c.Message != `found no controllers for pod "p"` {
		t.Errorf("status = %+v", out.Status)
	}
}
