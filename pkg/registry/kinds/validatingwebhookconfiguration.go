package kinds

import (
	"net/url"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	webhookadmission "github.com/minik8s/minik8s/pkg/admission/webhook"
	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// ValidatingWebhookConfigurations (admissionregistration.k8s.io/v1):
// stored, defaulted and validated as Kubernetes does; minik8s does not
// call webhooks.
func validatingWebhookConfigurations() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations"), Kind: "ValidatingWebhookConfiguration",
		Categories: []string{"api-extensions"},
		NameRule:   apivalidation.NameIsDNSSubdomain,
		Default: defaulter(func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			for i := range c.Webhooks {
				w := &c.Webhooks[i]
				defaultWebhook(webhookOf(w))
			}
		}),
		Validate: validator(func(c *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
			hooks := make([]webhook, len(c.Webhooks))
			for i := range c.Webhooks {
				hooks[i] = webhookOf(&c.Webhooks[i])
			}
			return validateWebhooks(hooks)
		}),
		Printer: webhookPrinter(func(c *admissionregistrationv1.ValidatingWebhookConfiguration) int { return len(c.Webhooks) }),
	}
}

// webhook points to the fields validating and mutating webhooks share.
type webhook struct {
	name                    string
	clientConfig            *admissionregistrationv1.WebhookClientConfig
	rules                   []admissionregistrationv1.RuleWithOperations
	failurePolicy           **admissionregistrationv1.FailurePolicyType
	matchPolicy             **admissionregistrationv1.MatchPolicyType
	namespaceSelector       **metav1.LabelSelector
	objectSelector          **metav1.LabelSelector
	sideEffects             **admissionregistrationv1.SideEffectClass
	timeoutSeconds          **int32
	admissionReviewVersions *[]string
	matchConditions         []admissionregistrationv1.MatchCondition
}

func webhookOf(w *admissionregistrationv1.ValidatingWebhook) webhook {
	return webhook{w.Name, &w.ClientConfig, w.Rules, &w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector,
		&w.SideEffects, &w.TimeoutSeconds, &w.AdmissionReviewVersions, w.MatchConditions}
}

// defaultWebhook fills Kubernetes' defaults of a webhook.
func defaultWebhook(w webhook) {
	if *w.failurePolicy == nil {
		*w.failurePolicy = ptr.To(admissionregistrationv1.Fail)
	}
	if *w.matchPolicy == nil {
		*w.matchPolicy = ptr.To(admissionregistrationv1.Equivalent)
	}
	if *w.namespaceSelector == nil {
		*w.namespaceSelector = &metav1.LabelSelector{}
	}
	if *w.objectSelector == nil {
		*w.objectSelector = &metav1.LabelSelector{}
	}
	if *w.sideEffects == nil {
		*w.sideEffects = ptr.To(admissionregistrationv1.SideEffectClassUnknown)
	}
	if *w.timeoutSeconds == nil {
		*w.timeoutSeconds = ptr.To(int32(30))
	}
	if len(*w.admissionReviewVersions) == 0 {
		*w.admissionReviewVersions = []string{"v1"}
	}
	for i := range w.rules {
		defaultRule(&w.rules[i].Rule)
	}
	if s := w.clientConfig.Service; s != nil && s.Port == nil {
		s.Port = ptr.To(int32(443))
	}
}

// webhookName checks a webhook's name: a DNS subdomain of three
// segments or more.
func webhookName(name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	if len(strings.Split(name, ".")) < 3 {
		errs = append(errs, field.Invalid(path, name, "should be a domain with at least three segments separated by dots"))
	}
	return errs
}

var sideEffectClasses = []admissionregistrationv1.SideEffectClass{admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.SideEffectClassNoneOnDryRun}

// validateWebhooks checks a configuration's webhooks as Kubernetes'
// v1 validation: unique names of three segments or more, a URL or a
// service to call, valid rules and enums, a known review version.
func validateWebhooks(hooks []webhook) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, w := range hooks {
		path := field.NewPath("webhooks").Index(i)
		errs = append(errs, uniqueName(w.name, names, path.Child("name"), webhookName)...)
		cc := path.Child("clientConfig")
		switch {
		case w.clientConfig.URL != nil && w.clientConfig.Service != nil:
			errs = append(errs, field.Required(cc, "exactly one of url or service is required"))
		case w.clientConfig.URL != nil:
			if u, err := url.Parse(*w.clientConfig.URL); err != nil || u.Scheme != "https" || u.Host == "" {
				errs = append(errs, field.Invalid(cc.Child("url"), *w.clientConfig.URL, "must be an https URL with a host"))
			}
		case w.clientConfig.Service != nil:
			s := w.clientConfig.Service
			if s.Name == "" {
				errs = append(errs, field.Required(cc.Child("service", "name"), "service name is required"))
			}
			if s.Namespace == "" {
				errs = append(errs, field.Required(cc.Child("service", "namespace"), "service namespace is required"))
			}
			if s.Port != nil && (*s.Port < 1 || *s.Port > 65535) {
				errs = append(errs, field.Invalid(cc.Child("service", "port"), *s.Port, "port is not valid: must be between 1 and 65535, inclusive"))
			}
		default:
			errs = append(errs, field.Required(cc, "exactly one of url or service is required"))
		}
		for j := range w.rules {
			errs = append(errs, validateRuleWithOperations(&w.rules[j], path.Child("rules").Index(j))...)
		}
		if *w.failurePolicy != nil {
			errs = append(errs, validation.Enum(**w.failurePolicy, failurePolicies, path.Child("failurePolicy"))...)
		}
		if *w.matchPolicy != nil {
			errs = append(errs, validation.Enum(**w.matchPolicy, matchPolicies, path.Child("matchPolicy"))...)
		}
		if *w.sideEffects == nil {
			errs = append(errs, field.Required(path.Child("sideEffects"), "must specify one of None, NoneOnDryRun"))
		} else {
			errs = append(errs, validation.Enum(**w.sideEffects, sideEffectClasses, path.Child("sideEffects"))...)
		}
		if t := *w.timeoutSeconds; t != nil && (*t < 1 || *t > 30) {
			errs = append(errs, field.Invalid(path.Child("timeoutSeconds"), *t, "the timeout value must be between 1 and 30 seconds"))
		}
		errs = append(errs, validation.LabelSelector(*w.namespaceSelector, path.Child("namespaceSelector"))...)
		errs = append(errs, validation.LabelSelector(*w.objectSelector, path.Child("objectSelector"))...)
		versions := *w.admissionReviewVersions
		if len(versions) == 0 || !sets.New(versions...).HasAny("v1", "v1beta1") {
			errs = append(errs, field.Invalid(path.Child("admissionReviewVersions"), versions, "must include at least one of v1, v1beta1"))
		}
		errs = append(errs, validateMatchConditions(w.matchConditions, path.Child("matchConditions"))...)
		errs = append(errs, webhookadmission.MatchConditionErrors(w.matchConditions, path.Child("matchConditions"))...)
	}
	return errs
}

// webhookPrinter prints a webhook configuration: its name, how many
// webhooks it has, its age.
func webhookPrinter[T any, P interface {
	*T
	runtime.Object
	metav1.Object
}](count func(P) int) printers.Printer {
	return printers.Typed(
		[]metav1.TableColumnDefinition{
			printers.NameColumn(),
			printers.Column("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this configuration"),
			printers.AgeColumn(),
		},
		func(c P, now time.Time) []interface{} {
			return []interface{}{c.GetName(), int64(count(c)), printers.Age(c.GetCreationTimestamp(), now)}
		},
	)
}
