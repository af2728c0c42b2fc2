package kinds

import (
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/admission/validatingadmissionpolicy"
	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1): CEL
// rules the ValidatingAdmissionPolicy admission plugin enforces where a
// binding puts them. A policy whose expressions do not compile is
// refused; one whose expressions compile but do not type-check against
// the kinds it matches is stored with the type checker's warnings in
// status.typeChecking, which the admission plugin writes with
// status.observedGeneration whenever the spec changes (Kubernetes'
// policy controller does it shortly after the write).
func validatingAdmissionPolicies() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies"), Kind: "ValidatingAdmissionPolicy",
		Categories: []string{"api-extensions"}, Status: true,
		NameRule: apivalidation.NameIsDNSSubdomain,
		Default: defaulter(func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			if p.Spec.FailurePolicy == nil {
				p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
			}
			defaultMatchResources(p.Spec.MatchConstraints)
		}),
		Validate: validator(validatePolicy),
		ValidateUpdate: updateValidator(func(p, _ *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
			return validatePolicy(p)
		}),
		Printer: policyPrinter,
	}
}

// defaultMatchResources fills what Kubernetes defaults in a policy's
// matchConstraints or a binding's matchResources.
func defaultMatchResources(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		m.MatchPolicy = ptr.To(admissionregistrationv1.Equivalent)
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for _, rules := range [][]admissionregistrationv1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rules {
			defaultRule(&rules[i].Rule)
		}
	}
}

func defaultRule(r *admissionregistrationv1.Rule) {
	if r.Scope == nil {
		r.Scope = ptr.To(admissionregistrationv1.AllScopes)
	}
}

var (
	failurePolicies = []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore}
	matchPolicies   = []admissionregistrationv1.MatchPolicyType{admissionregistrationv1.Exact, admissionregistrationv1.Equivalent}
	ruleScopes      = []admissionregistrationv1.ScopeType{admissionregistrationv1.ClusterScope, admissionregistrationv1.NamespacedScope, admissionregistrationv1.AllScopes}
	operations      = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll, admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete, admissionregistrationv1.Connect}
	denyReasons     = []metav1.StatusReason{metav1.StatusReasonUnauthorized, metav1.StatusReasonForbidden, metav1.StatusReasonInvalid, metav1.StatusReasonRequestEntityTooLarge}
)

func validatePolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if p.Spec.FailurePolicy != nil {
		errs = append(errs, validation.Enum(*p.Spec.FailurePolicy, failurePolicies, spec.Child("failurePolicy"))...)
	}
	errs = append(errs, validateParamKind(p.Spec.ParamKind, spec.Child("paramKind"))...)
	if p.Spec.MatchConstraints == nil {
		errs = append(errs, field.Required(spec.Child("matchConstraints"), ""))
	} else {
		errs = append(errs, validateMatchResources(p.Spec.MatchConstraints, true, spec.Child("matchConstraints"))...)
	}
	if len(p.Spec.Validations) == 0 && len(p.Spec.AuditAnnotations) == 0 {
		errs = append(errs, field.Required(spec.Child("validations"), "validations or auditAnnotations must contain at least one item"))
	}
	for i, v := range p.Spec.Validations {
		path := spec.Child("validations").Index(i)
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(path.Child("expression"), ""))
		}
		if strings.ContainsAny(v.Message, "\n") {
			errs = append(errs, field.Invalid(path.Child("message"), v.Message, "message must not contain line breaks"))
		}
		if v.Reason != nil {
			errs = append(errs, validation.Enum(*v.Reason, denyReasons, path.Child("reason"))...)
		}
	}
	errs = append(errs, validateVariables(p.Spec.Variables, spec.Child("variables"))...)
	keys := sets.New[string]()
	for i, a := range p.Spec.AuditAnnotations {
		path := spec.Child("auditAnnotations").Index(i)
		errs = append(errs, uniqueName(a.Key, keys, path.Child("key"), func(key string, path *field.Path) field.ErrorList {
			if msgs := utilvalidation.IsQualifiedName(p.Name + "/" + key); len(msgs) > 0 {
				return field.ErrorList{field.Invalid(path, key, strings.Join(msgs, ", "))}
			}
			return nil
		})...)
		if strings.TrimSpace(a.ValueExpression) == "" {
			errs = append(errs, field.Required(path.Child("valueExpression"), ""))
		}
	}
	errs = append(errs, validateMatchConditions(p.Spec.MatchConditions, spec.Child("matchConditions"))...)
	if len(errs) > 0 {
		return errs // compile only what is well formed
	}
	return validatingadmissionpolicy.CompileErrors(p)
}

// validateParamKind checks a policy's paramKind, when it has one.
func validateParamKind(pk *admissionregistrationv1.ParamKind, path *field.Path) field.ErrorList {
	if pk == nil {
		return nil
	}
	var errs field.ErrorList
	if pk.Kind == "" {
		errs = append(errs, field.Required(path.Child("kind"), ""))
	}
	if pk.APIVersion == "" {
		errs = append(errs, field.Required(path.Child("apiVersion"), ""))
	} else if gv, err := schema.ParseGroupVersion(pk.APIVersion); err != nil || gv.Version == "" {
		errs = append(errs, field.Invalid(path.Child("apiVersion"), pk.APIVersion, "must be <group>/<version> or <version>"))
	}
	return errs
}

// validateVariables checks the names and presence of a policy's
// variables (their expressions compile with the rest).
func validateVariables(vars []admissionregistrationv1.Variable, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, v := range vars {
		p := path.Index(i)
		if v.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if !celIdentifier(v.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), v.Name, "name is not a valid CEL identifier"))
		}
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(p.Child("expression"), ""))
		}
	}
	return errs
}

// celIdentifier reports whether s is a CEL identifier (a variable's name).
func celIdentifier(s string) bool {
	for i, r := range s {
		letter := r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z')
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return s != ""
}

// validateMatchConditions checks the names and presence of the
// matchConditions of a policy or webhook (their expressions compile
// with the rest).
func validateMatchConditions(conds []admissionregistrationv1.MatchCondition, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	if len(conds) > 64 {
		errs = append(errs, field.TooMany(path, len(conds), 64))
	}
	for i, c := range conds {
		p := path.Index(i)
		errs = append(errs, uniqueName(c.Name, names, p.Child("name"), validation.QualifiedName)...)
		if strings.TrimSpace(c.Expression) == "" {
			errs = append(errs, field.Required(p.Child("expression"), ""))
		}
	}
	return errs
}

// uniqueName checks one of a list's names: given, not given before in
// the list (seen, which it adds the name to), and well formed by check.
func uniqueName(name string, seen sets.Set[string], path *field.Path, check func(string, *field.Path) field.ErrorList) field.ErrorList {
	defer seen.Insert(name)
	switch {
	case name == "":
		return field.ErrorList{field.Required(path, "")}
	case seen.Has(name):
		return field.ErrorList{field.Duplicate(path, name)}
	}
	return check(name, path)
}

// validateMatchResources checks a policy's matchConstraints
// (rulesRequired) or a binding's matchResources.
func validateMatchResources(m *admissionregistrationv1.MatchResources, rulesRequired bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m.MatchPolicy != nil {
		errs = append(errs, validation.Enum(*m.MatchPolicy, matchPolicies, path.Child("matchPolicy"))...)
	}
	if m.NamespaceSelector != nil {
		errs = append(errs, validation.LabelSelector(m.NamespaceSelector, path.Child("namespaceSelector"))...)
	}
	if m.ObjectSelector != nil {
		errs = append(errs, validation.LabelSelector(m.ObjectSelector, path.Child("objectSelector"))...)
	}
	if rulesRequired && len(m.ResourceRules) == 0 {
		errs = append(errs, field.Required(path.Child("resourceRules"), ""))
	}
	for i, r := range m.ResourceRules {
		errs = append(errs, validateRuleWithOperations(&r.RuleWithOperations, path.Child("resourceRules").Index(i))...)
	}
	for i, r := range m.ExcludeResourceRules {
		errs = append(errs, validateRuleWithOperations(&r.RuleWithOperations, path.Child("excludeResourceRules").Index(i))...)
	}
	return errs
}

// validateRuleWithOperations checks one rule of a policy, binding or
// webhook as Kubernetes does: operations, groups, versions and resources
// are required, "*" stands alone, and a resource's subresource wildcard
// does not overlap a plain one.
func validateRuleWithOperations(r *admissionregistrationv1.RuleWithOperations, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(path.Child("operations"), ""))
	}
	if len(r.Operations) > 1 && hasWildcard(r.Operations) {
		errs = append(errs, field.Invalid(path.Child("operations"), r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		errs = append(errs, validation.Enum(op, operations, path.Child("operations").Index(i))...)
	}
	errs = append(errs, validateRule(&r.Rule, path)...)
	return errs
}

func validateRule(r *admissionregistrationv1.Rule, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name   string
		values []string
	}{{"apiGroups", r.APIGroups}, {"apiVersions", r.APIVersions}} {
		if len(list.values) == 0 {
			errs = append(errs, field.Required(path.Child(list.name), ""))
		}
		if len(list.values) > 1 && hasWildcard(list.values) {
			errs = append(errs, field.Invalid(path.Child(list.name), list.values, "if '*' is present, must not specify other "+list.name))
		}
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(path.Child("apiVersions").Index(i), ""))
		}
	}
	if len(r.Resources) == 0 {
		errs = append(errs, field.Required(path.Child("resources"), ""))
	}
	errs = append(errs, validateResources(r.Resources, path.Child("resources"))...)
	if r.Scope != nil {
		errs = append(errs, validation.Enum(*r.Scope, ruleScopes, path.Child("scope"))...)
	}
	return errs
}

// validateResources checks resource[/subresource] names: "*/*" stands
// alone, "x/*" excludes "x/y", "*/y" excludes "x/y".
func validateResources(resources []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	resourcesWithWildcardSub := sets.New[string]()
	subResourcesWithWildcardRes := sets.New[string]()
	hasDoubleWildcard, hasSingleWildcard, hasResourceWithoutSub := false, false, false
	for i, r := range resources {
		if r == "" {
			errs = append(errs, field.Required(path.Index(i), ""))
			continue
		}
		switch r {
		case "*/*":
			hasDoubleWildcard = true
		case "*":
			hasSingleWildcard = true
		}
		res, sub, hasSub := strings.Cut(r, "/")
		if !hasSub {
			hasResourceWithoutSub = true
		} else if res == "" || sub == "" {
			errs = append(errs, field.Invalid(path.Index(i), r, "resource and subresource must be non-empty"))
		}
		if sub == "*" {
			resourcesWithWildcardSub.Insert(res)
		}
		if res == "*" && hasSub {
			subResourcesWithWildcardRes.Insert(sub)
		}
	}
	if len(resources) > 1 && hasDoubleWildcard {
		errs = append(errs, field.Invalid(path, resources, "if '*/*' is present, must not specify other resources"))
	}
	if hasSingleWildcard && hasResourceWithoutSub && len(resources) > 1 {
		errs = append(errs, field.Invalid(path, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	for i, r := range resources {
		res, sub, hasSub := strings.Cut(r, "/")
		if !hasSub || res == "*" || sub == "*" {
			continue
		}
		if resourcesWithWildcardSub.Has(res) {
			errs = append(errs, field.Invalid(path.Index(i), r, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, r)))
		}
		if subResourcesWithWildcardRes.Has(sub) {
			errs = append(errs, field.Invalid(path.Index(i), r, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, r)))
		}
	}
	return errs
}

func hasWildcard[T ~string](values []T) bool {
	for _, v := range values {
		if v == "*" {
			return true
		}
	}
	return false
}

var policyPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Validations", "integer", "Validations indicates the number of validation rules defined in this configuration"),
		printers.Column("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy"),
		printers.AgeColumn(),
	},
	func(p *admissionregistrationv1.ValidatingAdmissionPolicy, now time.Time) []interface{} {
		return []interface{}{p.Name, int64(len(p.Spec.Validations)), paramKindCell(p.Spec.ParamKind), printers.Age(p.CreationTimestamp, now)}
	},
)

// paramKindCell is a policy's PARAMKIND column, as kubectl shows it.
func paramKindCell(pk *admissionregistrationv1.ParamKind) string {
	if pk == nil {
		return "<unset>"
	}
	return pk.APIVersion + "/" + pk.Kind
}
