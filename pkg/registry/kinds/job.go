package kinds

import (
	"fmt"
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Jobs get a selector of their own on create; their template never changes.
func jobs() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: batchv1.SchemeGroupVersion.WithResource("jobs"), Kind: "Job",
		Namespaced: true, Categories: []string{"all"}, Status: true,
		Default:          defaulter(defaultJob),
		PrepareForCreate: generateJobSelector,
		NameRule:         apivalidation.NameIsDNSSubdomain,
		Validate:         validator(validateJob),
		ValidateUpdate:   updateValidator(validateJobUpdate),
		Printer:          jobPrinter,
		FieldLabels: func(obj runtime.Object) fields.Set {
			return fields.Set{"status.successful": strconv.Itoa(int(obj.(*batchv1.Job).Status.Succeeded))}
		},
	}
}

// generateJobSelector gives a new Job, unless spec.manualSelector is set,
// the selector Kubernetes generates: its own UID, carried as labels by its
// pod template (prefixed and legacy forms), so its pods never match
// another Job's.
func generateJobSelector(obj runtime.Object) {
	job := obj.(*batchv1.Job)
	if ptr.Deref(job.Spec.ManualSelector, false) {
		return
	}
	uid := string(job.UID)
	if job.Spec.Template.Labels == nil {
		job.Spec.Template.Labels = map[string]string{}
	}
	for k, v := range map[string]string{
		batchv1.ControllerUidLabel: uid, batchv1.JobNameLabel: job.Name,
		"controller-uid": uid, "job-name": job.Name,
	} {
		job.Spec.Template.Labels[k] = v
	}
	if job.Spec.Selector == nil {
		job.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: uid}}
	}
}

// Defaults.

func defaultJob(job *batchv1.Job) {
	spec := &job.Spec
	// A non-parallel job may leave both completions and parallelism unset.
	if spec.Completions == nil && spec.Parallelism == nil {
		spec.Completions = ptr.To[int32](1)
		spec.Parallelism = ptr.To[int32](1)
	}
	if spec.Parallelism == nil {
		spec.Parallelism = ptr.To[int32](1)
	}
	if spec.BackoffLimit == nil {
		if spec.BackoffLimitPerIndex != nil {
			spec.BackoffLimit = ptr.To[int32](math.MaxInt32)
		} else {
			spec.BackoffLimit = ptr.To[int32](6)
		}
	}
	if len(job.Labels) == 0 && spec.Template.Labels != nil {
		job.Labels = defaults.CopyStringMap(spec.Template.Labels)
	}
	if spec.CompletionMode == nil {
		spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr.To(false)
	}
	if spec.PodFailurePolicy != nil {
		for i := range spec.PodFailurePolicy.Rules {
			for j := range spec.PodFailurePolicy.Rules[i].OnPodConditions {
				c := &spec.PodFailurePolicy.Rules[i].OnPodConditions[j]
				if c.Status == "" {
					c.Status = corev1.ConditionTrue
				}
			}
		}
	}
	if spec.PodReplacementPolicy == nil {
		if spec.PodFailurePolicy != nil {
			spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
		} else {
			spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
		}
	}
	defaults.PodTemplateSpec(&spec.Template)
}

// Validation.

var (
	supportedCompletionModes = []batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}
	supportedPodReplacement  = []batchv1.PodReplacementPolicy{batchv1.TerminatingOrFailed, batchv1.Failed}
	jobRestartPolicies       = []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}
)

func validateJob(job *batchv1.Job) field.ErrorList {
	return validateJobSpec(&job.Spec, field.NewPath("spec"))
}

func validateJobSpec(spec *batchv1.JobSpec, specPath *field.Path) field.ErrorList {
	allErrs := validation.NonnegativePtr32(spec.Parallelism, specPath.Child("parallelism"))
	allErrs = append(allErrs, validation.NonnegativePtr32(spec.Completions, specPath.Child("completions"))...)
	allErrs = append(allErrs, validation.NonnegativePtr32(spec.BackoffLimit, specPath.Child("backoffLimit"))...)
	allErrs = append(allErrs, validation.NonnegativePtr32(spec.TTLSecondsAfterFinished, specPath.Child("ttlSecondsAfterFinished"))...)
	if spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, validation.Positive(*spec.ActiveDeadlineSeconds, specPath.Child("activeDeadlineSeconds"))...)
	}
	if spec.CompletionMode != nil {
		allErrs = append(allErrs, validation.Enum(*spec.CompletionMode, supportedCompletionModes, specPath.Child("completionMode"))...)
	}
	indexed := spec.CompletionMode != nil && *spec.CompletionMode == batchv1.IndexedCompletion
	if indexed && spec.Completions == nil {
		allErrs = append(allErrs, field.Required(specPath.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
	}
	if spec.BackoffLimitPerIndex != nil {
		allErrs = append(allErrs, validation.NonnegativePtr32(spec.BackoffLimitPerIndex, specPath.Child("backoffLimitPerIndex"))...)
		if !indexed {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("backoffLimitPerIndex"), "requires indexed completion mode"))
		}
	}
	if spec.PodReplacementPolicy != nil {
		allErrs = append(allErrs, validation.Enum(*spec.PodReplacementPolicy, supportedPodReplacement, specPath.Child("podReplacementPolicy"))...)
	}

	manual := spec.ManualSelector != nil && *spec.ManualSelector
	allErrs = append(allErrs, validation.SelectorMatchesTemplate(spec.Selector, &spec.Template, specPath, manual, "job")...)

	tplPath := specPath.Child("template")
	allErrs = append(allErrs, validation.PodTemplateSpec(&spec.Template, tplPath)...)
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

// validateJobUpdate: the selector is fixed once set, completionMode is
// fixed, completions is fixed for NonIndexed jobs, and the pod template is
// fixed except for label additions while the selector is still being
// generated and for scheduling directives of suspended, never-started jobs.
func validateJobUpdate(job, old *batchv1.Job) field.ErrorList {
	allErrs := field.ErrorList{}
	specPath := field.NewPath("spec")
	if old.Spec.Selector != nil {
		allErrs = append(allErrs, validation.SelectorUpdate(job.Spec.Selector, old.Spec.Selector, specPath.Child("selector"))...)
	}
	allErrs = append(allErrs, validation.Immutable(job.Spec.CompletionMode, old.Spec.CompletionMode, specPath.Child("completionMode"))...)
	if old.Spec.CompletionMode == nil || *old.Spec.CompletionMode == batchv1.NonIndexedCompletion {
		allErrs = append(allErrs, validation.Immutable(job.Spec.Completions, old.Spec.Completions, specPath.Child("completions"))...)
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
		allErrs = append(allErrs, field.Invalid(specPath.Child("template"), "<pod template>", validation.FieldImmutableMsg))
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

// The table.

var jobPrinter = printers.Typed(
	append([]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Status", "string", "Status of the job."),
		printers.Column("Completions", "string", batchv1.JobStatus{}.SwaggerDoc()["succeeded"]),
		printers.Column("Duration", "string", "Time required to complete the job."),
		printers.AgeColumn(),
	}, printers.TemplateColumns(batchv1.JobSpec{}.SwaggerDoc()["selector"])...),
	jobCells,
)

func jobCells(job *batchv1.Job, now time.Time) []interface{} {
	names, images := printers.ContainerCells(job.Spec.Template.Spec.Containers)
	return []interface{}{
		job.Name,
		jobStatus(job),
		jobCompletions(job),
		jobDuration(job, now),
		printers.Age(job.CreationTimestamp, now),
		names,
		images,
		metav1.FormatLabelSelector(job.Spec.Selector),
	}
}

// jobStatus picks the most telling state from the job's conditions.
func jobStatus(job *batchv1.Job) string {
	switch {
	case hasJobCondition(job, batchv1.JobComplete):
		return "Complete"
	case hasJobCondition(job, batchv1.JobFailed):
		return "Failed"
	case job.DeletionTimestamp != nil:
		return "Terminating"
	case hasJobCondition(job, batchv1.JobSuspended):
		return "Suspended"
	case hasJobCondition(job, batchv1.JobFailureTarget):
		return "FailureTarget"
	default:
		return "Running"
	}
}

func hasJobCondition(job *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// jobCompletions renders "succeeded/completions"; jobs without a completion
// count need one success, shown as "n/1" or "n/1 of <parallelism>".
func jobCompletions(job *batchv1.Job) string {
	if job.Spec.Completions != nil {
		return fmt.Sprintf("%d/%d", job.Status.Succeeded, *job.Spec.Completions)
	}
	if p := printers.DerefInt32(job.Spec.Parallelism, 0); p > 1 {
		return fmt.Sprintf("%d/1 of %d", job.Status.Succeeded, p)
	}
	return fmt.Sprintf("%d/1", job.Status.Succeeded)
}

// jobDuration is the run time so far, or start to completion; empty before start.
func jobDuration(job *batchv1.Job, now time.Time) string {
	switch {
	case job.Status.StartTime == nil:
		return ""
	case job.Status.CompletionTime == nil:
		return duration.HumanDuration(now.Sub(job.Status.StartTime.Time))
	default:
		return duration.HumanDuration(job.Status.CompletionTime.Sub(job.Status.StartTime.Time))
	}
}
