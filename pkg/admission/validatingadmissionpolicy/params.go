package validatingadmissionpolicy

import (
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/minik8s/minik8s/pkg/admission"
	"github.com/minik8s/minik8s/pkg/admission/matching"
)

// params returns the params binding b gives policy p, each to be
// evaluated on its own: one nil when p takes none; none when none is
// found and b allows it. paramRef.namespace, when unset, is the
// request's for namespaced param kinds.
func (e *evaluation) params(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) ([]runtime.Object, error) {
	kind := p.Spec.ParamKind
	if kind == nil {
		return []runtime.Object{nil}, nil
	}
	ref := b.Spec.ParamRef
	if ref == nil {
		return nil, fmt.Errorf("paramKind kind `%s` is set but paramRef is nil", kind.Kind)
	}
	gv, err := schema.ParseGroupVersion(kind.APIVersion)
	if err != nil {
		return nil, err
	}
	gvk := gv.WithKind(kind.Kind)
	resolver, ok := e.objects.(admission.KindResolver)
	var gvr schema.GroupVersionResource
	var namespaced bool
	if ok {
		gvr, namespaced, ok = resolver.ResourceFor(gvk)
	}
	if !ok {
		return nil, fmt.Errorf("failed to find resource referenced by paramKind: '%v'", gvk)
	}
	namespace := ""
	if namespaced {
		namespace = ref.Namespace
		if namespace == "" {
			namespace = e.req.Namespace
		}
		if namespace == "" {
			return nil, errors.New("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
		}
	}
	var found []runtime.Object
	if ref.Name != "" {
		obj, err := e.objects.Get(e.ctx, gvr, namespace, ref.Name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, err
		default:
			found = append(found, obj)
		}
	} else if ref.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err != nil {
			return nil, err
		}
		list, err := e.objects.List(e.ctx, gvr, namespace)
		if err != nil {
			return nil, err
		}
		for _, obj := range list {
			if sel.Matches(labels.Set(matching.LabelsOf(obj))) {
				found = append(found, obj)
			}
		}
	}
	if len(found) == 0 {
		if ref.ParameterNotFoundAction != nil && *ref.ParameterNotFoundAction == admissionregistrationv1.DenyAction {
			return nil, errors.New("no params found for policy binding with `Deny` parameterNotFoundAction")
		}
		return nil, nil
	}
	for i, obj := range found {
		u, err := admission.ToUnstructured(obj, gvk)
		if err != nil {
			return nil, err
		}
		found[i] = u
	}
	return found, nil
}
