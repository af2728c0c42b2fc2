package kinds

import (
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// ValidatingAdmissionPolicyBindings (admissionregistration.k8s.io/v1):
// put a policy in force, with its params, over the resources they
// select, with the actions (Deny, Warn, Audit) its failed validations
// take.
func validatingAdmissionPolicyBindings() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings"), Kind: "ValidatingAdmissionPolicyBinding",
		Categories: []string{"api-extensions"},
		NameRule:   apivalidation.NameIsDNSSubdomain,
		Default: defaulter(func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			defaultMatchResources(b.Spec.MatchResources)
		}),
		Validate: validator(validateBinding),
		ValidateUpdate: updateValidator(func(b, _ *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
			return validateBinding(b)
		}),
		Printer: bindingPrinter,
	}
}

var (
	validationActions        = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Warn, admissionregistrationv1.Audit}
	parameterNotFoundActions = []admissionregistrationv1.ParameterNotFoundActionType{admissionregistrationv1.AllowAction, admissionregistrationv1.DenyAction}
)

func validateBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	errs = append(errs, validatePolicyName(b.Spec.PolicyName, spec.Child("policyName"))...)
	errs = append(errs, validateParamRef(b.Spec.ParamRef, spec.Child("paramRef"))...)
	if m := b.Spec.MatchResources; m != nil {
		errs = append(errs, validateMatchResources(m, false, spec.Child("matchResources"))...)
	}
	path := spec.Child("validationActions")
	if len(b.Spec.ValidationActions) == 0 {
		errs = append(errs, field.Required(path, "at least one validation action is required"))
	}
	seen := sets.New[admissionregistrationv1.ValidationAction]()
	for i, a := range b.Spec.ValidationActions {
		if seen.Has(a) {
			errs = append(errs, field.Duplicate(path.Index(i), a))
		}
		seen.Insert(a)
		errs = append(errs, validation.Enum(a, validationActions, path.Index(i))...)
	}
	if seen.Has(admissionregistrationv1.Deny) && seen.Has(admissionregistrationv1.Warn) {
		errs = append(errs, field.Invalid(path, b.Spec.ValidationActions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	return errs
}

// validatePolicyName checks the policy a binding names.
func validatePolicyName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

// validateParamRef checks a binding's paramRef, when it has one: a name
// or a selector, and what to do when no param is found.
func validateParamRef(ref *admissionregistrationv1.ParamRef, path *field.Path) field.ErrorList {
	if ref == nil {
		return nil
	}
	var errs field.ErrorList
	switch {
	case ref.Name != "" && ref.Selector != nil:
		errs = append(errs, field.Forbidden(path.Child("name"), "name and selector are mutually exclusive"))
	case ref.Name == "" && ref.Selector == nil:
		errs = append(errs, field.Required(path, "one of name or selector must be specified"))
	case ref.Selector != nil:
		errs = append(errs, validation.LabelSelector(ref.Selector, path.Child("selector"))...)
	}
	if ref.Namespace != "" {
		for _, msg := range apivalidation.ValidateNamespaceName(ref.Namespace, false) {
			errs = append(errs, field.Invalid(path.Child("namespace"), ref.Namespace, msg))
		}
	}
	if ref.ParameterNotFoundAction == nil {
		errs = append(errs, field.Required(path.Child("parameterNotFoundAction"), ""))
	} else {
		errs = append(errs, validation.Enum(*ref.ParameterNotFoundAction, parameterNotFoundActions, path.Child("parameterNotFoundAction"))...)
	}
	return errs
}

var bindingPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("PolicyName", "string", "PolicyName indicates the policy definition which the policy binding binded to"),
		printers.Column("ParamRef", "string", "ParamRef indicates the param resource which sets the configration param"),
		printers.AgeColumn(),
	},
	func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, now time.Time) []interface{} {
		return []interface{}{b.Name, b.Spec.PolicyName, paramRefColumn(b.Spec.ParamRef), printers.Age(b.CreationTimestamp, now)}
	},
)

// paramRefColumn is a binding's PARAMREF column: namespace/name, */name
// when the namespace is the request's, or the selector.
func paramRefColumn(ref *admissionregistrationv1.ParamRef) string {
	switch {
	case ref == nil:
	case ref.Name != "" && ref.Namespace != "":
		return ref.Namespace + "/" + ref.Name
	case ref.Name != "":
		return "*/" + ref.Name
	case ref.Selector != nil:
		return metav1.FormatLabelSelector(ref.Selector)
	}
	return "<unset>"
}
