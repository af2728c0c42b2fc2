package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// TestDisruption: a PodDisruptionBudget made with kubectl gets its status
// from the disruption controller, and pods' eviction spends it: one of
// three ready pods may go under minAvailable 2, the next eviction is
// refused with 429 until the budget allows it, a dry run deletes nothing,
// a pod without a budget just goes, and kubectl drain evicts.
func TestDisruption(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 1)
	const ns = "default"
	pods := c.client.CoreV1().Pods(ns)
	web := map[string]string{"app": "web"}
	newPod := func(name string, labels map[string]string) {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](1), Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		newPod(fmt.Sprintf("web-%d", i), web)
	}
	newPod("lonely", map[string]string{"app": "lonely"})
	rsWaitReadyPods(t, c, ns, web, 3)
	rsWaitReadyPods(t, c, ns, map[string]string{"app": "lonely"}, 1)

	// Discovery lists the subresource as Kubernetes does, so kubectl
	// drain posts policy/v1 Evictions.
	v1, err := c.client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range v1.APIResources {
		if r.Name == "pods/eviction" {
			found = r.Group == "policy" && r.Version == "v1" && r.Kind == "Eviction" && strings.Join(r.Verbs, ",") == "create"
		}
	}
	if !found {
		t.Errorf("discovery of v1 has no pods/eviction as policy/v1 Eviction: %+v", v1.APIResources)
	}

	k := newKubectl(t, c)
	k.ok(t, "create", "pdb", "web", "--selector=app=web", "--min-available=2")
	pdb := waitBudget(t, c, ns, "web", "3 healthy of 3, 1 disruption allowed", func(st policyv1.PodDisruptionBudgetStatus) bool {
		return st.ExpectedPods == 3 && st.CurrentHealthy == 3 && st.DesiredHealthy == 2 && st.DisruptionsAllowed == 1
	})
	if cond := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition); cond == nil ||
		cond.Status != metav1.ConditionTrue || cond.Reason != policyv1.SufficientPodsReason {
		t.Errorf("DisruptionAllowed condition = %+v, want True SufficientPods", cond)
	}
	out := k.ok(t, "get", "pdb")
	if h := strings.Join(tableHeader(out), " "); h != "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE" {
		t.Errorf("kubectl get pdb header = %q", h)
	}
	if rows := outputLines(out); len(rows) != 2 || !strings.HasPrefix(strings.Join(strings.Fields(rows[1]), " "), "web 2 N/A 1 ") {
		t.Errorf("kubectl get pdb:\n%s", out)
	}

	evict := func(name string, opts *metav1.DeleteOptions) error {
		return pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, DeleteOptions: opts})
	}
	stays := func(name string) {
		t.Helper()
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			t.Fatalf("pod %s: %v, deletionTimestamp %v; want it untouched", name, err, p.DeletionTimestamp)
		}
	}
	goes := func(name string) {
		t.Helper()
		waitFor(t, name+" to be gone", func(ctx context.Context) (bool, error) {
			_, err := pods.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}

	// A dry run spends nothing and deletes nothing.
	if err := evict("web-0", &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("dry-run eviction: %v", err)
	}
	stays("web-0")
	if got, err := c.client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil ||
		got.Status.DisruptionsAllowed != 1 || len(got.Status.DisruptedPods) != 0 {
		t.Fatalf("budget after a dry run: %v, %+v", err, got.Status)
	}

	// The one disruption allowed.
	if err := evict("web-0", nil); err != nil {
		t.Fatalf("evicting web-0: %v", err)
	}
	goes("web-0")
	waitBudget(t, c, ns, "web", "2 healthy of 2, none allowed", func(st policyv1.PodDisruptionBudgetStatus) bool {
		return st.ExpectedPods == 2 && st.CurrentHealthy == 2 && st.DisruptionsAllowed == 0 && len(st.DisruptedPods) == 0
	})

	// The next one is refused, and the pod stays.
	err = evict("web-1", nil)
	var se *apierrors.StatusError
	if !apierrors.IsTooManyRequests(err) || !errors.As(err, &se) || se.ErrStatus.Details == nil || len(se.ErrStatus.Details.Causes) != 1 ||
		se.ErrStatus.Details.Causes[0].Type != policyv1.DisruptionBudgetCause ||
		se.ErrStatus.Details.Causes[0].Message != "The disruption budget web needs 2 healthy pods and has 2 currently" {
		t.Fatalf("evicting web-1 past the budget: %v (%+v), want 429 with a DisruptionBudget cause", err, se)
	}
	stays("web-1")

	// Two budgets over one pod: the subresource does not choose.
	if _, err := c.client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web-too"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: web}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = evict("web-1", nil)
	if !errors.As(err, &se) || se.ErrStatus.Code != http.StatusInternalServerError ||
		se.ErrStatus.Message != "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support." {
		t.Fatalf("evicting a pod of two budgets: %v, want 500", err)
	}
	stays("web-1")
	if err := c.client.PolicyV1().PodDisruptionBudgets(ns).Delete(ctx, "web-too", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// Once the budget allows it, the eviction goes through (a v1beta1
	// body is accepted too).
	if _, err := c.client.PolicyV1().PodDisruptionBudgets(ns).Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"spec":{"minAvailable":0}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBudget(t, c, ns, "web", "the new spec observed, 2 allowed", func(st policyv1.PodDisruptionBudgetStatus) bool {
		return st.DesiredHealthy == 0 && st.DisruptionsAllowed == 2
	})
	if err := c.client.PolicyV1beta1().Evictions(ns).Evict(ctx, &policyv1beta1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns}}); err != nil {
		t.Fatalf("evicting web-1 under minAvailable 0: %v", err)
	}
	goes("web-1")

	// A pod no budget covers is deleted.
	if err := evict("lonely", nil); err != nil {
		t.Fatalf("evicting a pod without a budget: %v", err)
	}
	goes("lonely")

	// kubectl drain evicts what is left on the node.
	k.ok(t, "drain", "sim-0", "--force", "--ignore-daemonsets", "--timeout=30s")
	goes("web-2")
}

// waitBudget waits until the budget's controller has seen its spec and
// its status satisfies ok, and returns it.
func waitBudget(t *testing.T, c *cluster, ns, name, what string, ok func(policyv1.PodDisruptionBudgetStatus) bool) *policyv1.PodDisruptionBudget {
	t.Helper()
	var pdb *policyv1.PodDisruptionBudget
	waitFor(t, "budget "+name+": "+what, func(ctx context.Context) (bool, error) {
		var err error
		pdb, err = c.client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return pdb.Status.ObservedGeneration == pdb.Generation && ok(pdb.Status), nil
	})
	return pdb
}

// TestDisruptionControllerScale: under maxUnavailable or a percentage,
// the budget expects what the pods' ReplicaSet wants, and follows its
// scale.
func TestDisruptionControllerScale(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startSimulatedNodes(t, c, 1)
	rsStartControllers(t, c, false)
	const ns = "default"
	if _, err := c.client.AppsV1().ReplicaSets(ns).Create(ctx, rsNew("web", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	budgets := c.client.PolicyV1().PodDisruptionBudgets(ns)
	for name, spec := range map[string]policyv1.PodDisruptionBudgetSpec{
		"max-one":  {MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: selector},
		"half-min": {MinAvailable: ptr.To(intstr.FromString("50%")), Selector: selector},
	} {
		if _, err := budgets.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	counts := func(expected, healthy, desired, allowed int32) func(policyv1.PodDisruptionBudgetStatus) bool {
		return func(st policyv1.PodDisruptionBudgetStatus) bool {
			return st.ExpectedPods == expected && st.CurrentHealthy == healthy && st.DesiredHealthy == desired && st.DisruptionsAllowed == allowed
		}
	}
	waitBudget(t, c, ns, "max-one", "3 expected, 2 needed", counts(3, 3, 2, 1))
	waitBudget(t, c, ns, "half-min", "3 expected, 2 needed (1.5 rounded up)", counts(3, 3, 2, 1))

	if _, err := c.client.AppsV1().ReplicaSets(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBudget(t, c, ns, "max-one", "5 expected, 4 needed", counts(5, 5, 4, 1))
	waitBudget(t, c, ns, "half-min", "5 expected, 3 needed", counts(5, 5, 3, 2))
}
