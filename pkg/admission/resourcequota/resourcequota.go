// Package resourcequota is Kubernetes' ResourceQuota admission: a
// create (or an update that grows what an object uses) in a namespace
// with ResourceQuotas is measured by pkg/quota, and every quota whose
// status.hard tracks what the object uses, and whose scopes match it, is
// charged before the object is written: its status.used grows by the
// object's usage, written on the condition of the quota's
// resourceVersion and tried again on conflict, so that two writes racing
// for the last unit of a quota cannot both have it. A write that would
// take a quota above its hard limit is refused with 403 Forbidden
// "exceeded quota: <name>, requested: ..., used: ..., limited: ...";
// a pod that leaves out the cpu or memory a quota tracks with "failed
// quota: <name>: must specify ..."; a quota the resourcequota
// controller has not measured yet with "status unknown for quota".
// Deletes are not admitted: the controller gives back what deleted
// objects used.
package resourcequota

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/minik8s/minik8s/pkg/admission"
	"github.com/minik8s/minik8s/pkg/quota"
)

var quotasGVR = corev1.SchemeGroupVersion.WithResource("resourcequotas")

// DefaultRetries is how many times a charge that lost a race with
// another write of the quota is tried again.
const DefaultRetries = 16

// Plugin is the ResourceQuota admission plugin.
type Plugin struct {
	// Now tells whether a deleted pod's grace period is over.
	Now     func() time.Time
	Retries int
}

// New returns the plugin on the real clock.
func New() *Plugin { return &Plugin{Now: time.Now, Retries: DefaultRetries} }

// Name is the plugin's name in kube-apiserver.
func (*Plugin) Name() string { return "ResourceQuota" }

// Validate charges the quotas that cover the write, or refuses it.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes, objects admission.Objects) admission.Result {
	if a.Subresource != "" || a.Namespace == "" {
		return admission.Result{}
	}
	ev := quota.For(a.Resource.GroupResource())
	now := p.Now()
	delta := ev.Usage(a.Object, now)
	if a.OldObject != nil {
		delta = quota.Subtract(delta, ev.Usage(a.OldObject, now))
	}
	if !growing(delta) {
		return admission.Result{}
	}
	forbidden := func(err error) admission.Result {
		return admission.Result{Err: apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, err)}
	}
	charged := map[string]bool{}
	for attempt := 0; ; attempt++ {
		list, err := objects.List(ctx, quotasGVR, a.Namespace)
		if err != nil {
			return admission.Result{Err: apierrors.NewInternalError(fmt.Errorf("ResourceQuota: %w", err))}
		}
		var charges []*corev1.ResourceQuota
		for _, o := range sortedQuotas(list) {
			if charged[o.Name] {
				continue
			}
			charge, err := chargeOf(ev, o, a, delta)
			if err != nil {
				return forbidden(err)
			}
			if charge != nil {
				charges = append(charges, charge)
			}
		}
		writer, ok := objects.(admission.StatusWriter)
		if len(charges) == 0 || a.DryRun || !ok {
			return admission.Result{}
		}
		conflict := false
		for _, q := range charges {
			_, err := writer.UpdateStatus(ctx, quotasGVR, q)
			switch {
			case apierrors.IsConflict(err):
				conflict = true
			case err != nil:
				return admission.Result{Err: apierrors.NewInternalError(fmt.Errorf("ResourceQuota: charging %s: %w", q.Name, err))}
			default:
				charged[q.Name] = true
			}
		}
		if !conflict {
			return admission.Result{}
		}
		if attempt >= p.Retries {
			return admission.Result{Err: apierrors.NewConflict(quotasGVR.GroupResource(), a.Namespace,
				fmt.Errorf("the quota of namespace %s changed %d times while charging it; try again", a.Namespace, attempt+1))}
		}
	}
}

// chargeOf is q with delta charged to its status.used when q covers the
// write, nil when it does not; an error refuses the write.
func chargeOf(ev *quota.Evaluator, q *corev1.ResourceQuota, a *admission.Attributes, delta corev1.ResourceList) (*corev1.ResourceQuota, error) {
	hard := q.Status.Hard
	match, err := ev.Matches(q, hard, a.Object)
	if err != nil || !match {
		return nil, err
	}
	tracked := ev.Tracked(quota.ResourceNames(hard))
	if a.Operation == admission.Create {
		if err := ev.Constraints(tracked, a.Object); err != nil {
			return nil, fmt.Errorf("failed quota: %s: %v", q.Name, err)
		}
	}
	var unknown []string
	for _, name := range tracked {
		if _, ok := q.Status.Used[name]; !ok {
			unknown = append(unknown, string(name))
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("status unknown for quota: %s, resources: %s", q.Name, strings.Join(unknown, ","))
	}
	requested := quota.Mask(positive(delta), tracked)
	if len(requested) == 0 {
		return nil, nil
	}
	used := quota.Mask(q.Status.Used, quota.ResourceNames(requested))
	newUsed := quota.Add(used, requested)
	if exceeded := quota.Exceeded(newUsed, hard); len(exceeded) > 0 {
		return nil, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s", q.Name,
			quota.PrettyPrint(quota.Mask(requested, exceeded)), quota.PrettyPrint(quota.Mask(used, exceeded)),
			quota.PrettyPrint(quota.Mask(hard, exceeded)))
	}
	charged := q.DeepCopy()
	for name, v := range newUsed {
		charged.Status.Used[name] = v
	}
	return charged, nil
}

// growing says whether delta uses more of something.
func growing(delta corev1.ResourceList) bool {
	return len(positive(delta)) > 0
}

// positive keeps the resources delta uses more of.
func positive(delta corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range delta {
		if q.Sign() > 0 {
			out[name] = q
		}
	}
	return out
}

// sortedQuotas are the quotas of list by name, so that concurrent
// writes charge them in the same order.
func sortedQuotas(list []runtime.Object) []*corev1.ResourceQuota {
	var out []*corev1.ResourceQuota
	for _, o := range list {
		if q, ok := o.(*corev1.ResourceQuota); ok {
			out = append(out, q)
		}
	}
	slices.SortFunc(out, func(x, y *corev1.ResourceQuota) int { return strings.Compare(x.Name, y.Name) })
	return out
}
