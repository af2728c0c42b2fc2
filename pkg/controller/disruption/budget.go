package disruption

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"

	"github.com/minik8s/minik8s/pkg/controller/podutil"
)

// DeletionTimeout is how long an eviction recorded in a budget's
// status.disruptedPods counts its pod as gone before the pod is seen
// going; past it the controller assumes the pod will stay.
const DeletionTimeout = 2 * time.Minute

// expectedScale is how many pods the budget's pods' controllers want in
// all, for percentages and maxUnavailable.
type expectedScale func() (int32, error)

// desired is how many pods the budget expects and how many of them it
// needs healthy: an integer minAvailable counts the pods there; a
// percentage, and maxUnavailable, count from the controllers' scale,
// rounding up.
func desired(pdb *policyv1.PodDisruptionBudget, pods int, scale expectedScale) (expected, desiredHealthy int32, err error) {
	minAvailable, maxUnavailable := pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable
	switch {
	case maxUnavailable == nil && minAvailable == nil:
		return 0, 0, nil
	case maxUnavailable == nil && minAvailable.Type == intstr.Int:
		return int32(pods), minAvailable.IntVal, nil
	}
	if expected, err = scale(); err != nil {
		return 0, 0, err
	}
	limit := minAvailable
	if maxUnavailable != nil {
		limit = maxUnavailable
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(limit, int(expected), true)
	if err != nil {
		return 0, 0, err
	}
	if maxUnavailable != nil {
		return expected, max(expected-int32(n), 0), nil
	}
	return expected, int32(n), nil
}

// disruptedPods keeps the entries of status.disruptedPods whose pod is
// still there, not yet going, and evicted less than DeletionTimeout ago;
// recheck is when the first kept one expires (zero: none kept). expired
// names the pods that outlived their entry.
func disruptedPods(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, now time.Time) (kept map[string]metav1.Time, recheck time.Time, expired []string) {
	kept = map[string]metav1.Time{}
	for _, pod := range pods {
		at, ok := pdb.Status.DisruptedPods[pod.Name]
		if !ok || pod.DeletionTimestamp != nil {
			continue
		}
		deadline := at.Add(DeletionTimeout)
		if !deadline.After(now) {
			expired = append(expired, pod.Name)
			continue
		}
		kept[pod.Name] = at
		if recheck.IsZero() || deadline.Before(recheck) {
			recheck = deadline
		}
	}
	return kept, recheck, expired
}

// healthy counts the ready pods that are neither going nor evicted.
func healthy(pods []*corev1.Pod, disrupted map[string]metav1.Time) int32 {
	var n int32
	for _, pod := range pods {
		if _, evicted := disrupted[pod.Name]; pod.DeletionTimestamp == nil && !evicted && podutil.IsReady(pod) {
			n++
		}
	}
	return n
}

// withStatus is pdb with the status these counts make, or nil when its
// status already says so.
func withStatus(pdb *policyv1.PodDisruptionBudget, currentHealthy, desiredHealthy, expected int32, disrupted map[string]metav1.Time) *policyv1.PodDisruptionBudget {
	allowed := currentHealthy - desiredHealthy
	if expected <= 0 || allowed <= 0 {
		allowed = 0
	}
	st := &pdb.Status
	if st.CurrentHealthy == currentHealthy && st.DesiredHealthy == desiredHealthy && st.ExpectedPods == expected &&
		st.DisruptionsAllowed == allowed && apiequality.Semantic.DeepEqual(st.DisruptedPods, disrupted) &&
		st.ObservedGeneration == pdb.Generation && pdbhelper.ConditionsAreUpToDate(pdb) {
		return nil
	}
	out := pdb.DeepCopy()
	out.Status.CurrentHealthy, out.Status.DesiredHealthy, out.Status.ExpectedPods = currentHealthy, desiredHealthy, expected
	out.Status.DisruptionsAllowed, out.Status.DisruptedPods = allowed, disrupted
	out.Status.ObservedGeneration = pdb.Generation
	pdbhelper.UpdateDisruptionAllowedCondition(out)
	return out
}

// failedSafe is pdb allowing no disruption, its DisruptionAllowed
// condition saying why (SyncFailed).
func failedSafe(pdb *policyv1.PodDisruptionBudget, err error) *policyv1.PodDisruptionBudget {
	out := pdb.DeepCopy()
	out.Status.DisruptionsAllowed = 0
	apimeta.SetStatusCondition(&out.Status.Conditions, metav1.Condition{
		Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse, Reason: policyv1.SyncFailedReason,
		Message: err.Error(), ObservedGeneration: out.Status.ObservedGeneration,
	})
	return out
}

// errNoController is a pod whose controller reference leads nowhere.
func errNoController(pod *corev1.Pod) error {
	return fmt.Errorf("found no controllers for pod %q", pod.Name)
}
