package kinds

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func deploymentPolicy(validations ...admissionregistrationv1.Validation) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				},
			}}},
			Validations: validations,
		},
	}
	validatingAdmissionPolicies().ApplyDefaults(p)
	return p
}

func TestPolicyValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		v     admissionregistrationv1.Validation
		error string
	}{
		{"compiles", admissionregistrationv1.Validation{Expression: "object.spec.replicas <= 5"}, ""},
		{"type confusion compiles", admissionregistrationv1.Validation{Expression: "object.spec.replicas > '1'"}, ""},
		{"syntax error", admissionregistrationv1.Validation{Expression: "object.spec.replicas <="}, "spec.validations[0].expression: Invalid value: \"object.spec.replicas <=\": compilation failed: ERROR: <input>:1:"},
		{"undeclared", admissionregistrationv1.Validation{Expression: "params.x == 1"}, "undeclared reference to 'params'"},
		{"bad message expression", admissionregistrationv1.Validation{Expression: "true", MessageExpression: "'a' +"}, "spec.validations[0].messageExpression"},
		{"empty", admissionregistrationv1.Validation{}, "spec.validations[0].expression: Required value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := validatePolicy(deploymentPolicy(tc.v))
			if got := errs.ToAggregate(); (got == nil) != (tc.error == "") || got != nil && !strings.Contains(got.Error(), tc.error) {
				t.Fatalf("errors %v, want %q", got, tc.error)
			}
		})
	}
	p := deploymentPolicy()
	if errs := validatePolicy(p); len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "validations or auditAnnotations must contain at least one item") {
		t.Errorf("a policy without validations: %v", errs)
	}
}

func TestBindingValidation(t *testing.T) {
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p",
			ValidationActions: []admissionregistrationv1.ValidationAction{"Deny", "Warn"},
			ParamRef:          &admissionregistrationv1.ParamRef{Name: "x"}}}
	got := validateBinding(b).ToAggregate().Error()
	for _, want := range []string{"must not contain both Deny and Warn", "spec.paramRef.parameterNotFoundAction: Required value"} {
		if !strings.Contains(got, want) {
			t.Errorf("errors %q lack %q", got, want)
		}
	}
}

func TestWebhookConfigurationValidation(t *testing.T) {
	none := admissionregistrationv1.SideEffectClassNone
	hook := func(name string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{Name: name, SideEffects: &none,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc"}}}
	}
	res := validatingWebhookConfigurations()
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{hook("a.example.com"), hook("a.example.com"), hook("short.name"), hook("")}}
	c.Webhooks[3].SideEffects = nil
	res.ApplyDefaults(c)
	if w := c.Webhooks[0]; *w.FailurePolicy != admissionregistrationv1.Fail || *w.TimeoutSeconds != 30 || *w.ClientConfig.Service.Port != 443 || w.AdmissionReviewVersions[0] != "v1" {
		t.Errorf("defaults %+v", w)
	}
	got := res.Validate(c).ToAggregate().Error()
	for _, want := range []string{"webhooks[1].name: Duplicate value", "webhooks[2].name: Invalid value: \"short.name\": should be a domain with at least three segments",
		"webhooks[3].name: Required value", "webhooks[3].sideEffects: Unsupported value: \"Unknown\""} {
		if !strings.Contains(got, want) {
			t.Errorf("errors %q lack %q", got, want)
		}
	}
}
