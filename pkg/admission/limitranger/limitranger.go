// Package limitranger is Kubernetes' LimitRanger admission: the
// LimitRanges of a namespace give the containers of a new pod the
// default requests and limits they leave out (Admit, the mutating
// phase, noting what it set in the kubernetes.io/limit-ranger
// annotation), then bound what containers, pods and persistent volume
// claims ask for: min, max and maxLimitRequestRatio (Validate). A pod or
// claim out of bounds is refused with 403 Forbidden naming the bound, as
// "maximum cpu usage per Container is 500m, but limit is 1". Like
// Kubernetes, only creates are looked at: the resources of a pod's
// containers do not change on update.
package limitranger

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/minik8s/minik8s/pkg/admission"
	"github.com/minik8s/minik8s/pkg/quota"
)

// Annotation records on a pod the defaults LimitRanger set.
const Annotation = "kubernetes.io/limit-ranger"

var limitRangesGVR = corev1.SchemeGroupVersion.WithResource("limitranges")

// Plugin is the LimitRanger admission plugin.
type Plugin struct{}

// New returns the plugin.
func New() *Plugin { return &Plugin{} }

// Name is the plugin's name in kube-apiserver.
func (*Plugin) Name() string { return "LimitRanger" }

// limited says whether the write is one LimitRanger looks at: the create
// of a pod or a claim.
func limited(a *admission.Attributes) bool {
	if a.Subresource != "" || a.Operation != admission.Create {
		return false
	}
	switch a.Object.(type) {
	case *corev1.Pod, *corev1.PersistentVolumeClaim:
		return true
	}
	return false
}

// items are the LimitRange items of a's namespace, or the error that
// ends the write when they cannot be read.
func items(ctx context.Context, a *admission.Attributes, objects admission.Objects) ([]corev1.LimitRangeItem, error) {
	list, err := objects.List(ctx, limitRangesGVR, a.Namespace)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("LimitRanger: %w", err))
	}
	var out []corev1.LimitRangeItem
	for _, o := range list {
		if lr, ok := o.(*corev1.LimitRange); ok {
			out = append(out, lr.Spec.Limits...)
		}
	}
	return out, nil
}

// Admit gives a new pod's containers the default requests and limits of
// the namespace's Container items.
func (*Plugin) Admit(ctx context.Context, a *admission.Attributes, objects admission.Objects) admission.Result {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok || !limited(a) {
		return admission.Result{}
	}
	limits, err := items(ctx, a, objects)
	var notes []string
	for _, item := range limits {
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		for i := range pod.Spec.InitContainers {
			notes = append(notes, setDefaults(&pod.Spec.InitContainers[i], "init container", item)...)
		}
		for i := range pod.Spec.Containers {
			notes = append(notes, setDefaults(&pod.Spec.Containers[i], "container", item)...)
		}
	}
	if len(notes) > 0 && err == nil {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[Annotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
	}
	return admission.Result{Err: err}
}

// setDefaults gives c the item's defaults it lacks and says what it set.
func setDefaults(c *corev1.Container, what string, item corev1.LimitRangeItem) []string {
	fill := func(list *corev1.ResourceList, from corev1.ResourceList) []string {
		var set []string
		for name, q := range from {
			if _, ok := (*list)[name]; ok {
				continue
			}
			if *list == nil {
				*list = corev1.ResourceList{}
			}
			(*list)[name] = q.DeepCopy()
			set = append(set, string(name))
		}
		slices.Sort(set)
		return set
	}
	var notes []string
	if set := fill(&c.Resources.Requests, item.DefaultRequest); len(set) > 0 {
		notes = append(notes, fmt.Sprintf("%s request for %s %s", strings.Join(set, ", "), what, c.Name))
	}
	if set := fill(&c.Resources.Limits, item.Default); len(set) > 0 {
		notes = append(notes, fmt.Sprintf("%s limit for %s %s", strings.Join(set, ", "), what, c.Name))
	}
	return notes
}

// Validate refuses a new pod or claim outside the namespace's bounds.
func (*Plugin) Validate(ctx context.Context, a *admission.Attributes, objects admission.Objects) admission.Result {
	if !limited(a) {
		return admission.Result{}
	}
	limits, err := items(ctx, a, objects)
	if err != nil {
		return admission.Result{Err: err}
	}
	var errs []error
	for _, item := range limits {
		switch obj := a.Object.(type) {
		case *corev1.Pod:
			errs = append(errs, checkPod(obj, item)...)
		case *corev1.PersistentVolumeClaim:
			if item.Type == corev1.LimitTypePersistentVolumeClaim {
				req := obj.Spec.Resources.Requests
				errs = append(errs, bounds(string(item.Type), item, req, req)...)
			}
		}
	}
	if len(errs) == 0 {
		return admission.Result{}
	}
	return admission.Result{Err: apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, utilerrors.NewAggregate(errs))}
}

// checkPod bounds each container by a Container item, the pod's sums by
// a Pod item.
func checkPod(pod *corev1.Pod, item corev1.LimitRangeItem) []error {
	var errs []error
	switch item.Type {
	case corev1.LimitTypeContainer:
		for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for _, c := range cs {
				errs = append(errs, bounds(string(item.Type), item, c.Resources.Requests, c.Resources.Limits)...)
			}
		}
	case corev1.LimitTypePod:
		opts := resourcehelper.PodResourcesOptions{ExcludeOverhead: true}
		errs = bounds(string(item.Type), item, resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts))
	}
	return errs
}

// bounds checks requests and limits against item's min, max and
// maxLimitRequestRatio, with Kubernetes' messages; kind is "Container",
// "Pod" or "PersistentVolumeClaim".
func bounds(kind string, item corev1.LimitRangeItem, requests, limits corev1.ResourceList) []error {
	req, lim := side{"request", requests}, side{"limit", limits}
	errs := bound(kind, "minimum", item.Min, -1, req, lim)
	errs = append(errs, bound(kind, "maximum", item.Max, 1, lim, req)...)
	for _, name := range quota.ResourceNames(item.MaxLimitRequestRatio) {
		ratio := item.MaxLimitRequestRatio[name]
		req, lim := requests[name], limits[name]
		switch {
		case req.IsZero():
			errs = append(errs, fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, kind, ratio.String()))
		case lim.IsZero():
			errs = append(errs, fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, kind, ratio.String()))
		default:
			observed := float64(lim.MilliValue()) / float64(req.MilliValue())
			if observed*1000 > float64(ratio.MilliValue()) {
				errs = append(errs, fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, kind, ratio.String(), observed))
			}
		}
	}
	return errs
}

// side is a container's (or pod's, claim's) requests or limits.
type side struct {
	word string
	list corev1.ResourceList
}

// bound checks a min (sign -1) or max (sign 1) list: each of its
// resources must be set in first, and neither first nor second may pass
// it in the sign's direction.
func bound(kind, what string, list corev1.ResourceList, sign int, first, second side) []error {
	var errs []error
	for _, name := range quota.ResourceNames(list) {
		b := list[name]
		q, ok := first.list[name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s %s usage per %s is %s.  No %s is specified", what, name, kind, b.String(), first.word))
			continue
		}
		for _, s := range []side{first, second} {
			if q, ok = s.list[name]; ok && q.Cmp(b) == sign {
				errs = append(errs, fmt.Errorf("%s %s usage per %s is %s, but %s is %s", what, name, kind, b.String(), s.word, q.String()))
				break
			}
		}
	}
	return errs
}

var _ admission.Mutator = (*Plugin)(nil)
