package validatingadmissionpolicy

import (
	"context"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/minik8s/minik8s/pkg/admission"
)

func (s *store) KindFor(gvr schema.GroupVersionResource) (schema.GroupVersionKind, bool) {
	if gvr == appsv1.SchemeGroupVersion.WithResource("deployments") {
		return appsv1.SchemeGroupVersion.WithKind("Deployment"), true
	}
	return schema.GroupVersionKind{}, false
}

// ResolveSchema knows a Deployment's spec.replicas, an integer.
func (s *store) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	if gvk != appsv1.SchemeGroupVersion.WithKind("Deployment") {
		return nil, resolver.ErrSchemaNotFound
	}
	object := func(props map[string]spec.Schema) spec.Schema {
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: props}}
	}
	d := object(map[string]spec.Schema{
		"apiVersion": *spec.StringProperty(), "kind": *spec.StringProperty(),
		"spec": object(map[string]spec.Schema{"replicas": *spec.Int32Property()}),
	})
	return &d, nil
}

func TestTypeCheckingStatus(t *testing.T) {
	pl, s := New(), &store{}
	write := func(p, old *admissionregistrationv1.ValidatingAdmissionPolicy) *admissionregistrationv1.ValidatingAdmissionPolicy {
		a := &admission.Attributes{Resource: policiesGVR, Operation: admission.Create, Name: p.Name, Object: p}
		if old != nil {
			a.Operation, a.OldObject = admission.Update, old
		}
		pl.Admit(context.Background(), a, s)
		return p
	}
	p := policy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.Validations[0].Expression = "object.spec.replicas > 1"
	})
	p.Generation = 1
	if st := write(p, nil).Status; st.TypeChecking == nil || len(st.TypeChecking.ExpressionWarnings) != 0 || st.ObservedGeneration != 1 {
		t.Fatalf("a well-typed policy's status: %+v", st)
	}
	confused := p.DeepCopy()
	confused.Generation = 2
	confused.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "object.spec.replicas > '1'",
		MessageExpression: "'wants replicas > 1, got ' + object.spec.replicas"}}
	st := write(confused, p).Status
	if st.ObservedGeneration != 2 || len(st.TypeChecking.ExpressionWarnings) != 2 {
		t.Fatalf("status %+v, want 2 warnings at generation 2", st)
	}
	w := st.TypeChecking.ExpressionWarnings
	if w[0].FieldRef != "spec.validations[0].expression" || !strings.Contains(w[0].Warning, "found no matching overload for '_>_' applied to '(int, string)'") {
		t.Errorf("first warning %+v", w[0])
	}
	if w[1].FieldRef != "spec.validations[0].messageExpression" || !strings.Contains(w[1].Warning, "found no matching overload for '_+_' applied to '(string, int)'") {
		t.Errorf("second warning %+v", w[1])
	}
	// A write that keeps the spec keeps the status.
	relabelled := confused.DeepCopy()
	relabelled.Labels = map[string]string{"touched": "yes"}
	relabelled.Status.ObservedGeneration = 7
	if got := write(relabelled, confused).Status; got.ObservedGeneration != 7 {
		t.Errorf("a metadata write recomputed the status: %+v", got)
	}
}

// Authorize lets alice delete, and nobody anything else.
func (s *store) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetUser().GetName() == "alice" && a.GetVerb() == "delete" && slices.Contains(a.GetUser().GetGroups(), "devs") {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// The authorizer variable asks the server's authorizer about the
// requesting user.
func TestAuthorizerVariable(t *testing.T) {
	p := policy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.Validations = []admissionregistrationv1.Validation{{
			Expression: "authorizer.group('apps').resource('deployments').namespace(request.namespace).check('delete').allowed()",
			Message:    "only those who may delete deployments may create them"}}
	})
	s := &store{objects: map[schema.GroupVersionResource][]runtime.Object{
		corev1.SchemeGroupVersion.WithResource("namespaces"): {&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "test"}}},
		policiesGVR: {p}, bindingsGVR: {binding("p", nil)},
	}}
	a := attrs(deployment("test", 1, nil), "")
	a.UserGroups = []string{"devs"}
	if r := New().Validate(context.Background(), a, s); r.Err != nil {
		t.Errorf("alice of devs: %v", r.Err)
	}
	a.UserName = "bob"
	if r := New().Validate(context.Background(), a, s); r.Err == nil || !strings.Contains(r.Err.Error(), "only those who may delete") {
		t.Errorf("bob: %v", r.Err)
	}
}
