package kinds

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func validPDB() *policyv1.PodDisruptionBudget {
	return defaulted(&policyv1.PodDisruptionBudget{ObjectMeta: nsMeta("web"), Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: ptr.To(intstr.FromInt32(2)), Selector: &metav1.LabelSelector{MatchLabels: appLabels()},
	}})
}

func TestValidatePodDisruptionBudget(t *testing.T) {
	spec := func(f func(*policyv1.PodDisruptionBudgetSpec)) *policyv1.PodDisruptionBudget {
		return mutate(validPDB(), func(p *policyv1.PodDisruptionBudget) { f(&p.Spec) })
	}
	status := func(f func(*policyv1.PodDisruptionBudgetStatus)) *policyv1.PodDisruptionBudget {
		return mutate(validPDB(), func(p *policyv1.PodDisruptionBudget) { f(&p.Status) })
	}
	runCreateCases(t, []createCase{
		{name: "minAvailable", obj: validPDB(), namespaced: true},
		{name: "maxUnavailable percent", obj: spec(func(s *policyv1.PodDisruptionBudgetSpec) {
			s.MinAvailable, s.MaxUnavailable = nil, ptr.To(intstr.FromString("25%"))
		}), namespaced: true},
		{name: "neither, empty selector", obj: spec(func(s *policyv1.PodDisruptionBudgetSpec) {
			s.MinAvailable, s.Selector = nil, &metav1.LabelSelector{}
		}), namespaced: true},
		{name: "both", obj: spec(func(s *policyv1.PodDisruptionBudgetSpec) { s.MaxUnavailable = ptr.To(intstr.FromInt32(1)) }),
			namespaced: true, want: []string{"spec"}},
		{name: "negative minAvailable", obj: spec(func(s *policyv1.PodDisruptionBudgetSpec) { s.MinAvailable = ptr.To(intstr.FromInt32(-1)) }),
			namespaced: true, want: []string{"spec.minAvailable"}},
		{name: "minAvailable over 100%", obj: spec(func(s *policyv1.PodDisruptionBudgetSpec) { s.MinAvailable = ptr.To(intstr.FromString("101%")) }),
			namespaced: true, want: []string{"spec.minAvailable"}},
		{name: "maxUnavailable not a percent", obj: spec(func(s *policyv1.PodDisruptionBudgetSpec) {
			s.MinAvailable, s.MaxUnavailable = nil, ptr.To(intstr.FromString("half"))
		}), namespaced: true, want: []string{"spec.maxUnavailable"}},
		{name: "invalid selector", obj: spec(func(s *policyv1.PodDisruptionBudgetSpec) {
			s.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
		}), namespaced: true, want: []string{"spec.selector.matchExpressions[0].operator"}},
		{name: "unhealthy pod eviction policy", obj: spec(func(s *policyv1.PodDisruptionBudgetSpec) {
			s.UnhealthyPodEvictionPolicy = ptr.To(policyv1.AlwaysAllow)
		}), namespaced: true},
		{name: "unknown unhealthy pod eviction policy", obj: spec(func(s *policyv1.PodDisruptionBudgetSpec) {
			s.UnhealthyPodEvictionPolicy = ptr.To(policyv1.UnhealthyPodEvictionPolicyType("Sometimes"))
		}), namespaced: true, want: []string{"spec.unhealthyPodEvictionPolicy"}},
		{name: "negative status counts", obj: status(func(s *policyv1.PodDisruptionBudgetStatus) {
			s.DisruptionsAllowed, s.ExpectedPods = -1, -2
		}), namespaced: true, want: []string{"status.disruptionsAllowed", "status.expectedPods"}},
		{name: "condition without a reason", obj: status(func(s *policyv1.PodDisruptionBudgetStatus) {
			s.Conditions = []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		}), namespaced: true, want: []string{"status.conditions[0].reason"}},
	})
	// The spec may change, as in Kubernetes since 1.15.
	old := mutate(validPDB(), func(p *policyv1.PodDisruptionBudget) { p.ResourceVersion = "1" })
	changed := mutate(old, func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = ptr.To(intstr.FromInt32(0)) })
	checkErrors(t, validateUpdate(changed, old, true), nil)
}

func TestPodDisruptionBudgetCells(t *testing.T) {
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: objMeta("web"),
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromString("25%"))}, Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}}
	runCellCases(t, []cellCase{{name: "pdb", gk: schema.GroupKind{Group: "policy", Kind: "PodDisruptionBudget"}, obj: pdb,
		want: map[string]interface{}{"Name": "web", "Min Available": "N/A", "Max Unavailable": "25%", "Allowed Disruptions": int64(1), "Age": "10m"}}})
}

func TestSpendDisruption(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	budgetWith := func(generation, observed int64, allowed int32) *policyv1.PodDisruptionBudget {
		p := validPDB()
		p.Generation = generation
		p.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: observed, DisruptionsAllowed: allowed, CurrentHealthy: 2, DesiredHealthy: 2}
		return p
	}
	for _, tc := range []struct {
		name        string
		pdb         *policyv1.PodDisruptionBudget
		dryRun      bool
		wantCode    int32
		wantCause   string
		wantAllowed int32
		wantRecord  bool
	}{
		{name: "one allowed", pdb: budgetWith(1, 1, 1), wantAllowed: 0, wantRecord: true},
		{name: "two allowed", pdb: budgetWith(2, 2, 2), wantAllowed: 1, wantRecord: true},
		{name: "dry run records nothing", pdb: budgetWith(1, 1, 1), dryRun: true, wantAllowed: 0},
		{name: "none allowed", pdb: budgetWith(1, 1, 0), wantCode: http.StatusTooManyRequests,
			wantCause: "The disruption budget web needs 2 healthy pods and has 2 currently"},
		{name: "spec not observed yet", pdb: budgetWith(2, 1, 1), wantCode: http.StatusTooManyRequests,
			wantCause: "The disruption budget web is still being processed by the server."},
		{name: "negative", pdb: budgetWith(1, 1, -1), wantCode: http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := spendDisruption(tc.pdb, "p", now, tc.dryRun)
			if tc.wantCode != 0 {
				var se *apierrors.StatusError
				if !errors.As(err, &se) || se.ErrStatus.Code != tc.wantCode {
					t.Fatalf("err = %v, want code %d", err, tc.wantCode)
				}
				if tc.wantCause != "" {
					causes := se.ErrStatus.Details.Causes
					if len(causes) != 1 || causes[0].Type != policyv1.DisruptionBudgetCause || causes[0].Message != tc.wantCause {
						t.Errorf("causes = %+v, want %q", causes, tc.wantCause)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.pdb.Status.DisruptionsAllowed != tc.wantAllowed {
				t.Errorf("disruptionsAllowed = %d, want %d", tc.pdb.Status.DisruptionsAllowed, tc.wantAllowed)
			}
			if at, ok := tc.pdb.Status.DisruptedPods["p"]; ok != tc.wantRecord || (ok && !at.Equal(&now)) {
				t.Errorf("disruptedPods = %v, want p recorded: %v", tc.pdb.Status.DisruptedPods, tc.wantRecord)
			}
			if tc.wantAllowed == 0 && !strings.Contains(tc.pdb.Status.Conditions[0].Reason, policyv1.InsufficientPodsReason) {
				t.Errorf("conditions = %+v, want InsufficientPods", tc.pdb.Status.Conditions)
			}
		})
	}
}

func TestEvictionDeleteOptions(t *testing.T) {
	ev := func(do *metav1.DeleteOptions) *policyv1.Eviction {
		return &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p"}, DeleteOptions: do}
	}
	for _, tc := range []struct {
		name       string
		ev         *policyv1.Eviction
		queryDry   bool
		wantDryRun bool
		wantErr    bool
	}{
		{name: "none", ev: ev(nil)},
		{name: "query dry run", ev: ev(nil), queryDry: true, wantDryRun: true},
		{name: "body dry run", ev: ev(&metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}), wantDryRun: true},
		{name: "both", ev: ev(&metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}), queryDry: true, wantDryRun: true},
		{name: "contradicting", ev: ev(&metav1.DeleteOptions{DryRun: []string{"Some"}}), queryDry: true, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			do, err := evictionDeleteOptions(tc.ev, tc.queryDry)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err == nil && (len(do.DryRun) > 0) != tc.wantDryRun {
				t.Errorf("dryRun = %v, want %v", do.DryRun, tc.wantDryRun)
			}
		})
	}
}

func TestUnhealthyMayGo(t *testing.T) {
	for _, tc := range []struct {
		name             string
		policy           *policyv1.UnhealthyPodEvictionPolicyType
		current, desired int32
		want             bool
	}{
		{"healthy budget", nil, 2, 2, true},
		{"unhealthy budget", nil, 1, 2, false},
		{"nothing desired", ptr.To(policyv1.IfHealthyBudget), 0, 0, false},
		{"always allow", ptr.To(policyv1.AlwaysAllow), 0, 2, true},
	} {
		p := validPDB()
		p.Spec.UnhealthyPodEvictionPolicy = tc.policy
		p.Status.CurrentHealthy, p.Status.DesiredHealthy = tc.current, tc.desired
		if got := unhealthyMayGo(p); got != tc.want {
			t.Errorf("%s: unhealthyMayGo = %v, want %v", tc.name, got, tc.want)
		}
	}
	running := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if evictsWithoutBudget(running) {
		t.Error("a running pod is evicted without its budget")
	}
	for _, phase := range []corev1.PodPhase{corev1.PodPending, corev1.PodSucceeded, corev1.PodFailed} {
		if !evictsWithoutBudget(&corev1.Pod{Status: corev1.PodStatus{Phase: phase}}) {
			t.Errorf("a %s pod waits for its budget", phase)
		}
	}
}
