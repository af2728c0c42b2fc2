package policy

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

// Params returns the params a binding's ref gives a policy of kind,
// each to be evaluated on its own: one nil when the policy takes none
// (kind nil); none when none is found and ref allows it.
// paramRef.namespace, when unset, is the request's for namespaced param
// kinds. The params are in their unstructured form, as CEL sees them.
func (r *Request) Params(kind *admissionregistrationv1.ParamKind, ref *admissionregistrationv1.ParamRef) ([]runtime.Object, error) {
	if kind == nil {
		return []runtime.Object{nil}, nil
	}
	if ref == nil {
		return nil, fmt.Errorf("paramKind kind `%s` is set but paramRef is nil", kind.Kind)
	}
	gv, err := schema.ParseGroupVersion(kind.APIVersion)
	if err != nil {
		return nil, err
	}
	gvk := gv.WithKind(kind.Kind)
	resolver, ok := r.objects.(admission.KindResolver)
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
			namespace = r.Attributes.Namespace
		}
		if namespace == "" {
			return nil, errors.New("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
		}
	}
	var found []runtime.Object
	if ref.Name != "" {
		obj, err := r.objects.Get(r.ctx, gvr, namespace, ref.Name)
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
		list, err := r.objects.List(r.ctx, gvr, namespace)
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
