package validation

import (
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/cronschedule"
)

// maxCronJobNameLength leaves room for the 11-character suffix the CronJob
// controller appends to job names.
const maxCronJobNameLength = 52

var (
	supportedDeploymentStrategies = []appsv1.DeploymentStrategyType{appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType}
	supportedConcurrencyPolicies  = []batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}
	supportedCompletionModes      = []batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}
	supportedPodReplacement       = []batchv1.PodReplacementPolicy{batchv1.TerminatingOrFailed, batchv1.Failed}
	jobRestartPolicies            = []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}
)

func Deployment(d *appsv1.Deployment) field.ErrorList {
	spec := &d.Spec
	specPath := field.NewPath("spec")
	allErrs := NonnegativePtr32(spec.Replicas, specPath.Child("replicas"))
	allErrs = append(allErrs, validateReplicatedTemplate(spec.Selector, &spec.Template, specPath, "deployment")...)

	strategyPath := specPath.Child("strategy")
	allErrs = append(allErrs, Enum(spec.Strategy.Type, supportedDeploymentStrategies, strategyPath.Child("type"))...)
	switch spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if spec.Strategy.RollingUpdate != nil {
			allErrs = append(allErrs, field.Forbidden(strategyPath.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		if spec.Strategy.RollingUpdate != nil {
			allErrs = append(allErrs, validateRollingUpdate(spec.Strategy.RollingUpdate, strategyPath.Child("rollingUpdate"))...)
		}
	}
	allErrs = append(allErrs, NonnegativePtr32(spec.RevisionHistoryLimit, specPath.Child("revisionHistoryLimit"))...)
	allErrs = append(allErrs, Nonnegative(int64(spec.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	if pds := spec.ProgressDeadlineSeconds; pds != nil {
		p := specPath.Child("progressDeadlineSeconds")
		allErrs = append(allErrs, Nonnegative(int64(*pds), p)...)
		if *pds <= spec.MinReadySeconds {
			allErrs = append(allErrs, field.Invalid(p, *pds, "must be greater than minReadySeconds"))
		}
	}
	return allErrs
}

func validateRollingUpdate(ru *appsv1.RollingUpdateDeployment, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	muPath, msPath := fldPath.Child("maxUnavailable"), fldPath.Child("maxSurge")
	if ru.MaxUnavailable != nil {
		allErrs = append(allErrs, validateIntOrPercent(*ru.MaxUnavailable, muPath)...)
		if percent, ok := asPercent(*ru.MaxUnavailable); ok && percent > 100 {
			allErrs = append(allErrs, field.Invalid(muPath, ru.MaxUnavailable.String(), "must not be greater than 100%"))
		}
	}
	if ru.MaxSurge != nil {
		allErrs = append(allErrs, validateIntOrPercent(*ru.MaxSurge, msPath)...)
	}
	if isZero(ru.MaxUnavailable) && isZero(ru.MaxSurge) {
		allErrs = append(allErrs, field.Invalid(muPath, ru.MaxUnavailable.String(), "may not be 0 when `maxSurge` is 0"))
	}
	return allErrs
}

// validateIntOrPercent accepts a non-negative integer or "<n>%".
func validateIntOrPercent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if v.Type == intstr.String {
		for _, msg := range utilvalidation.IsValidPercent(v.StrVal) {
			allErrs = append(allErrs, field.Invalid(fldPath, v.StrVal, msg))
		}
		return allErrs
	}
	return Nonnegative(int64(v.IntVal), fldPath)
}

func asPercent(v intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String || len(utilvalidation.IsValidPercent(v.StrVal)) > 0 {
		return 0, false
	}
	var n int
	if _, err := fmt.Sscanf(strings.TrimSuffix(v.StrVal, "%"), "%d", &n); err != nil {
		return 0, false
	}
	return n, true
}

func isZero(v *intstr.IntOrString) bool {
	if v == nil {
		return false
	}
	if v.Type == intstr.Int {
		return v.IntVal == 0
	}
	n, ok := asPercent(*v)
	return ok && n == 0
}

func ReplicaSet(rs *appsv1.ReplicaSet) field.ErrorList {
	specPath := field.NewPath("spec")
	allErrs := NonnegativePtr32(rs.Spec.Replicas, specPath.Child("replicas"))
	allErrs = append(allErrs, validateReplicatedTemplate(rs.Spec.Selector, &rs.Spec.Template, specPath, "replicaset")...)
	allErrs = append(allErrs, Nonnegative(int64(rs.Spec.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	return allErrs
}

// validateReplicatedTemplate checks the selector/template pair of
// Deployments and ReplicaSets, whose pods must always restart.
func validateReplicatedTemplate(sel *metav1.LabelSelector, t *corev1.PodTemplateSpec, specPath *field.Path, kind string) field.ErrorList {
	allErrs := validateSelectorMatchesTemplate(sel, t, specPath, true, kind)
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
func validateSelectorMatchesTemplate(sel *metav1.LabelSelector, t *corev1.PodTemplateSpec, specPath *field.Path, required bool, kind string) field.ErrorList {
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

func Job(job *batchv1.Job) field.ErrorList {
	return validateJobSpec(&job.Spec, field.NewPath("spec"))
}

func validateJobSpec(spec *batchv1.JobSpec, specPath *field.Path) field.ErrorList {
	allErrs := NonnegativePtr32(spec.Parallelism, specPath.Child("parallelism"))
	allErrs = append(allErrs, NonnegativePtr32(spec.Completions, specPath.Child("completions"))...)
	allErrs = append(allErrs, NonnegativePtr32(spec.BackoffLimit, specPath.Child("backoffLimit"))...)
	allErrs = append(allErrs, NonnegativePtr32(spec.TTLSecondsAfterFinished, specPath.Child("ttlSecondsAfterFinished"))...)
	if spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, validatePositive(*spec.ActiveDeadlineSeconds, specPath.Child("activeDeadlineSeconds"))...)
	}
	if spec.CompletionMode != nil {
		allErrs = append(allErrs, Enum(*spec.CompletionMode, supportedCompletionModes, specPath.Child("completionMode"))...)
	}
	indexed := spec.CompletionMode != nil && *spec.CompletionMode == batchv1.IndexedCompletion
	if indexed && spec.Completions == nil {
		allErrs = append(allErrs, field.Required(specPath.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
	}
	if spec.BackoffLimitPerIndex != nil {
		allErrs = append(allErrs, NonnegativePtr32(spec.BackoffLimitPerIndex, specPath.Child("backoffLimitPerIndex"))...)
		if !indexed {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("backoffLimitPerIndex"), "requires indexed completion mode"))
		}
	}
	if spec.PodReplacementPolicy != nil {
		allErrs = append(allErrs, Enum(*spec.PodReplacementPolicy, supportedPodReplacement, specPath.Child("podReplacementPolicy"))...)
	}

	manual := spec.ManualSelector != nil && *spec.ManualSelector
	allErrs = append(allErrs, validateSelectorMatchesTemplate(spec.Selector, &spec.Template, specPath, manual, "job")...)

	tplPath := specPath.Child("template")
	allErrs = append(allErrs, PodTemplateSpec(&spec.Template, tplPath)...)
	rpPath := tplPath.Child("spec", "restartPolicy")
	switch rp := spec.Template.Spec.RestartPolicy; {
	case rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever:
		if rp != "" {
			allErrs = append(allErrs, field.NotSupported(rpPath, rp, jobRestartPolicies))
		}
	case spec.PodFailurePolicy != nil && rp != corev1.RestartPolicyNever:
		allErrs = append(allErrs, field.Invalid(rpPath, rp, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}
	return allErrs
}

// JobUpdate: the selector is fixed once set, completionMode is
// fixed, completions is fixed for NonIndexed jobs, and the pod template is
// fixed except for label additions while the selector is still being
// generated and for scheduling directives of suspended, never-started jobs.
func JobUpdate(job, old *batchv1.Job) field.ErrorList {
	allErrs := field.ErrorList{}
	specPath := field.NewPath("spec")
	if old.Spec.Selector != nil {
		allErrs = append(allErrs, SelectorUpdate(job.Spec.Selector, old.Spec.Selector, specPath.Child("selector"))...)
	}
	allErrs = append(allErrs, Immutable(job.Spec.CompletionMode, old.Spec.CompletionMode, specPath.Child("completionMode"))...)
	if old.Spec.CompletionMode == nil || *old.Spec.CompletionMode == batchv1.NonIndexedCompletion {
		allErrs = append(allErrs, Immutable(job.Spec.Completions, old.Spec.Completions, specPath.Child("completions"))...)
	}

	oldTpl := old.Spec.Template.DeepCopy()
	newTpl := &job.Spec.Template
	if old.Spec.Selector == nil && containsLabels(newTpl.Labels, oldTpl.Labels) {
		oldTpl.Labels = newTpl.Labels
	}
	suspended := old.Spec.Suspend != nil && *old.Spec.Suspend
	if suspended && old.Status.StartTime == nil {
		oldTpl.Labels = newTpl.Labels
		oldTpl.Annotations = newTpl.Annotations
		oldTpl.Spec.NodeSelector = newTpl.Spec.NodeSelector
		oldTpl.Spec.Tolerations = newTpl.Spec.Tolerations
		oldTpl.Spec.Affinity = newTpl.Spec.Affinity
		oldTpl.Spec.SchedulingGates = newTpl.Spec.SchedulingGates
	}
	if !equality.Semantic.DeepEqual(oldTpl, newTpl) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("template"), "<pod template>", fieldImmutableMsg))
	}
	return allErrs
}

// containsLabels reports whether every label of sub is in super.
func containsLabels(super, sub map[string]string) bool {
	for k, v := range sub {
		if w, ok := super[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func CronJob(cj *batchv1.CronJob) field.ErrorList {
	allErrs := field.ErrorList{}
	if len(cj.Name) > maxCronJobNameLength {
		allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "name"), cj.Name, fmt.Sprintf("must be no more than %d characters", maxCronJobNameLength)))
	}
	spec := &cj.Spec
	specPath := field.NewPath("spec")
	schedPath := specPath.Child("schedule")
	switch {
	case spec.Schedule == "":
		allErrs = append(allErrs, field.Required(schedPath, ""))
	default:
		// Parsed as the CronJob controller parses it.
		_, err := cronschedule.Parse(spec.Schedule)
		if errors.Is(err, cronschedule.ErrTZInSchedule) {
			allErrs = append(allErrs, field.Invalid(schedPath, spec.Schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
		} else if err != nil {
			allErrs = append(allErrs, field.Invalid(schedPath, spec.Schedule, err.Error()))
		}
	}
	if tz := spec.TimeZone; tz != nil {
		allErrs = append(allErrs, validateTimeZone(*tz, specPath.Child("timeZone"))...)
	}
	allErrs = append(allErrs, Enum(spec.ConcurrencyPolicy, supportedConcurrencyPolicies, specPath.Child("concurrencyPolicy"))...)
	if spec.StartingDeadlineSeconds != nil {
		allErrs = append(allErrs, Nonnegative(*spec.StartingDeadlineSeconds, specPath.Child("startingDeadlineSeconds"))...)
	}
	allErrs = append(allErrs, NonnegativePtr32(spec.SuccessfulJobsHistoryLimit, specPath.Child("successfulJobsHistoryLimit"))...)
	allErrs = append(allErrs, NonnegativePtr32(spec.FailedJobsHistoryLimit, specPath.Child("failedJobsHistoryLimit"))...)

	jtPath := specPath.Child("jobTemplate")
	allErrs = append(allErrs, Labels(spec.JobTemplate.Labels, jtPath.Child("metadata", "labels"))...)
	allErrs = append(allErrs, validateJobSpec(&spec.JobTemplate.Spec, jtPath.Child("spec"))...)
	return allErrs
}

func validateTimeZone(tz string, fldPath *field.Path) field.ErrorList {
	if _, err := cronschedule.LoadLocation(tz); err != nil {
		return field.ErrorList{field.Invalid(fldPath, tz, err.Error())}
	}
	return nil
}
