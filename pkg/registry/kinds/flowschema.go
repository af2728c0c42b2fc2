package kinds

import (
	"slices"
	"strings"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Matching precedences of FlowSchemas, as Kubernetes bounds them.
const (
	flowSchemaMaxMatchingPrecedence     = 10000
	flowSchemaDefaultMatchingPrecedence = 1000
)

// MandatoryFlowSchemas are the FlowSchemas kube-apiserver keeps at every
// start: "exempt" (system:masters) and "catch-all" (everyone else).
func MandatoryFlowSchemas() []*flowcontrolv1.FlowSchema {
	everything := func(groups ...string) []flowcontrolv1.PolicyRulesWithSubjects {
		var subjects []flowcontrolv1.Subject
		for _, g := range groups {
			subjects = append(subjects, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: g}})
		}
		return []flowcontrolv1.PolicyRulesWithSubjects{{
			Subjects: subjects,
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{flowcontrolv1.VerbAll}, APIGroups: []string{flowcontrolv1.APIGroupAll},
				Resources: []string{flowcontrolv1.ResourceAll}, Namespaces: []string{flowcontrolv1.NamespaceEvery}, ClusterScope: true}},
			NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{flowcontrolv1.VerbAll}, NonResourceURLs: []string{flowcontrolv1.NonResourceAll}}},
		}}
	}
	schema := func(name, level string, precedence int32, dm *flowcontrolv1.FlowDistinguisherMethod, rules []flowcontrolv1.PolicyRulesWithSubjects) *flowcontrolv1.FlowSchema {
		return &flowcontrolv1.FlowSchema{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"}},
			Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
				MatchingPrecedence: precedence, DistinguisherMethod: dm, Rules: rules},
		}
	}
	return []*flowcontrolv1.FlowSchema{
		schema(flowcontrolv1.FlowSchemaNameExempt, flowcontrolv1.PriorityLevelConfigurationNameExempt, 1, nil, everything("system:masters")),
		schema(flowcontrolv1.FlowSchemaNameCatchAll, flowcontrolv1.PriorityLevelConfigurationNameCatchAll, flowSchemaMaxMatchingPrecedence,
			&flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType}, everything("system:unauthenticated", "system:authenticated")),
	}
}

// FlowSchemas: which requests go to which priority level
// (flowcontrol.apiserver.k8s.io/v1), stored only: minik8s does not
// limit requests by them.
func flowSchemas() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: flowcontrolv1.SchemeGroupVersion.WithResource("flowschemas"), Kind: "FlowSchema",
		Status:   true,
		NameRule: apivalidation.NameIsDNSSubdomain,
		Default: defaulter(func(fs *flowcontrolv1.FlowSchema) {
			if fs.Spec.MatchingPrecedence == 0 {
				fs.Spec.MatchingPrecedence = flowSchemaDefaultMatchingPrecedence
			}
		}),
		Validate: validator(validateFlowSchema),
		Printer:  flowSchemaPrinter,
	}
}

var (
	supportedDistinguisherMethods = []flowcontrolv1.FlowDistinguisherMethodType{flowcontrolv1.FlowDistinguisherMethodByUserType, flowcontrolv1.FlowDistinguisherMethodByNamespaceType}
	supportedSubjectKinds         = []flowcontrolv1.SubjectKind{flowcontrolv1.SubjectKindServiceAccount, flowcontrolv1.SubjectKindGroup, flowcontrolv1.SubjectKindUser}
)

func validateFlowSchema(fs *flowcontrolv1.FlowSchema) field.ErrorList {
	var allErrs field.ErrorList
	spec := field.NewPath("spec")
	switch mp := fs.Spec.MatchingPrecedence; {
	case mp <= 0:
		allErrs = append(allErrs, field.Invalid(spec.Child("matchingPrecedence"), mp, "must be a positive value"))
	case mp > flowSchemaMaxMatchingPrecedence:
		allErrs = append(allErrs, field.Invalid(spec.Child("matchingPrecedence"), mp, "must not be greater than 10000"))
	case mp == 1 && fs.Name != flowcontrolv1.FlowSchemaNameExempt:
		allErrs = append(allErrs, field.Invalid(spec.Child("matchingPrecedence"), mp, "only the schema named 'exempt' may have matchingPrecedence 1"))
	}
	if dm := fs.Spec.DistinguisherMethod; dm != nil {
		allErrs = append(allErrs, validation.Enum(dm.Type, supportedDistinguisherMethods, spec.Child("distinguisherMethod", "type"))...)
	}
	level := spec.Child("priorityLevelConfiguration", "name")
	if name := fs.Spec.PriorityLevelConfiguration.Name; name == "" {
		allErrs = append(allErrs, field.Required(level, "must reference a priority level"))
	} else {
		for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
			allErrs = append(allErrs, field.Invalid(level, name, msg))
		}
	}
	for i, rule := range fs.Spec.Rules {
		allErrs = append(allErrs, validateFlowSchemaRule(&rule, spec.Child("rules").Index(i))...)
	}
	return append(allErrs, validateFlowSchemaConditions(fs.Status.Conditions, field.NewPath("status", "conditions"))...)
}

func validateFlowSchemaRule(rule *flowcontrolv1.PolicyRulesWithSubjects, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(rule.Subjects) == 0 {
		allErrs = append(allErrs, field.Required(p.Child("subjects"), "subjects must contain at least one value"))
	}
	for i, s := range rule.Subjects {
		sp := p.Child("subjects").Index(i)
		switch s.Kind {
		case flowcontrolv1.SubjectKindServiceAccount:
			if s.ServiceAccount == nil {
				allErrs = append(allErrs, field.Required(sp.Child("serviceAccount"), "serviceAccount is required when subject kind is 'ServiceAccount'"))
			} else {
				if s.ServiceAccount.Name == "" {
					allErrs = append(allErrs, field.Required(sp.Child("serviceAccount", "name"), ""))
				}
				if s.ServiceAccount.Namespace == "" {
					allErrs = append(allErrs, field.Required(sp.Child("serviceAccount", "namespace"), ""))
				}
			}
		case flowcontrolv1.SubjectKindUser:
			if s.User == nil || s.User.Name == "" {
				allErrs = append(allErrs, field.Required(sp.Child("user"), "user is required when subject kind is 'User'"))
			}
		case flowcontrolv1.SubjectKindGroup:
			if s.Group == nil || s.Group.Name == "" {
				allErrs = append(allErrs, field.Required(sp.Child("group"), "group is required when subject kind is 'Group'"))
			}
		default:
			allErrs = append(allErrs, validation.Enum(s.Kind, supportedSubjectKinds, sp.Child("kind"))...)
		}
	}
	if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
		allErrs = append(allErrs, field.Required(p, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i, r := range rule.ResourceRules {
		rp := p.Child("resourceRules").Index(i)
		allErrs = append(allErrs, wildcardAlone(r.Verbs, rp.Child("verbs"), "verbs")...)
		allErrs = append(allErrs, wildcardAlone(r.APIGroups, rp.Child("apiGroups"), "resource rules")...)
		allErrs = append(allErrs, wildcardAlone(r.Resources, rp.Child("resources"), "resource rules")...)
		if len(r.Namespaces) == 0 && !r.ClusterScope {
			allErrs = append(allErrs, field.Required(rp.Child("namespaces"), "resource rules that are not cluster scoped must supply at least one namespace"))
		} else if len(r.Namespaces) > 0 && !(len(r.Namespaces) == 1 && r.Namespaces[0] == flowcontrolv1.NamespaceEvery) {
			for j, ns := range r.Namespaces {
				if ns == flowcontrolv1.NamespaceEvery {
					allErrs = append(allErrs, field.Invalid(rp.Child("namespaces").Index(j), ns, "'*' may only be used alone"))
					continue
				}
				allErrs = append(allErrs, validation.DNS1123Label(ns, rp.Child("namespaces").Index(j))...)
			}
		}
	}
	for i, r := range rule.NonResourceRules {
		rp := p.Child("nonResourceRules").Index(i)
		allErrs = append(allErrs, wildcardAlone(r.Verbs, rp.Child("verbs"), "verbs")...)
		allErrs = append(allErrs, wildcardAlone(r.NonResourceURLs, rp.Child("nonResourceURLs"), "nonResourceURLs")...)
		for j, u := range r.NonResourceURLs {
			if u != flowcontrolv1.NonResourceAll && !strings.HasPrefix(u, "/") {
				allErrs = append(allErrs, field.Invalid(rp.Child("nonResourceURLs").Index(j), u, "must start with slash"))
			}
		}
	}
	return allErrs
}

// wildcardAlone: a list of a policy rule is not empty, and "*" in it is
// its only item.
func wildcardAlone(items []string, p *field.Path, what string) field.ErrorList {
	if len(items) == 0 {
		return field.ErrorList{field.Required(p, what+" must contain at least one value")}
	}
	if len(items) > 1 && slices.Contains(items, "*") {
		return field.ErrorList{field.Invalid(p, items, "if '*' is present, must not specify other "+what)}
	}
	return nil
}

func validateFlowSchemaConditions(conds []flowcontrolv1.FlowSchemaCondition, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, c := range conds {
		if c.Type == "" {
			allErrs = append(allErrs, field.Required(p.Index(i).Child("type"), "must not be empty"))
		}
	}
	return allErrs
}

var flowSchemaPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("PriorityLevel", "string", flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc()["name"]),
		printers.Column("MatchingPrecedence", "string", flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["matchingPrecedence"]),
		printers.Column("DistinguisherMethod", "string", flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["distinguisherMethod"]),
		printers.AgeColumn(),
		printers.Column("MissingPL", "string", "references a broken or non-existent PriorityLevelConfiguration"),
	},
	func(fs *flowcontrolv1.FlowSchema, now time.Time) []interface{} {
		dm := "<none>"
		if fs.Spec.DistinguisherMethod != nil {
			dm = string(fs.Spec.DistinguisherMethod.Type)
		}
		missing := "?"
		for _, c := range fs.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
				missing = string(c.Status)
				break
			}
		}
		return []interface{}{fs.Name, fs.Spec.PriorityLevelConfiguration.Name, int64(fs.Spec.MatchingPrecedence), dm,
			printers.Age(fs.CreationTimestamp, now), missing}
	},
)
