package validatingadmissionpolicy

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"

	"github.com/minik8s/minik8s/pkg/admission"
)

// Admit type-checks a policy being written, as Kubernetes' policy
// controller does after the write: its validations' expressions and
// messageExpressions are checked against the schemas of the kinds its
// matchConstraints name (and of its paramKind), and the checker's
// warnings go to status.typeChecking with status.observedGeneration
// the policy's generation. A write that leaves the spec as it was keeps
// the status. Other writes are not looked at.
func (pl *Plugin) Admit(_ context.Context, a *admission.Attributes, objects admission.Objects) admission.Result {
	p, ok := a.Object.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	if a.Resource != policiesGVR || a.Subresource != "" || !ok {
		return admission.Result{}
	}
	if old, ok := a.OldObject.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok &&
		old.Status.TypeChecking != nil && apiequality.Semantic.DeepEqual(old.Spec, p.Spec) {
		return admission.Result{}
	}
	p.Status.ObservedGeneration = p.Generation
	p.Status.TypeChecking = &admissionregistrationv1.TypeChecking{ExpressionWarnings: typeCheck(p, objects)}
	return admission.Result{}
}

// typeCheck returns Kubernetes' type checker's warnings on p, over the
// schemas objects resolves; none when it resolves none.
func typeCheck(p *admissionregistrationv1.ValidatingAdmissionPolicy, objects admission.Objects) []admissionregistrationv1.ExpressionWarning {
	schemas, ok := objects.(admission.SchemaResolver)
	kinds, ok2 := objects.(admission.KindResolver)
	if !ok || !ok2 {
		return nil
	}
	checker := &validating.TypeChecker{SchemaResolver: schemas, RestMapper: kindMapper{kinds: kinds}}
	return checker.Check(p)
}

// kindMapper is the part of a RESTMapper the type checker calls.
type kindMapper struct {
	meta.RESTMapper
	kinds admission.KindResolver
}

func (m kindMapper) KindsFor(gvr schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	gvk, ok := m.kinds.KindFor(gvr)
	if !ok {
		return nil, &meta.NoResourceMatchError{PartialResource: gvr}
	}
	return []schema.GroupVersionKind{gvk}, nil
}
