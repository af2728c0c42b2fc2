package mutatingadmissionpolicy

import (
	"context"
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
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/admission"
)

var (
	namespacesGVR = corev1.SchemeGroupVersion.WithResource("namespaces")
	configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")
)

// store is a fake admission.Objects over a few objects, with the
// built-in kinds' schemas for ApplyConfigurations.
type store struct {
	objects map[schema.GroupVersionResource][]runtime.Object
}

func (s *store) Get(_ context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	for _, o := range s.objects[gvr] {
		if m, _ := meta.Accessor(o); m.GetNamespace() == namespace && m.GetName() == name {
			return o, nil
		}
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

func (s *store) List(_ context.Context, gvr schema.GroupVersionResource, namespace string) ([]runtime.Object, error) {
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

func (s *store) KindFor(schema.GroupVersionResource) (schema.GroupVersionKind, bool) {
	return schema.GroupVersionKind{}, false
}

func (s *store) FieldTypes(schema.GroupVersionKind) (managedfields.TypeConverter, error) {
	return applyconfigurations.NewTypeConverter(scheme.Scheme), nil
}

func applyConfiguration(expr string) admissionregistrationv1.Mutation {
	return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
		ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expr}}
}

func jsonPatch(expr string) admissionregistrationv1.Mutation {
	return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
		JSONPatch: &admissionregistrationv1.JSONPatch{Expression: expr}}
}

func policy(name string, mutate func(*admissionregistrationv1.MutatingAdmissionPolicySpec), mutations ...admissionregistrationv1.Mutation) *admissionregistrationv1.MutatingAdmissionPolicy {
	p := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{"*"},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				}}}},
			Mutations: mutations,
		}}
	if mutate != nil {
		mutate(&p.Spec)
	}
	return p
}

func binding(policy string, mutate func(*admissionregistrationv1.MutatingAdmissionPolicyBindingSpec)) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: policy + "-binding"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: policy}}
	if mutate != nil {
		mutate(&b.Spec)
	}
	return b
}

func deployment() *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "test", Labels: map[string]string{"app": "web"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)}}
}

func attrs(obj runtime.Object) *admission.Attributes {
	m, _ := meta.Accessor(obj)
	return &admission.Attributes{Resource: appsv1.SchemeGroupVersion.WithResource("deployments"), Kind: appsv1.SchemeGroupVersion.WithKind("Deployment"),
		Operation: admission.Create, Namespace: m.GetNamespace(), Name: m.GetName(), Object: obj, UserName: "alice"}
}

func TestAdmit(t *testing.T) {
	withParams := func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
		s.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	}
	paramRef := func(name string, action admissionregistrationv1.ParameterNotFoundActionType) func(*admissionregistrationv1.MutatingAdmissionPolicyBindingSpec) {
		return func(b *admissionregistrationv1.MutatingAdmissionPolicyBindingSpec) {
			b.ParamRef = &admissionregistrationv1.ParamRef{Name: name, ParameterNotFoundAction: ptr.To(action)}
		}
	}
	for _, tc := range []struct {
		name     string
		policies []*admissionregistrationv1.MutatingAdmissionPolicy
		bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
		check    func(*appsv1.Deployment) bool
		err      string
	}{
		{name: "apply configuration merges",
			policies: []*admissionregistrationv1.MutatingAdmissionPolicy{policy("p", nil, applyConfiguration(`Object{spec: Object.spec{replicas: 3}, metadata: Object.metadata{labels: {"team": "a"}}}`))},
			bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{binding("p", nil)},
			check: func(d *appsv1.Deployment) bool {
				return *d.Spec.Replicas == 3 && d.Labels["team"] == "a" && d.Labels["app"] == "web"
			}},
		{name: "json patch, request and variables",
			policies: []*admissionregistrationv1.MutatingAdmissionPolicy{policy("p", func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
				s.Variables = []admissionregistrationv1.Variable{{Name: "who", Expression: "request.userInfo.username"}}
			}, jsonPatch(`[JSONPatch{op: "add", path: "/metadata/labels/by", value: variables.who}]`))},
			bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{binding("p", nil)},
			check:    func(d *appsv1.Deployment) bool { return d.Labels["by"] == "alice" }},
		{name: "mutations in order",
			policies: []*admissionregistrationv1.MutatingAdmissionPolicy{policy("p", nil,
				applyConfiguration(`Object{spec: Object.spec{replicas: 2}}`),
				jsonPatch(`[JSONPatch{op: "replace", path: "/spec/replicas", value: object.spec.replicas * 10}]`))},
			bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{binding("p", nil)},
			check:    func(d *appsv1.Deployment) bool { return *d.Spec.Replicas == 20 }},
		{name: "unbound policy",
			policies: []*admissionregistrationv1.MutatingAdmissionPolicy{policy("p", nil, applyConfiguration(`Object{spec: Object.spec{replicas: 3}}`))},
			bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{binding("q", nil)},
			check:    func(d *appsv1.Deployment) bool { return *d.Spec.Replicas == 1 }},
		{name: "binding namespace selector excludes",
			policies: []*admissionregistrationv1.MutatingAdmissionPolicy{policy("p", nil, applyConfiguration(`Object{spec: Object.spec{replicas: 3}}`))},
			bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{binding("p", func(b *admissionregistrationv1.MutatingAdmissionPolicyBindingSpec) {
				b.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}
			})},
			check: func(d *appsv1.Deployment) bool { return *d.Spec.Replicas == 1 }},
		{name: "match condition false",
			policies: []*admissionregistrationv1.MutatingAdmissionPolicy{policy("p", func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
				s.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "big", Expression: "object.spec.replicas > 5"}}
			}, applyConfiguration(`Object{spec: Object.spec{replicas: 3}}`))},
			bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{binding("p", nil)},
			check:    func(d *appsv1.Deployment) bool { return *d.Spec.Replicas == 1 }},
		{name: "params",
			policies: []*admissionregistrationv1.MutatingAdmissionPolicy{policy("p", withParams, applyConfiguration(`Object{spec: Object.spec{replicas: int(params.data.replicas)}}`))},
			bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{binding("p", paramRef("defaults", admissionregistrationv1.DenyAction))},
			check:    func(d *appsv1.Deployment) bool { return *d.Spec.Replicas == 4 }},
		{name: "param missing, Deny",
			policies: []*admissionregistrationv1.MutatingAdmissionPolicy{policy("p", withParams, applyConfiguration(`Object{spec: Object.spec{replicas: 3}}`))},
			bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{binding("p", paramRef("missing", admissionregistrationv1.DenyAction))},
			err:      "policy 'p' with binding 'p-binding' denied request: failed to configure binding: no params found"},
		{name: "param missing, Allow",
			policies: []*admissionregistrationv1.MutatingAdmissionPolicy{policy("p", withParams, applyConfiguration(`Object{spec: Object.spec{replicas: 3}}`))},
			bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{binding("p", paramRef("missing", admissionregistrationv1.AllowAction))},
			check:    func(d *appsv1.Deployment) bool { return *d.Spec.Replicas == 1 }},
		{name: "evaluation error, Fail",
			policies: []*admissionregistrationv1.MutatingAdmissionPolicy{policy("p", nil, applyConfiguration(`Object{spec: Object.spec{replicas: 1 / (object.spec.replicas - 1)}}`))},
			bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{binding("p", nil)},
			err:      "policy 'p' with binding 'p-binding' denied request: "},
		{name: "evaluation error, Ignore",
			policies: []*admissionregistrationv1.MutatingAdmissionPolicy{policy("p", func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
				s.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
			}, applyConfiguration(`Object{spec: Object.spec{replicas: 1 / (object.spec.replicas - 1)}}`))},
			bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{binding("p", nil)},
			check:    func(d *appsv1.Deployment) bool { return *d.Spec.Replicas == 1 }},
		{name: "failed test op leaves the object",
			policies: []*admissionregistrationv1.MutatingAdmissionPolicy{policy("p", nil, jsonPatch(`[
				JSONPatch{op: "test", path: "/spec/replicas", value: 7},
				JSONPatch{op: "replace", path: "/spec/replicas", value: 8}]`))},
			bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{binding("p", nil)},
			check:    func(d *appsv1.Deployment) bool { return *d.Spec.Replicas == 1 }},
		{name: "IfNeeded reinvoked after a later change",
			// a runs first (by name) and doubles what it sees when b has
			// set its marker; b sets the marker. Reinvoked, a sees it.
			policies: []*admissionregistrationv1.MutatingAdmissionPolicy{
				policy("a", func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
					s.ReinvocationPolicy = admissionregistrationv1.IfNeededReinvocationPolicy
					s.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "marked", Expression: `"marked" in object.metadata.labels`}}
				}, applyConfiguration(`Object{metadata: Object.metadata{labels: {"seen": "yes"}}}`)),
				policy("b", nil, applyConfiguration(`Object{metadata: Object.metadata{labels: {"marked": "yes"}}}`))},
			bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{binding("a", nil), binding("b", nil)},
			check:    func(d *appsv1.Deployment) bool { return d.Labels["marked"] == "yes" && d.Labels["seen"] == "yes" }},
		{name: "Never not reinvoked",
			policies: []*admissionregistrationv1.MutatingAdmissionPolicy{
				policy("a", func(s *admissionregistrationv1.MutatingAdmissionPolicySpec) {
					s.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "marked", Expression: `"marked" in object.metadata.labels`}}
				}, applyConfiguration(`Object{metadata: Object.metadata{labels: {"seen": "yes"}}}`)),
				policy("b", nil, applyConfiguration(`Object{metadata: Object.metadata{labels: {"marked": "yes"}}}`))},
			bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{binding("a", nil), binding("b", nil)},
			check:    func(d *appsv1.Deployment) bool { return d.Labels["marked"] == "yes" && d.Labels["seen"] == "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &store{objects: map[schema.GroupVersionResource][]runtime.Object{
				namespacesGVR: {&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "test", Labels: map[string]string{"env": "test"}}}},
				configMapsGVR: {&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: "test"}, Data: map[string]string{"replicas": "4"}}},
				policiesGVR:   nil, bindingsGVR: nil,
			}}
			for _, p := range tc.policies {
				s.objects[policiesGVR] = append(s.objects[policiesGVR], p)
			}
			for _, b := range tc.bindings {
				s.objects[bindingsGVR] = append(s.objects[bindingsGVR], b)
			}
			d := deployment()
			r := New().Admit(context.Background(), attrs(d), s)
			if tc.err != "" {
				if r.Err == nil || !strings.Contains(r.Err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", r.Err, tc.err)
				}
				return
			}
			if r.Err != nil {
				t.Fatalf("refused: %v", r.Err)
			}
			if !tc.check(d) {
				t.Errorf("mutated to labels %v, spec %+v", d.Labels, d.Spec)
			}
		})
	}
}

// What a mutation makes is defaulted again, as a new object is.
func TestAdmitDefaults(t *testing.T) {
	s := &store{objects: map[schema.GroupVersionResource][]runtime.Object{
		namespacesGVR: {&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "test"}}},
		policiesGVR:   {policy("p", nil, applyConfiguration(`Object{spec: Object.spec{paused: true}}`))},
		bindingsGVR:   {binding("p", nil)},
	}}
	d := deployment()
	a := attrs(d)
	a.Default = func(obj runtime.Object) {
		if d := obj.(*appsv1.Deployment); d.Spec.RevisionHistoryLimit == nil {
			d.Spec.RevisionHistoryLimit = ptr.To[int32](10)
		}
	}
	if r := New().Admit(context.Background(), a, s); r.Err != nil {
		t.Fatal(r.Err)
	}
	if !d.Spec.Paused || d.Spec.RevisionHistoryLimit == nil || *d.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("spec %+v, want paused and defaulted", d.Spec)
	}
}
