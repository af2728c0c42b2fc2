package kinds

import (
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
)

// MutatingAdmissionPolicyBindings (admissionregistration.k8s.io/v1): put
// a mutating policy in force, with its params, over the resources they
// select.
func mutatingAdmissionPolicyBindings() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicybindings"), Kind: "MutatingAdmissionPolicyBinding",
		Categories: []string{"api-extensions"},
		NameRule:   apivalidation.NameIsDNSSubdomain,
		Default: defaulter(func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
			defaultMatchResources(b.Spec.MatchResources)
		}),
		Validate: validator(validateMutatingBinding),
		ValidateUpdate: updateValidator(func(b, _ *admissionregistrationv1.MutatingAdmissionPolicyBinding) field.ErrorList {
			return validateMutatingBinding(b)
		}),
		Printer: mutatingBindingPrinter,
	}
}

func validateMutatingBinding(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) field.ErrorList {
	spec := field.NewPath("spec")
	errs := validatePolicyName(b.Spec.PolicyName, spec.Child("policyName"))
	errs = append(errs, validateParamRef(b.Spec.ParamRef, spec.Child("paramRef"))...)
	if m := b.Spec.MatchResources; m != nil {
		errs = append(errs, validateMatchResources(m, false, spec.Child("matchResources"))...)
		errs = append(errs, validateMutatingOperations(m, spec.Child("matchResources"))...)
	}
	return errs
}

var mutatingBindingPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("PolicyName", "string", "PolicyName indicates the policy definition which the policy binding binded to"),
		printers.Column("ParamRef", "string", "ParamRef indicates the param resource which sets the configuration param"),
		printers.AgeColumn(),
	},
	func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding, now time.Time) []interface{} {
		return []interface{}{b.Name, b.Spec.PolicyName, paramRefColumn(b.Spec.ParamRef), printers.Age(b.CreationTimestamp, now)}
	},
)
