package integration

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// warnings collects the Warning headers a client gets.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// ValidatingAdmissionPolicies are enforced where their bindings put
// them: Deny refuses with the policy's message, Warn warns, params come
// from ConfigMaps, and a policy that does not compile is refused.
func TestValidatingAdmissionPolicy(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	warned := &warnings{}
	cfg := rest.CopyConfig(c.config)
	cfg.WarningHandler = warned
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for ns, env := range map[string]string{"vap-test": "test", "vap-prod": "prod"} {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
			Labels: map[string]string{"env": env}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	policies := client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	bindings := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	deployments := func(name string) *admissionregistrationv1.ValidatingAdmissionPolicy {
		return &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
					}}}},
			}}
	}
	bind := func(name, policy string, env string, action admissionregistrationv1.ValidationAction, ref *admissionregistrationv1.ParamRef) {
		t.Helper()
		if _, err := bindings.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy, ParamRef: ref,
				ValidationActions: []admissionregistrationv1.ValidationAction{action},
				MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{"env": env}}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deployment := func(ns, name string, replicas int32) error {
		labels := map[string]string{"app": name}
		_, err := client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}, metav1.CreateOptions{})
		return err
	}

	max5 := deployments("max-replicas")
	max5.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= 5",
		Reason: ptr.To(metav1.StatusReasonForbidden), MessageExpression: "'at most 5 replicas, not ' + string(object.spec.replicas)"}}
	created, err := policies.Create(ctx, max5, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Status.TypeChecking == nil || len(created.Status.TypeChecking.ExpressionWarnings) != 0 || created.Status.ObservedGeneration != 1 {
		t.Errorf("status of a well-typed policy: %+v", created.Status)
	}
	if *created.Spec.FailurePolicy != admissionregistrationv1.Fail || *created.Spec.MatchConstraints.MatchPolicy != admissionregistrationv1.Equivalent {
		t.Errorf("defaults: %+v", created.Spec)
	}
	bind("max-replicas-test", "max-replicas", "test", admissionregistrationv1.Deny, nil)

	t.Run("deny", func(t *testing.T) {
		err := deployment("vap-test", "big", 6)
		const want = "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-test' denied request: at most 5 replicas, not 6"
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Fatalf("6 replicas in an env=test namespace: %v, want 403 %q", err, want)
		}
		if err := deployment("vap-test", "small", 5); err != nil {
			t.Errorf("5 replicas: %v", err)
		}
		if err := deployment("vap-prod", "big", 6); err != nil {
			t.Errorf("6 replicas in an env=prod namespace: %v", err)
		}
	})

	t.Run("warn", func(t *testing.T) {
		bind("max-replicas-prod", "max-replicas", "prod", admissionregistrationv1.Warn, nil)
		warned.take()
		if err := deployment("vap-prod", "bigger", 7); err != nil {
			t.Fatalf("a warned deployment: %v", err)
		}
		const want = "Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-prod': at most 5 replicas, not 7"
		if got := warned.take(); !slices.Contains(got, want) {
			t.Errorf("warnings %q, want %q", got, want)
		}
	})

	t.Run("params", func(t *testing.T) {
		if _, err := client.CoreV1().ConfigMaps("vap-test").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "replica-limit"},
			Data: map[string]string{"max": "2"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := deployments("replica-limit")
		p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
		p.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= int(params.data.max)",
			MessageExpression: "'at most ' + params.data.max + ' replicas'"}}
		if _, err := policies.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bind("replica-limit-test", "replica-limit", "test", admissionregistrationv1.Deny,
			&admissionregistrationv1.ParamRef{Name: "replica-limit", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)})
		err := deployment("vap-test", "three", 3)
		const want = "ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-test' denied request: at most 2 replicas"
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Fatalf("3 replicas over a limit of 2: %v, want 422 %q", err, want)
		}
		if err := deployment("vap-test", "two", 2); err != nil {
			t.Errorf("2 replicas: %v", err)
		}
	})

	t.Run("invalid expression", func(t *testing.T) {
		p := deployments("broken")
		p.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <="}}
		_, err := policies.Create(ctx, p, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.validations[0].expression") || !strings.Contains(err.Error(), "Syntax error") {
			t.Errorf("a policy that does not compile: %v, want 422", err)
		}
	})

	t.Run("type checking", func(t *testing.T) {
		p := deployments("confused")
		p.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "object.spec.replicas > '1'"}}
		got, err := policies.Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w := got.Status.TypeChecking.ExpressionWarnings
		if len(w) != 1 || w[0].FieldRef != "spec.validations[0].expression" || !strings.Contains(w[0].Warning, "found no matching overload for '_>_' applied to '(int, string)'") {
			t.Errorf("type checking warnings %+v", w)
		}
	})

	k := newKubectl(t, c)
	t.Run("type checking a custom resource", func(t *testing.T) {
		k.ok(t, "apply", "-f", filepath.Join(examplesPath(t), "crd", "widget-crd.yaml"))
		k.ok(t, "wait", "--for", "condition=established", "--timeout=30s", "crd/widgets.example.com")
		p := deployments("widgets")
		p.Spec.MatchConstraints.ResourceRules[0].Rule = admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}
		p.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "object.spec.replicas > '1'"}, {Expression: "object.spec.maxRetries < 10"}}
		got, err := policies.Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w := got.Status.TypeChecking.ExpressionWarnings
		if len(w) != 2 || !strings.Contains(w[0].Warning, "found no matching overload for '_>_' applied to '(int, string)'") ||
			w[1].FieldRef != "spec.validations[1].expression" || !strings.Contains(w[1].Warning, "undefined field 'maxRetries'") {
			t.Errorf("type checking warnings %+v", w)
		}
	})
	for _, tc := range []struct {
		resource string
		header   []string
	}{
		{"validatingadmissionpolicies", []string{"NAME", "VALIDATIONS", "PARAMKIND", "AGE"}},
		{"validatingadmissionpolicybindings", []string{"NAME", "POLICYNAME", "PARAMREF", "AGE"}},
		{"validatingwebhookconfigurations", []string{"NAME", "WEBHOOKS", "AGE"}},
		{"mutatingwebhookconfigurations", []string{"NAME", "WEBHOOKS", "AGE"}},
	} {
		out := k.ok(t, "get", tc.resource)
		if got := tableHeader(out); len(got) > 0 && !slices.Equal(got, tc.header) {
			t.Errorf("kubectl get %s: header %v, want %v", tc.resource, got, tc.header)
		}
	}
}
