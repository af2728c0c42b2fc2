package validatingadmissionpolicy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/admission"
)

// store is a fake admission.Objects over a few objects.
type store struct {
	objects map[schema.GroupVersionResource][]runtime.Object
	lists   int
}

var configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")

func (s *store) Get(_ context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	for _, o := range s.objects[gvr] {
		if m, _ := meta.Accessor(o); m.GetNamespace() == namespace && m.GetName() == name {
			return o, nil
		}
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

func (s *store) List(_ context.Context, gvr schema.GroupVersionResource, namespace string) ([]runtime.Object, error) {
	s.lists++
	var out []runtime.Object
	for _, o := range s.objects[gvr] {
		if m, _ := meta.Accessor(o); namespace == "" || m.GetNamespace() == namespace {
			out = append(out, o)
		}
	}
	return out, nil
}

func (s *store) ResourceFor(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, bool) {
	if gvk == corev1.SchemeGroupVersion.WithKind("ConfigMap") {
		return configMapsGVR, true, true
	}
	return schema.GroupVersionResource{}, false, false
}

func deploymentRule(resources ...string) admissionregistrationv1.NamedRuleWithOperations {
	return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{"*"},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: resources},
	}}
}

func policy(name string, mutate func(*admissionregistrationv1.ValidatingAdmissionPolicySpec)) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{deploymentRule("deployments")}},
			Validations:      []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= 5"}},
		}}
	if mutate != nil {
		mutate(&p.Spec)
	}
	return p
}

func binding(policy string, mutate func(*admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec)) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: policy + "-binding"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	if mutate != nil {
		mutate(&b.Spec)
	}
	return b
}

func deployment(ns string, replicas int32, labels map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas}}
}

func attrs(obj runtime.Object, sub string) *admission.Attributes {
	m, _ := meta.Accessor(obj)
	return &admission.Attributes{Resource: appsv1.SchemeGroupVersion.WithResource("deployments"), Kind: appsv1.SchemeGroupVersion.WithKind("Deployment"),
		Subresource: sub, Operation: admission.Create, Namespace: m.GetNamespace(), Name: m.GetName(), Object: obj, UserName: "alice"}
}

func TestValidate(t *testing.T) {
	namespaces := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "test", Labels: map[string]string{"env": "test"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{"env": "prod"}}},
	}
	envTest := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "test"}}
	params := []runtime.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: "test", Labels: map[string]string{"kind": "limit"}}, Data: map[string]string{"max": "3"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: "prod", Labels: map[string]string{"kind": "limit"}}, Data: map[string]string{"max": "10"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "prod", Labels: map[string]string{"kind": "limit"}}, Data: map[string]string{"max": "7"}},
	}
	withParams := func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
		s.Validations = []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= int(params.data.max)",
			MessageExpression: "'at most ' + params.data.max + ' replicas'"}}
	}
	ref := func(name string, action admissionregistrationv1.ParameterNotFoundActionType) func(*admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
		return func(b *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			b.ParamRef = &admissionregistrationv1.ParamRef{Name: name, ParameterNotFoundAction: &action}
		}
	}
	actions := func(a ...admissionregistrationv1.ValidationAction) func(*admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
		return func(b *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) { b.ValidationActions = a }
	}
	const denied = "ValidatingAdmissionPolicy 'p' with binding 'p-binding' denied request: "
	for _, tc := range []struct {
		name     string
		policy   *admissionregistrationv1.ValidatingAdmissionPolicy
		binding  *admissionregistrationv1.ValidatingAdmissionPolicyBinding
		attrs    *admission.Attributes
		code     int32  // 0: admitted
		message  string // of the refusal, or of the one warning
		warnings int
		audit    string // a substring of an audit annotation
	}{
		{name: "deny, Invalid by default", policy: policy("p", nil), binding: binding("p", nil),
			attrs: attrs(deployment("test", 6, nil), ""), code: 422, message: denied + "failed expression: object.spec.replicas <= 5"},
		{name: "within the rule", policy: policy("p", nil), binding: binding("p", nil), attrs: attrs(deployment("test", 5, nil), "")},
		{name: "reason and message", policy: policy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.Validations[0].Reason = ptr.To(metav1.StatusReasonForbidden)
			s.Validations[0].Message = "too many replicas"
		}), binding: binding("p", nil), attrs: attrs(deployment("test", 6, nil), ""), code: 403, message: denied + "too many replicas"},
		{name: "binding namespace selector excludes", policy: policy("p", nil),
			binding: binding("p", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
				b.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: envTest}
			}), attrs: attrs(deployment("prod", 6, nil), "")},
		{name: "binding namespace selector includes", policy: policy("p", nil),
			binding: binding("p", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
				b.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: envTest}
			}), attrs: attrs(deployment("test", 6, nil), ""), code: 422},
		{name: "policy object selector", policy: policy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"checked": "yes"}}
		}), binding: binding("p", nil), attrs: attrs(deployment("test", 6, map[string]string{"checked": "no"}), "")},
		{name: "other resource", policy: policy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.ResourceRules = []admissionregistrationv1.NamedRuleWithOperations{deploymentRule("replicasets")}
		}), binding: binding("p", nil), attrs: attrs(deployment("test", 6, nil), "")},
		{name: "subresource not matched by the resource", policy: policy("p", nil), binding: binding("p", nil), attrs: attrs(deployment("test", 6, nil), "scale")},
		{name: "subresource matched by a wildcard", policy: policy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.ResourceRules = []admissionregistrationv1.NamedRuleWithOperations{deploymentRule("*/scale")}
		}), binding: binding("p", nil), attrs: attrs(deployment("test", 6, nil), "scale"), code: 422},
		{name: "excluded", policy: policy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.ResourceRules = []admissionregistrationv1.NamedRuleWithOperations{deploymentRule("*")}
			s.MatchConstraints.ExcludeResourceRules = []admissionregistrationv1.NamedRuleWithOperations{deploymentRule("deployments")}
		}), binding: binding("p", nil), attrs: attrs(deployment("test", 6, nil), "")},
		{name: "operation not matched", policy: policy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
		}), binding: binding("p", nil), attrs: attrs(deployment("test", 6, nil), "")},
		{name: "unbound policy", policy: policy("p", nil), binding: binding("q", nil), attrs: attrs(deployment("test", 6, nil), "")},
		{name: "match condition false", policy: policy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-alice", Expression: "request.userInfo.username != 'alice'"}}
		}), binding: binding("p", nil), attrs: attrs(deployment("test", 6, nil), "")},
		{name: "variables and messageExpression", policy: policy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.Variables = []admissionregistrationv1.Variable{{Name: "max", Expression: "namespaceObject.metadata.name == 'test' ? 2 : 10"}}
			s.Validations = []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= variables.max",
				MessageExpression: "'replicas ' + string(object.spec.replicas) + ' above ' + string(variables.max) + ' in ' + request.namespace"}}
		}), binding: binding("p", nil), attrs: attrs(deployment("test", 3, nil), ""), code: 422, message: denied + "replicas 3 above 2 in test"},
		{name: "param by name, request namespace", policy: policy("p", withParams), binding: binding("p", ref("limits", admissionregistrationv1.DenyAction)),
			attrs: attrs(deployment("test", 4, nil), ""), code: 422, message: denied + "at most 3 replicas"},
		{name: "param of another namespace", policy: policy("p", withParams), binding: binding("p", ref("limits", admissionregistrationv1.DenyAction)),
			attrs: attrs(deployment("prod", 4, nil), "")},
		{name: "param by selector, each checked", policy: policy("p", withParams), binding: binding("p", func(b *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			b.ParamRef = &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"kind": "limit"}},
				ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}
		}), attrs: attrs(deployment("prod", 8, nil), ""), code: 422, message: denied + "at most 7 replicas"},
		{name: "param missing, Deny", policy: policy("p", withParams), binding: binding("p", ref("missing", admissionregistrationv1.DenyAction)),
			attrs: attrs(deployment("test", 1, nil), ""), code: 422, message: denied + "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"},
		{name: "param missing, Allow", policy: policy("p", withParams), binding: binding("p", ref("missing", admissionregistrationv1.AllowAction)),
			attrs: attrs(deployment("test", 100, nil), "")},
		{name: "param missing, Deny, failurePolicy Ignore", policy: policy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			withParams(s)
			s.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
		}), binding: binding("p", ref("missing", admissionregistrationv1.DenyAction)), attrs: attrs(deployment("test", 1, nil), "")},
		{name: "evaluation error, Fail", policy: policy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.Validations = []admissionregistrationv1.Validation{{Expression: "object.spec.nothing == 1"}}
		}), binding: binding("p", nil), attrs: attrs(deployment("test", 1, nil), ""), code: 422, message: "no such key: nothing"},
		{name: "evaluation error, Ignore", policy: policy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.Validations = []admissionregistrationv1.Validation{{Expression: "object.spec.nothing == 1"}}
			s.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
		}), binding: binding("p", nil), attrs: attrs(deployment("test", 1, nil), "")},
		{name: "warn", policy: policy("p", nil), binding: binding("p", actions(admissionregistrationv1.Warn)),
			attrs: attrs(deployment("test", 6, nil), ""), warnings: 1,
			message: "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'p-binding': failed expression: object.spec.replicas <= 5"},
		{name: "audit", policy: policy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "replicas", ValueExpression: "string(object.spec.replicas)"}}
		}), binding: binding("p", actions(admissionregistrationv1.Audit)),
			attrs: attrs(deployment("test", 6, nil), ""), audit: `"message":"failed expression: object.spec.replicas \u003c= 5","policy":"p","binding":"p-binding","expressionIndex":0`},
		{name: "deny and audit", policy: policy("p", nil), binding: binding("p", actions(admissionregistrationv1.Deny, admissionregistrationv1.Audit)),
			attrs: attrs(deployment("test", 6, nil), ""), code: 422, audit: `"validationActions":["Deny","Audit"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &store{objects: map[schema.GroupVersionResource][]runtime.Object{
				corev1.SchemeGroupVersion.WithResource("namespaces"): namespaces, configMapsGVR: params,
				policiesGVR: {tc.policy}, bindingsGVR: {tc.binding},
			}}
			r := New().Validate(context.Background(), tc.attrs, s)
			if tc.code == 0 {
				if r.Err != nil {
					t.Fatalf("refused: %v", r.Err)
				}
			} else {
				status, ok := r.Err.(apierrors.APIStatus)
				if !ok {
					t.Fatalf("admitted (%v), want %d", r.Err, tc.code)
				}
				if status.Status().Code != tc.code || !strings.Contains(status.Status().Message, tc.message) {
					t.Fatalf("refused with %d %q, want %d %q", status.Status().Code, status.Status().Message, tc.code, tc.message)
				}
			}
			if len(r.Warnings) != tc.warnings || tc.warnings > 0 && r.Warnings[0] != tc.message {
				t.Errorf("warnings %q", r.Warnings)
			}
			if tc.audit != "" && !strings.Contains(r.AuditAnnotations[ValidationFailureAnnotation], tc.audit) {
				t.Errorf("audit annotations %v, want %s", r.AuditAnnotations, tc.audit)
			}
		})
	}
}

func TestAuditAnnotationsAndFailureList(t *testing.T) {
	p := policy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "replicas", ValueExpression: "string(object.spec.replicas)"}}
	})
	s := &store{objects: map[schema.GroupVersionResource][]runtime.Object{
		corev1.SchemeGroupVersion.WithResource("namespaces"): {&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "test"}}},
		policiesGVR: {p}, bindingsGVR: {binding("p", nil)},
	}}
	r := New().Validate(context.Background(), attrs(deployment("test", 2, nil), ""), s)
	if r.Err != nil || r.AuditAnnotations["p/replicas"] != "2" {
		t.Fatalf("result %+v", r)
	}
	var failures []validationFailure
	if v, ok := r.AuditAnnotations[ValidationFailureAnnotation]; ok {
		_ = json.Unmarshal([]byte(v), &failures)
		t.Errorf("failures %v on an admitted write", failures)
	}
}

// Compiled policies are kept by resourceVersion: the same version is
// not compiled again, a new one is.
func TestCompiledOncePerResourceVersion(t *testing.T) {
	pl := New()
	p := policy("p", nil)
	first := pl.validatorFor(p)
	if pl.validatorFor(p.DeepCopy()) != first {
		t.Error("the same resourceVersion was compiled again")
	}
	changed := policy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) { s.Validations[0].Expression = "true" })
	changed.ResourceVersion = "2"
	if pl.validatorFor(changed) == first {
		t.Error("a new resourceVersion kept the old program")
	}
	pl.compiled.Forget(map[string]bool{})
	if pl.compiled.Len() != 0 {
		t.Error("a deleted policy's program is kept")
	}
}

// Writes no policy matches stop before bindings are listed; writes of
// admissionregistration objects are not looked at.
func TestCheapWhenNothingMatches(t *testing.T) {
	s := &store{objects: map[schema.GroupVersionResource][]runtime.Object{
		corev1.SchemeGroupVersion.WithResource("namespaces"): {&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "test"}}},
		policiesGVR: {policy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.ResourceRules = []admissionregistrationv1.NamedRuleWithOperations{deploymentRule("replicasets")}
		})},
	}}
	if r := New().Validate(context.Background(), attrs(deployment("test", 6, nil), ""), s); r.Err != nil || s.lists != 1 {
		t.Errorf("result %+v after %d lists", r, s.lists)
	}
	a := attrs(deployment("test", 6, nil), "")
	a.Resource = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies")
	if New().Validate(context.Background(), a, s); s.lists != 1 {
		t.Errorf("an admissionregistration write listed policies")
	}
}
