package quota

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
)

// CountPrefix names the object count of a resource: count/<resource>
// for the core group, count/<resource>.<group> for the others.
const CountPrefix = "count/"

// CountName is the object count resource of gr.
func CountName(gr schema.GroupResource) corev1.ResourceName {
	if gr.Group == "" {
		return corev1.ResourceName(CountPrefix + gr.Resource)
	}
	return corev1.ResourceName(CountPrefix + gr.Resource + "." + gr.Group)
}

// CountedResource is the group and resource an object count names
// (count/replicasets.apps is apps' replicasets); ok is false for other
// names.
func CountedResource(name corev1.ResourceName) (gr schema.GroupResource, ok bool) {
	rest, ok := strings.CutPrefix(string(name), CountPrefix)
	if !ok || rest == "" {
		return schema.GroupResource{}, false
	}
	res, group, _ := strings.Cut(rest, ".")
	return schema.GroupResource{Group: group, Resource: res}, true
}

// legacyCounts are the core resources whose count also has a name
// without count/, as Kubernetes' quota has had them since before count/.
var legacyCounts = map[string]corev1.ResourceName{
	"pods": corev1.ResourcePods, "services": corev1.ResourceServices,
	"configmaps": corev1.ResourceConfigMaps, "secrets": corev1.ResourceSecrets,
	"persistentvolumeclaims": corev1.ResourcePersistentVolumeClaims, "resourcequotas": corev1.ResourceQuotas,
	"replicationcontrollers": corev1.ResourceReplicationControllers,
}

// LegacyCountedResource is the core resource that a count name without
// count/ ("secrets") counts.
func LegacyCountedResource(name corev1.ResourceName) (schema.GroupResource, bool) {
	for res, legacy := range legacyCounts {
		if legacy == name {
			return schema.GroupResource{Resource: res}, true
		}
	}
	return schema.GroupResource{}, false
}

// Evaluator measures the objects of one group and resource.
type Evaluator struct {
	GroupResource schema.GroupResource
	// usage is what one object uses; now tells whether a deleted pod's
	// grace period is over.
	usage func(obj runtime.Object, now time.Time) corev1.ResourceList
	// tracks says whether the evaluator measures the quota resource name.
	tracks func(name corev1.ResourceName) bool
	// scoped objects are matched by quota scopes (pods); the quota of a
	// scope matches no other object.
	scoped bool
	// required lists, by resource, the containers of obj that lack what
	// a quota tracking it needs them to set.
	required func(tracked []corev1.ResourceName, obj runtime.Object) error
}

// For returns the evaluator of gr: Kubernetes' for pods, services and
// persistent volume claims; object counts for every other resource.
func For(gr schema.GroupResource) *Evaluator {
	switch gr {
	case schema.GroupResource{Resource: "pods"}:
		return podEvaluator()
	case schema.GroupResource{Resource: "services"}:
		return serviceEvaluator()
	case schema.GroupResource{Resource: "persistentvolumeclaims"}:
		return pvcEvaluator()
	}
	return countEvaluator(gr)
}

// counts is the base of every evaluator: the object count names of gr.
func counts(gr schema.GroupResource) corev1.ResourceList {
	list := corev1.ResourceList{CountName(gr): one()}
	if legacy, ok := legacyCounts[gr.Resource]; ok && gr.Group == "" && gr.Resource != "pods" {
		list[legacy] = one()
	}
	return list
}

func countEvaluator(gr schema.GroupResource) *Evaluator {
	names := counts(gr)
	return &Evaluator{
		GroupResource: gr,
		usage:         func(runtime.Object, time.Time) corev1.ResourceList { return counts(gr) },
		tracks:        func(name corev1.ResourceName) bool { _, ok := names[name]; return ok },
	}
}

// Usage is what obj uses of a quota.
func (e *Evaluator) Usage(obj runtime.Object, now time.Time) corev1.ResourceList {
	return e.usage(obj, now)
}

// Tracked is the part of names that the evaluator measures, sorted.
func (e *Evaluator) Tracked(names []corev1.ResourceName) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, name := range names {
		if e.tracks(name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Constraints refuses an object that a quota tracking tracked may not
// charge: a pod whose containers leave out the cpu or memory the quota
// limits.
func (e *Evaluator) Constraints(tracked []corev1.ResourceName, obj runtime.Object) error {
	if e.required == nil {
		return nil
	}
	return e.required(tracked, obj)
}

// Selectors are the scopes of q as selector requirements: spec.scopes
// (operator Exists) and spec.scopeSelector's.
func Selectors(q *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	var out []corev1.ScopedResourceSelectorRequirement
	for _, s := range q.Spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		out = append(out, q.Spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

// MatchesScopes says whether obj is in every scope of q.
func (e *Evaluator) MatchesScopes(q *corev1.ResourceQuota, obj runtime.Object) (bool, error) {
	for _, sel := range Selectors(q) {
		if !e.scoped {
			return false, nil
		}
		ok, err := podInScope(sel, obj)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// Matches says whether q limits obj: its hard limits name a resource
// the evaluator measures and obj is in its scopes.
func (e *Evaluator) Matches(q *corev1.ResourceQuota, hard corev1.ResourceList, obj runtime.Object) (bool, error) {
	if len(e.Tracked(ResourceNames(hard))) == 0 {
		return false, nil
	}
	return e.MatchesScopes(q, obj)
}

// podInScope says whether the pod obj is in the scope sel.
func podInScope(sel corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return false, fmt.Errorf("quota scopes apply to pods, not %T", obj)
	}
	switch sel.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return IsTerminating(pod), nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return !IsTerminating(pod), nil
	case corev1.ResourceQuotaScopeBestEffort:
		return IsBestEffort(pod), nil
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !IsBestEffort(pod), nil
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return crossNamespaceAffinity(pod), nil
	case corev1.ResourceQuotaScopePriorityClass:
		if sel.Operator == corev1.ScopeSelectorOpExists {
			return pod.Spec.PriorityClassName != "", nil
		}
		s, err := ScopeSelector(sel)
		if err != nil {
			return false, err
		}
		var set labels.Set
		if pod.Spec.PriorityClassName != "" {
			set = labels.Set{string(corev1.ResourceQuotaScopePriorityClass): pod.Spec.PriorityClassName}
		}
		return s.Matches(set), nil
	}
	return false, nil
}

// ScopeSelector is sel as a label selector over the key of its scope.
func ScopeSelector(sel corev1.ScopedResourceSelectorRequirement) (labels.Selector, error) {
	ops := map[corev1.ScopeSelectorOperator]selection.Operator{
		corev1.ScopeSelectorOpIn: selection.In, corev1.ScopeSelectorOpNotIn: selection.NotIn,
		corev1.ScopeSelectorOpExists: selection.Exists, corev1.ScopeSelectorOpDoesNotExist: selection.DoesNotExist,
	}
	op, ok := ops[sel.Operator]
	if !ok {
		return nil, fmt.Errorf("%q is not a valid scope selector operator", sel.Operator)
	}
	r, err := labels.NewRequirement(string(sel.ScopeName), op, sel.Values)
	if err != nil {
		return nil, err
	}
	return labels.NewSelector().Add(*r), nil
}

// IsTerminating: the pod has an active deadline.
func IsTerminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

// IsBestEffort: no container of the pod, nor the pod itself, requests
// or limits cpu or memory (QoS class BestEffort).
func IsBestEffort(pod *corev1.Pod) bool {
	sets := func(r corev1.ResourceRequirements) bool {
		for _, list := range []corev1.ResourceList{r.Requests, r.Limits} {
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if _, ok := list[name]; ok {
					return true
				}
			}
		}
		return false
	}
	if pod.Spec.Resources != nil && sets(*pod.Spec.Resources) {
		return false
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if sets(cs[i].Resources) {
				return false
			}
		}
	}
	return true
}

func crossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	cross := func(t corev1.PodAffinityTerm) bool { return len(t.Namespaces) > 0 || t.NamespaceSelector != nil }
	var terms []corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	return slices.ContainsFunc(terms, cross)
}

// GroupResources are the resources whose objects a quota of names
// counts or measures, sorted.
func GroupResources(names []corev1.ResourceName) []schema.GroupResource {
	set := map[schema.GroupResource]bool{}
	for _, gr := range []schema.GroupResource{{Resource: "pods"}, {Resource: "services"}, {Resource: "persistentvolumeclaims"}} {
		if len(For(gr).Tracked(names)) > 0 {
			set[gr] = true
		}
	}
	for _, name := range names {
		if gr, ok := CountedResource(name); ok {
			set[gr] = true
		}
		if gr, ok := LegacyCountedResource(name); ok {
			set[gr] = true
		}
	}
	out := make([]schema.GroupResource, 0, len(set))
	for gr := range set {
		out = append(out, gr)
	}
	slices.SortFunc(out, func(a, b schema.GroupResource) int { return strings.Compare(a.String(), b.String()) })
	return out
}
