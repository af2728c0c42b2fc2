package kinds

import (
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/cronschedule"
	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// CronJobs: Jobs on a schedule. Validation parses the schedule and time
// zone with pkg/cronschedule, as the CronJob controller does.
func cronJobs() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: batchv1.SchemeGroupVersion.WithResource("cronjobs"), Kind: "CronJob",
		Namespaced: true, ShortNames: []string{"cj"}, Categories: []string{"all"}, Status: true,
		Default:  defaulter(defaultCronJob),
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validateCronJob),
		Printer:  cronJobPrinter,
	}
}

// Defaults.

func defaultCronJob(cj *batchv1.CronJob) {
	spec := &cj.Spec
	if spec.ConcurrencyPolicy == "" {
		spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr.To(false)
	}
	if spec.SuccessfulJobsHistoryLimit == nil {
		spec.SuccessfulJobsHistoryLimit = ptr.To[int32](3)
	}
	if spec.FailedJobsHistoryLimit == nil {
		spec.FailedJobsHistoryLimit = ptr.To[int32](1)
	}
	// The job template only gets the pod template defaults; the Job defaults
	// are applied when the controller creates the Job.
	defaults.PodTemplateSpec(&spec.JobTemplate.Spec.Template)
}

// Validation.

var supportedConcurrencyPolicies = []batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}

// maxCronJobNameLength leaves room for the 11-character suffix the validateCronJob
// controller appends to job names.
const maxCronJobNameLength = 52

func validateCronJob(cj *batchv1.CronJob) field.ErrorList {
	allErrs := field.ErrorList{}
	if len(cj.Name) > maxCronJobNameLength {
		allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "name"), cj.Name, fmt.Sprintf("must be no more than %d characters", maxCronJobNameLength)))
	}
	spec := &cj.Spec
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, validateCronSchedule(spec.Schedule, specPath.Child("schedule"))...)
	if tz := spec.TimeZone; tz != nil {
		allErrs = append(allErrs, validateTimeZone(*tz, specPath.Child("timeZone"))...)
	}
	allErrs = append(allErrs, validation.Enum(spec.ConcurrencyPolicy, supportedConcurrencyPolicies, specPath.Child("concurrencyPolicy"))...)
	if spec.StartingDeadlineSeconds != nil {
		allErrs = append(allErrs, validation.Nonnegative(*spec.StartingDeadlineSeconds, specPath.Child("startingDeadlineSeconds"))...)
	}
	allErrs = append(allErrs, validation.NonnegativePtr32(spec.SuccessfulJobsHistoryLimit, specPath.Child("successfulJobsHistoryLimit"))...)
	allErrs = append(allErrs, validation.NonnegativePtr32(spec.FailedJobsHistoryLimit, specPath.Child("failedJobsHistoryLimit"))...)

	jtPath := specPath.Child("jobTemplate")
	allErrs = append(allErrs, validation.Labels(spec.JobTemplate.Labels, jtPath.Child("metadata", "labels"))...)
	allErrs = append(allErrs, validateJobSpec(&spec.JobTemplate.Spec, jtPath.Child("spec"))...)
	return allErrs
}

func validateTimeZone(tz string, fldPath *field.Path) field.ErrorList {
	if _, err := cronschedule.LoadLocation(tz); err != nil {
		return field.ErrorList{field.Invalid(fldPath, tz, err.Error())}
	}
	return nil
}

// The table.

var cronJobPrinter = printers.Typed(
	append([]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Schedule", "string", batchv1.CronJobSpec{}.SwaggerDoc()["schedule"]),
		printers.Column("Timezone", "string", batchv1.CronJobSpec{}.SwaggerDoc()["timeZone"]),
		printers.Column("Suspend", "boolean", batchv1.CronJobSpec{}.SwaggerDoc()["suspend"]),
		printers.Column("Active", "integer", batchv1.CronJobStatus{}.SwaggerDoc()["active"]),
		printers.Column("Last Schedule", "string", batchv1.CronJobStatus{}.SwaggerDoc()["lastScheduleTime"]),
		printers.AgeColumn(),
	}, printers.TemplateColumns(batchv1.JobSpec{}.SwaggerDoc()["selector"])...),
	cronJobCells,
)

func cronJobCells(cj *batchv1.CronJob, now time.Time) []interface{} {
	lastSchedule := printers.None
	if t := cj.Status.LastScheduleTime; t != nil {
		lastSchedule = printers.Age(*t, now)
	}
	timeZone := printers.None
	if cj.Spec.TimeZone != nil {
		timeZone = *cj.Spec.TimeZone
	}
	tmpl := cj.Spec.JobTemplate.Spec
	names, images := printers.ContainerCells(tmpl.Template.Spec.Containers)
	return []interface{}{
		cj.Name,
		cj.Spec.Schedule,
		timeZone,
		printers.BoolPtrCell(cj.Spec.Suspend),
		int64(len(cj.Status.Active)),
		lastSchedule,
		printers.Age(cj.CreationTimestamp, now),
		names,
		images,
		metav1.FormatLabelSelector(tmpl.Selector),
	}
}

// validateCronSchedule parses a schedule as a CronJob's spec.schedule is
// parsed, and as the trigger controller parses it (pkg/cronschedule).
func validateCronSchedule(schedule string, fldPath *field.Path) field.ErrorList {
	if schedule == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	_, err := cronschedule.Parse(schedule)
	switch {
	case errors.Is(err, cronschedule.ErrTZInSchedule):
		return field.ErrorList{field.Invalid(fldPath, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead")}
	case err != nil:
		return field.ErrorList{field.Invalid(fldPath, schedule, err.Error())}
	}
	return nil
}
