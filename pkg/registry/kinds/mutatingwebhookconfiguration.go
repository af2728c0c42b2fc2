package kinds

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// MutatingWebhookConfigurations (admissionregistration.k8s.io/v1):
// stored, defaulted and validated as Kubernetes does; minik8s does not
// call webhooks.
func mutatingWebhookConfigurations() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations"), Kind: "MutatingWebhookConfiguration",
		Categories: []string{"api-extensions"},
		NameRule:   apivalidation.NameIsDNSSubdomain,
		Default: defaulter(func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			for i := range c.Webhooks {
				w := &c.Webhooks[i]
				defaultWebhook(mutatingWebhookOf(w))
				if w.ReinvocationPolicy == nil {
					w.ReinvocationPolicy = ptr.To(admissionregistrationv1.NeverReinvocationPolicy)
				}
			}
		}),
		Validate: validator(func(c *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
			hooks := make([]webhook, len(c.Webhooks))
			var errs field.ErrorList
			for i := range c.Webhooks {
				hooks[i] = mutatingWebhookOf(&c.Webhooks[i])
				if p := c.Webhooks[i].ReinvocationPolicy; p != nil {
					errs = append(errs, validation.Enum(*p, reinvocationPolicies, field.NewPath("webhooks").Index(i).Child("reinvocationPolicy"))...)
				}
			}
			return append(validateWebhooks(hooks), errs...)
		}),
		Printer: webhookPrinter(func(c *admissionregistrationv1.MutatingWebhookConfiguration) int { return len(c.Webhooks) }),
	}
}

var reinvocationPolicies = []admissionregistrationv1.ReinvocationPolicyType{admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.IfNeededReinvocationPolicy}

func mutatingWebhookOf(w *admissionregistrationv1.MutatingWebhook) webhook {
	return webhook{w.Name, &w.ClientConfig, w.Rules, &w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector,
		&w.SideEffects, &w.TimeoutSeconds, &w.AdmissionReviewVersions, w.MatchConditions}
}
