package kinds

import (
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/admission/mutatingadmissionpolicy"
	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// MutatingAdmissionPolicies (admissionregistration.k8s.io/v1): CEL
// mutations (ApplyConfiguration and JSONPatch) the
// MutatingAdmissionPolicy admission plugin applies where a binding puts
// them. No status, as upstream. A policy whose expressions do not compile
// is refused.
func mutatingAdmissionPolicies() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicies"), Kind: "MutatingAdmissionPolicy",
		Categories: []string{"api-extensions"},
		NameRule:   apivalidation.NameIsDNSSubdomain,
		Default: defaulter(func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			if p.Spec.FailurePolicy == nil {
				p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
			}
			defaultMatchResources(p.Spec.MatchConstraints)
		}),
		Validate: validator(validateMutatingPolicy),
		ValidateUpdate: updateValidator(func(p, _ *admissionregistrationv1.MutatingAdmissionPolicy) field.ErrorList {
			return validateMutatingPolicy(p)
		}),
		Printer: mutatingPolicyPrinter,
	}
}

var (
	patchTypes         = []admissionregistrationv1.PatchType{admissionregistrationv1.PatchTypeApplyConfiguration, admissionregistrationv1.PatchTypeJSONPatch}
	mutatingOperations = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll, admissionregistrationv1.Create, admissionregistrationv1.Update}
)

func validateMutatingPolicy(p *admissionregistrationv1.MutatingAdmissionPolicy) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if p.Spec.FailurePolicy == nil {
		errs = append(errs, field.Required(spec.Child("failurePolicy"), ""))
	} else {
		errs = append(errs, validation.Enum(*p.Spec.FailurePolicy, failurePolicies, spec.Child("failurePolicy"))...)
	}
	errs = append(errs, validateParamKind(p.Spec.ParamKind, spec.Child("paramKind"))...)
	if p.Spec.MatchConstraints == nil {
		errs = append(errs, field.Required(spec.Child("matchConstraints"), ""))
	} else {
		errs = append(errs, validateMatchResources(p.Spec.MatchConstraints, true, spec.Child("matchConstraints"))...)
		errs = append(errs, validateMutatingOperations(p.Spec.MatchConstraints, spec.Child("matchConstraints"))...)
	}
	errs = append(errs, validateMatchConditions(p.Spec.MatchConditions, spec.Child("matchConditions"))...)
	errs = append(errs, validateVariables(p.Spec.Variables, spec.Child("variables"))...)
	if len(p.Spec.Mutations) == 0 {
		errs = append(errs, field.Required(spec.Child("mutations"), "mutations must contain at least one item"))
	}
	for i, m := range p.Spec.Mutations {
		errs = append(errs, validateMutation(&m, spec.Child("mutations").Index(i))...)
	}
	if p.Spec.ReinvocationPolicy == "" {
		errs = append(errs, field.Required(spec.Child("reinvocationPolicy"), ""))
	} else {
		errs = append(errs, validation.Enum(p.Spec.ReinvocationPolicy, reinvocationPolicies, spec.Child("reinvocationPolicy"))...)
	}
	if len(errs) > 0 {
		return errs // compile only what is well formed
	}
	return mutatingadmissionpolicy.CompileErrors(p)
}

// validateMutation checks one mutation: its patchType, and the one
// expression that patchType takes.
func validateMutation(m *admissionregistrationv1.Mutation, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	expression := func(expr string, path *field.Path) {
		if strings.TrimSpace(expr) == "" {
			errs = append(errs, field.Required(path.Child("expression"), ""))
		}
	}
	switch m.PatchType {
	case "":
		errs = append(errs, field.Required(path.Child("patchType"), ""))
	case admissionregistrationv1.PatchTypeJSONPatch:
		if m.JSONPatch == nil {
			errs = append(errs, field.Required(path.Child("jsonPatch"), "must be specified when patchType is JSONPatch"))
		} else {
			expression(m.JSONPatch.Expression, path.Child("jsonPatch"))
		}
		if m.ApplyConfiguration != nil {
			errs = append(errs, field.Invalid(path.Child("applyConfiguration"), "{applyConfiguration}", "must not be specified when patchType is JSONPatch"))
		}
	case admissionregistrationv1.PatchTypeApplyConfiguration:
		if m.ApplyConfiguration == nil {
			errs = append(errs, field.Required(path.Child("applyConfiguration"), "must be specified when patchType is ApplyConfiguration"))
		} else {
			expression(m.ApplyConfiguration.Expression, path.Child("applyConfiguration"))
		}
		if m.JSONPatch != nil {
			errs = append(errs, field.Invalid(path.Child("jsonPatch"), "{jsonPatch}", "must not be specified when patchType is ApplyConfiguration"))
		}
	default:
		errs = append(errs, validation.Enum(m.PatchType, patchTypes, path.Child("patchType"))...)
	}
	return errs
}

// validateMutatingOperations refuses rules on operations other than
// CREATE and UPDATE: only those have an object to mutate.
func validateMutatingOperations(m *admissionregistrationv1.MatchResources, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, rule := range m.ResourceRules {
		for _, op := range rule.Operations {
			errs = append(errs, validation.Enum(op, mutatingOperations, path.Child("resourceRules", "operations"))...)
		}
	}
	return errs
}

var mutatingPolicyPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Mutations", "integer", "Mutation indicates the number of mutations rules defined in this configuration"),
		printers.Column("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy"),
		printers.AgeColumn(),
	},
	func(p *admissionregistrationv1.MutatingAdmissionPolicy, now time.Time) []interface{} {
		return []interface{}{p.Name, int64(len(p.Spec.Mutations)), paramKindCell(p.Spec.ParamKind), printers.Age(p.CreationTimestamp, now)}
	},
)
