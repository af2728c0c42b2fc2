package validation

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateReplicatedTemplate checks the selector/template pair of
// Deployments and ReplicaSets, whose pods must always restart.
func ReplicatedTemplate(sel *metav1.LabelSelector, t *corev1.PodTemplateSpec, specPath *field.Path, kind string) field.ErrorList {
	allErrs := SelectorMatchesTemplate(sel, t, specPath, true, kind)
	tplPath := specPath.Child("template")
	allErrs = append(allErrs, PodTemplateSpec(t, tplPath)...)
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways && t.Spec.RestartPolicy != "" {
		allErrs = append(allErrs, field.NotSupported(tplPath.Child("spec", "restartPolicy"), t.Spec.RestartPolicy,
			[]corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Forbidden(tplPath.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicaSet is not Supported"))
	}
	return allErrs
}

// validateSelectorMatchesTemplate checks a workload selector and that it
// selects the workload's own pod template.
func SelectorMatchesTemplate(sel *metav1.LabelSelector, t *corev1.PodTemplateSpec, specPath *field.Path, required bool, kind string) field.ErrorList {
	allErrs := field.ErrorList{}
	selPath := specPath.Child("selector")
	if sel == nil {
		if required {
			allErrs = append(allErrs, field.Required(selPath, ""))
		}
		return allErrs
	}
	allErrs = append(allErrs, LabelSelector(sel, selPath)...)
	if len(allErrs) > 0 {
		return allErrs
	}
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		return append(allErrs, field.Invalid(selPath, sel, "empty selector is invalid for "+kind))
	}
	if !selectorMatchesLabels(sel, t.Labels) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("template", "metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	return allErrs
}
