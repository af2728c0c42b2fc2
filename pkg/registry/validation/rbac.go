package validation

import (
	rbacv1 "k8s.io/api/rbac/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// What the RBAC kinds (rbac.authorization.k8s.io/v1) share, as Kubernetes'
// pkg/apis/rbac/validation checks it: the rules of Roles and ClusterRoles,
// the roleRef and subjects of RoleBindings and ClusterRoleBindings. The
// names of all four, and the roleRef's name, only have to be path
// segments (PathSegmentName, Kubernetes' ValidateRBACName).

// PolicyRules checks the rules of a Role (namespaced) or ClusterRole.
func PolicyRules(rules []rbacv1.PolicyRule, namespaced bool, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for i := range rules {
		allErrs = append(allErrs, PolicyRule(&rules[i], namespaced, fldPath.Index(i))...)
	}
	return allErrs
}

// PolicyRule checks one rule: it needs verbs; a rule on non-resource URLs
// names no API groups, resources or resource names and is not in a
// namespaced Role; a rule on resources names API groups and resources.
func PolicyRule(rule *rbacv1.PolicyRule, namespaced bool, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if len(rule.Verbs) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(rule.NonResourceURLs) > 0 {
		if namespaced {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return allErrs
	}
	if len(rule.APIGroups) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(rule.Resources) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("resources"), "resource rules must supply at least one resource"))
	}
	return allErrs
}

// AggregationRule checks a ClusterRole's aggregationRule: at least one
// selector, each a valid label selector.
func AggregationRule(rule *rbacv1.AggregationRule, fldPath *field.Path) field.ErrorList {
	if rule == nil {
		return nil
	}
	allErrs := field.ErrorList{}
	selPath := fldPath.Child("clusterRoleSelectors")
	if len(rule.ClusterRoleSelectors) == 0 {
		allErrs = append(allErrs, field.Required(selPath, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
	}
	for i := range rule.ClusterRoleSelectors {
		sel := &rule.ClusterRoleSelectors[i]
		errs := LabelSelector(sel, selPath.Index(i))
		if len(errs) == 0 {
			if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
				errs = append(errs, field.Invalid(selPath.Index(i), metav1.FormatLabelSelector(sel), "invalid label selector."))
			}
		}
		allErrs = append(allErrs, errs...)
	}
	return allErrs
}

// RoleRef checks a binding's roleRef: the RBAC group, one of kinds, and a
// name.
func RoleRef(ref rbacv1.RoleRef, kinds []string, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if ref.APIGroup != rbacv1.GroupName {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	known := false
	for _, k := range kinds {
		known = known || ref.Kind == k
	}
	if !known {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	} else {
		for _, msg := range PathSegmentName(ref.Name, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("name"), ref.Name, msg))
		}
	}
	return allErrs
}

// RoleRefUpdate refuses any change of a binding's roleRef: a binding
// names its role for life (delete and create it again to change it).
func RoleRefUpdate(ref, old rbacv1.RoleRef, fldPath *field.Path) field.ErrorList {
	if ref != old {
		return field.ErrorList{field.Invalid(fldPath, ref, "cannot change roleRef")}
	}
	return nil
}

// Subjects checks a binding's subjects; namespaced is true for a
// RoleBinding, whose ServiceAccount subjects may leave out their namespace
// (the binding's own).
func Subjects(subjects []rbacv1.Subject, namespaced bool, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for i := range subjects {
		allErrs = append(allErrs, Subject(&subjects[i], namespaced, fldPath.Index(i))...)
	}
	return allErrs
}

// Subject checks one subject: a name, and a kind of User and Group (API
// group rbac.authorization.k8s.io) or ServiceAccount (core group, a
// service account name, a namespace outside a RoleBinding).
func Subject(s *rbacv1.Subject, namespaced bool, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if s.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range apimachineryvalidation.ValidateServiceAccountName(s.Name, false) {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return allErrs
}
