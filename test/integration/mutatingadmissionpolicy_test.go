package integration

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// MutatingAdmissionPolicies change the objects their bindings select:
// an ApplyConfiguration merges an Object{...} into a Deployment, a
// JSONPatch adds to it, objects in namespaces no binding selects are
// stored as sent, and a policy that does not compile is refused.
func TestMutatingAdmissionPolicy(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	client := c.client
	for ns, env := range map[string]string{"map-test": "test", "map-prod": "prod"} {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
			Labels: map[string]string{"env": env}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	policies := client.AdmissionregistrationV1().MutatingAdmissionPolicies()
	bindings := client.AdmissionregistrationV1().MutatingAdmissionPolicyBindings()
	policy := func(name string, m admissionregistrationv1.Mutation) *admissionregistrationv1.MutatingAdmissionPolicy {
		return &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
					}}}},
				Mutations: []admissionregistrationv1.Mutation{m},
			}}
	}
	create := func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
		t.Helper()
		if _, err := policies.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := bindings.Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: p.Name + "-test"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: p.Name,
				MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{"env": "test"}}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deployment := func(ns, name string) *appsv1.Deployment {
		t.Helper()
		labels := map[string]string{"app": name}
		d, err := client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	create(policy("owner-label", admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
		ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
			Expression: `Object{metadata: Object.metadata{labels: {"owner": "team-" + namespaceObject.metadata.labels["env"]}}}`}}))
	create(policy("audited", admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
		JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `[
			JSONPatch{op: "add", path: "/metadata/annotations", value: {}},
			JSONPatch{op: "add", path: "/metadata/annotations/audited-by", value: request.userInfo.username}
		]`}}))

	t.Run("mutated", func(t *testing.T) {
		d := deployment("map-test", "web")
		if d.Labels["owner"] != "team-test" || d.Labels["app"] != "web" {
			t.Errorf("labels %v, want owner=team-test merged with app=web", d.Labels)
		}
		if d.Annotations["audited-by"] == "" {
			t.Errorf("annotations %v, want audited-by set by the JSONPatch", d.Annotations)
		}
		stored, err := client.AppsV1().Deployments("map-test").Get(ctx, "web", metav1.GetOptions{})
		if err != nil || stored.Labels["owner"] != "team-test" || stored.Annotations["audited-by"] != d.Annotations["audited-by"] {
			t.Errorf("stored %v %v (%v), want the mutations kept", stored.Labels, stored.Annotations, err)
		}
	})

	t.Run("other namespace untouched", func(t *testing.T) {
		d := deployment("map-prod", "web")
		if _, ok := d.Labels["owner"]; ok {
			t.Errorf("labels %v in a namespace no binding selects", d.Labels)
		}
		if _, ok := d.Annotations["audited-by"]; ok {
			t.Errorf("annotations %v in a namespace no binding selects", d.Annotations)
		}
	})

	t.Run("invalid expression", func(t *testing.T) {
		p := policy("broken", admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{spec: Object.spec{replicas: }}`}})
		_, err := policies.Create(ctx, p, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.mutations[0].applyConfiguration.expression") {
			t.Errorf("a policy that does not compile: %v, want 422 at spec.mutations[0].applyConfiguration.expression", err)
		}
	})

	k := newKubectl(t, c)
	for _, tc := range []struct {
		resource string
		header   []string
	}{
		{"mutatingadmissionpolicies", []string{"NAME", "MUTATIONS", "PARAMKIND", "AGE"}},
		{"mutatingadmissionpolicybindings", []string{"NAME", "POLICYNAME", "PARAMREF", "AGE"}},
	} {
		out := k.ok(t, "get", tc.resource)
		if got := tableHeader(out); !slices.Equal(got, tc.header) {
			t.Errorf("kubectl get %s: header %v, want %v", tc.resource, got, tc.header)
		}
	}
}
