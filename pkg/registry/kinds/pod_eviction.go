package kinds

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"

	"github.com/minik8s/minik8s/pkg/registry"
)

// podEviction is POST .../pods/{name}/eviction: delete the pod unless
// that would take its PodDisruptionBudget below what it needs, as
// Kubernetes' eviction subresource does (kubectl drain uses it).
var podEviction = registry.Action{
	Name: "eviction", Kind: "Eviction",
	Body: policyv1.SchemeGroupVersion, Accepts: []schema.GroupVersion{policyv1beta1.SchemeGroupVersion},
	New: func() runtime.Object { return &policyv1.Eviction{} },
	Do:  evictPod,
}

var (
	podsResource = corev1.SchemeGroupVersion.WithResource("pods")
	pdbsResource = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")
)

const (
	// maxDisruptedPods bounds a budget's status.disruptedPods: past it, the
	// disruption controller is behind and evictions are refused.
	maxDisruptedPods = 2000
	// evictionRetries is how often an eviction reads the pod again after
	// it changed under a delete that required it unchanged.
	evictionRetries = 20
)

func evictPod(ctx context.Context, objs registry.Objects, ns, name string, body runtime.Object, dryRun bool) error {
	ev := body.(*policyv1.Eviction)
	if ev.Name != name {
		return apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	opts, err := evictionDeleteOptions(ev, dryRun)
	if err != nil {
		return err
	}
	dryRun = len(opts.DryRun) > 0
	clientRV := opts.Preconditions != nil && opts.Preconditions.ResourceVersion != nil
	var pod *corev1.Pod
	for try := 0; ; try++ {
		obj, err := objs.Get(ctx, podsResource, ns, name)
		if err != nil {
			return err
		}
		pod = obj.(*corev1.Pod)
		if !evictsWithoutBudget(pod) {
			break
		}
		// A pod that is not running, or already going, has disrupted
		// nothing a budget counts: it goes, unless it changed meanwhile
		// (a pending pod may just have become ready).
		o := opts
		if !podFinished(pod) && !clientRV {
			o = withResourceVersion(opts, pod.ResourceVersion)
		}
		err = deleteEvicted(ctx, objs, pod, o, dryRun)
		if apierrors.IsConflict(err) && !clientRV && try < evictionRetries {
			continue
		}
		return err
	}

	pdbs, err := budgetsOf(ctx, objs, pod)
	if err != nil {
		return err
	}
	if len(pdbs) > 1 {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."}}
	}
	unchanged := false
	if len(pdbs) == 1 {
		pdb := pdbs[0]
		if !hasPodCondition(pod, corev1.PodReady) && unhealthyMayGo(pdb) {
			// An unready pod is not counted healthy: it goes without
			// spending the budget, if it is still unready when deleted.
			unchanged = true
		} else {
			_, err := objs.UpdateStatus(ctx, pdbsResource, ns, pdb.Name, func(obj runtime.Object) error {
				return spendDisruption(obj.(*policyv1.PodDisruptionBudget), pod.Name, metav1.NewTime(objs.Now()), dryRun)
			}, dryRun)
			if err != nil {
				return err
			}
		}
	}
	o := opts
	if unchanged && !clientRV {
		o = withResourceVersion(opts, pod.ResourceVersion)
	}
	err = deleteEvicted(ctx, objs, pod, o, dryRun)
	if apierrors.IsConflict(err) && unchanged && !clientRV {
		return budgetBusy(pdbs[0].Name)
	}
	return err
}

// evictionDeleteOptions are the Eviction's deleteOptions with the
// request's dry run, which may not contradict them.
func evictionDeleteOptions(ev *policyv1.Eviction, dryRun bool) (*metav1.DeleteOptions, error) {
	var query []string
	if dryRun {
		query = []string{metav1.DryRunAll}
	}
	if ev.DeleteOptions == nil {
		return &metav1.DeleteOptions{DryRun: query}, nil
	}
	opts := ev.DeleteOptions.DeepCopy()
	switch {
	case len(opts.DryRun) == 0:
		opts.DryRun = query
	case len(query) > 0 && !slices.Equal(query, opts.DryRun):
		return nil, apierrors.NewBadRequest(fmt.Sprintf("Non-matching dry-run options in request and content: %v and %v", query, opts.DryRun))
	}
	return opts, nil
}

func withResourceVersion(opts *metav1.DeleteOptions, rv string) *metav1.DeleteOptions {
	o := opts.DeepCopy()
	if o.Preconditions == nil {
		o.Preconditions = &metav1.Preconditions{}
	}
	o.Preconditions.ResourceVersion = &rv
	return o
}

// podFinished: the pod's containers are done, or it is being deleted.
func podFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || pod.DeletionTimestamp != nil
}

// evictsWithoutBudget: a finished, terminating or pending pod is deleted
// without looking at budgets.
func evictsWithoutBudget(pod *corev1.Pod) bool {
	return podFinished(pod) || pod.Status.Phase == corev1.PodPending
}

// unhealthyMayGo says whether the budget lets an unready pod go without
// spending a disruption: always under AlwaysAllow, and under
// IfHealthyBudget (the default) while the budget has the healthy pods it
// needs.
func unhealthyMayGo(pdb *policyv1.PodDisruptionBudget) bool {
	if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
		return true
	}
	return pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0
}

// budgetsOf are the budgets in the pod's namespace whose selector picks
// it; an empty or invalid selector picks no pod here.
func budgetsOf(ctx context.Context, objs registry.Objects, pod *corev1.Pod) ([]*policyv1.PodDisruptionBudget, error) {
	list, err := objs.List(ctx, pdbsResource, pod.Namespace)
	if err != nil {
		return nil, err
	}
	var out []*policyv1.PodDisruptionBudget
	for _, obj := range list {
		pdb := obj.(*policyv1.PodDisruptionBudget)
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, pdb)
	}
	return out, nil
}

// spendDisruption takes one of the budget's allowed disruptions for the
// pod, recording it in status.disruptedPods so that the disruption
// controller counts it gone, or refuses with 429 when none is left or
// the controller has not seen the budget's spec yet.
func spendDisruption(pdb *policyv1.PodDisruptionBudget, podName string, now metav1.Time, dryRun bool) error {
	if pdb.Status.ObservedGeneration < pdb.Generation {
		return budgetBusy(pdb.Name)
	}
	if pdb.Status.DisruptionsAllowed < 0 {
		return apierrors.NewForbidden(policyv1.Resource("poddisruptionbudget"), pdb.Name, fmt.Errorf("pdb disruptions allowed is negative"))
	}
	if len(pdb.Status.DisruptedPods) > maxDisruptedPods {
		return apierrors.NewForbidden(policyv1.Resource("poddisruptionbudget"), pdb.Name, fmt.Errorf("DisruptedPods map too big - too many evictions not confirmed by PDB controller"))
	}
	if pdb.Status.DisruptionsAllowed == 0 {
		return tooManyRequests(0, fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently",
			pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy))
	}
	pdb.Status.DisruptionsAllowed--
	if pdb.Status.DisruptionsAllowed == 0 {
		pdbhelper.UpdateDisruptionAllowedCondition(pdb)
	}
	if dryRun {
		return nil
	}
	if pdb.Status.DisruptedPods == nil {
		pdb.Status.DisruptedPods = map[string]metav1.Time{}
	}
	pdb.Status.DisruptedPods[podName] = now
	return nil
}

// budgetBusy is the 429 of a budget the controller has not caught up with.
func budgetBusy(name string) error {
	return tooManyRequests(10, fmt.Sprintf("The disruption budget %s is still being processed by the server.", name))
}

func tooManyRequests(retryAfter int, cause string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", retryAfter)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: cause})
	return err
}

// deleteEvicted marks a pod that is still running with the
// DisruptionTarget condition, as Kubernetes does, and deletes it. A
// resourceVersion precondition in opts then holds against the marked pod.
func deleteEvicted(ctx context.Context, objs registry.Objects, pod *corev1.Pod, opts *metav1.DeleteOptions, dryRun bool) error {
	if !dryRun && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		marked, err := objs.UpdateStatus(ctx, podsResource, pod.Namespace, pod.Name, func(obj runtime.Object) error {
			p := obj.(*corev1.Pod)
			if pre := opts.Preconditions; pre != nil {
				if pre.UID != nil && *pre.UID != p.UID {
					return apierrors.NewConflict(podsResource.GroupResource(), p.Name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *pre.UID, p.UID))
				}
				if pre.ResourceVersion != nil {
					p.ResourceVersion = *pre.ResourceVersion
				}
			}
			setPodCondition(p, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
				Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", LastTransitionTime: metav1.NewTime(objs.Now())})
			return nil
		}, false)
		if err != nil {
			return err
		}
		if opts.Preconditions != nil && opts.Preconditions.ResourceVersion != nil {
			m := marked.(*corev1.Pod)
			opts = withResourceVersion(opts, m.ResourceVersion)
		}
	}
	return objs.Delete(ctx, podsResource, pod.Namespace, pod.Name, opts)
}
