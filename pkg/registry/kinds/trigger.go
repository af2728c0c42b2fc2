package kinds

import (
	"strings"
	"time"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// Triggers (minik8s.io/v1) start a Function or a Workflow when their
// source fires: a cron schedule (parsed with pkg/cronschedule, as a
// CronJob's), events of Kubernetes objects, or HTTP requests on the
// gateway. The trigger controller (pkg/workflow/trigger) fires them.
// This file is the whole of the kind's server side.
func triggers() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: wfmeta.TriggerResource, Kind: "Trigger",
		Namespaced: true, ShortNames: []string{"trg"}, Status: true,
		Default:  defaulter(defaultTrigger),
		NameRule: apivalidation.NameIsDNS1035Label,
		Validate: validator(validateTrigger),
		Printer:  triggerPrinter,
	}
}

// Defaults: a schedule allows concurrent runs, an event source fires on
// every event type, an HTTP source answers POST, and 3 succeeded and 1
// failed runs are kept, as a CronJob's jobs.
func defaultTrigger(tr *minik8sv1.Trigger) {
	s := &tr.Spec
	if sc := s.Schedule; sc != nil && sc.ConcurrencyPolicy == "" {
		sc.ConcurrencyPolicy = minik8sv1.AllowConcurrent
	}
	if ev := s.Event; ev != nil && len(ev.Types) == 0 {
		ev.Types = []string{minik8sv1.EventAdded, minik8sv1.EventModified, minik8sv1.EventDeleted}
	}
	if h := s.HTTP; h != nil && len(h.Methods) == 0 {
		h.Methods = []string{"POST"}
	}
	if s.SuccessfulRunsHistoryLimit == nil {
		s.SuccessfulRunsHistoryLimit = ptr.To[int32](3)
	}
	if s.FailedRunsHistoryLimit == nil {
		s.FailedRunsHistoryLimit = ptr.To[int32](1)
	}
}

var (
	triggerConcurrencyPolicies = []string{minik8sv1.AllowConcurrent, minik8sv1.ForbidConcurrent, minik8sv1.ReplaceConcurrent}
	triggerEventTypes          = []string{minik8sv1.EventAdded, minik8sv1.EventModified, minik8sv1.EventDeleted}
	triggerHTTPMethods         = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}
)

func validateTrigger(tr *minik8sv1.Trigger) field.ErrorList {
	spec := field.NewPath("spec")
	s := &tr.Spec
	allErrs := validateTriggerTarget(&s.Target, spec.Child("target"))

	// Exactly one source.
	var sources []string
	if s.Schedule != nil {
		sources = append(sources, "schedule")
	}
	if s.Event != nil {
		sources = append(sources, "event")
	}
	if s.HTTP != nil {
		sources = append(sources, "http")
	}
	if len(sources) == 0 {
		allErrs = append(allErrs, field.Required(spec, "one source is required: schedule, event or http"))
	}
	for _, extra := range sources[min(1, len(sources)):] {
		allErrs = append(allErrs, field.Forbidden(spec.Child(extra), "may not be set together with "+sources[0]+": a trigger has one source"))
	}
	if s.Schedule != nil {
		allErrs = append(allErrs, validateScheduleSource(s.Schedule, spec.Child("schedule"))...)
	}
	if s.Event != nil {
		allErrs = append(allErrs, validateEventSource(s.Event, spec.Child("event"))...)
	}
	if s.HTTP != nil {
		allErrs = append(allErrs, validateStrings(s.HTTP.Methods, triggerHTTPMethods, spec.Child("http", "methods"))...)
	}
	allErrs = append(allErrs, validation.NonnegativePtr32(s.SuccessfulRunsHistoryLimit, spec.Child("successfulRunsHistoryLimit"))...)
	allErrs = append(allErrs, validation.NonnegativePtr32(s.FailedRunsHistoryLimit, spec.Child("failedRunsHistoryLimit"))...)
	return append(allErrs, validateTriggerStatus(&tr.Status, field.NewPath("status"))...)
}

// validateTriggerTarget: exactly one of a Function and a Workflow, by name.
func validateTriggerTarget(t *minik8sv1.TriggerTarget, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case t.Function == "" && t.Workflow == "":
		allErrs = append(allErrs, field.Required(fldPath, "one of function and workflow is required"))
	case t.Function != "" && t.Workflow != "":
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("workflow"), "may not be set together with function"))
	}
	for _, f := range []struct{ name, value string }{{"function", t.Function}, {"workflow", t.Workflow}} {
		if f.value == "" {
			continue
		}
		for _, msg := range utilvalidation.IsDNS1035Label(f.value) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(f.name), f.value, msg))
		}
	}
	return allErrs
}

func validateScheduleSource(sc *minik8sv1.ScheduleSource, fldPath *field.Path) field.ErrorList {
	allErrs := validateCronSchedule(sc.Schedule, fldPath.Child("schedule"))
	if tz := sc.TimeZone; tz != nil {
		allErrs = append(allErrs, validateTimeZone(*tz, fldPath.Child("timeZone"))...)
	}
	allErrs = append(allErrs, validation.Enum(sc.ConcurrencyPolicy, triggerConcurrencyPolicies, fldPath.Child("concurrencyPolicy"))...)
	if sc.StartingDeadlineSeconds != nil {
		allErrs = append(allErrs, validation.Nonnegative(*sc.StartingDeadlineSeconds, fldPath.Child("startingDeadlineSeconds"))...)
	}
	return allErrs
}

func validateEventSource(ev *minik8sv1.EventSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	avPath := fldPath.Child("apiVersion")
	if ev.APIVersion == "" {
		allErrs = append(allErrs, field.Required(avPath, "the API version of the kind watched, e.g. v1"))
	} else if _, err := schema.ParseGroupVersion(ev.APIVersion); err != nil {
		allErrs = append(allErrs, field.Invalid(avPath, ev.APIVersion, err.Error()))
	}
	if ev.Kind == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("kind"), "the kind watched, e.g. ConfigMap"))
	}
	if ns := ev.Namespace; ns != "" && ns != "*" {
		allErrs = append(allErrs, validation.DNS1123Label(ns, fldPath.Child("namespace"))...)
	}
	allErrs = append(allErrs, validation.LabelSelector(ev.Selector, fldPath.Child("selector"))...)
	return append(allErrs, validateStrings(ev.Types, triggerEventTypes, fldPath.Child("types"))...)
}

// validateStrings checks that each item is one of valid, once.
func validateStrings(items, valid []string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[string]bool{}
	for i, v := range items {
		allErrs = append(allErrs, validation.Enum(v, valid, fldPath.Index(i))...)
		if seen[v] {
			allErrs = append(allErrs, field.Duplicate(fldPath.Index(i), v))
		}
		seen[v] = true
	}
	return allErrs
}

func validateTriggerStatus(st *minik8sv1.TriggerStatus, fldPath *field.Path) field.ErrorList {
	allErrs := validation.Nonnegative(st.ObservedGeneration, fldPath.Child("observedGeneration"))
	allErrs = append(allErrs, validation.Nonnegative(st.Fired, fldPath.Child("fired"))...)
	allErrs = append(allErrs, validation.Nonnegative(st.Succeeded, fldPath.Child("succeeded"))...)
	allErrs = append(allErrs, validation.Nonnegative(st.Failed, fldPath.Child("failed"))...)
	return append(allErrs, metav1validation.ValidateConditions(st.Conditions, fldPath.Child("conditions"))...)
}

// The table: NAME TARGET SOURCE LAST-FIRE LAST-RESULT FIRED AGE.
var triggerPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Target", "string", "What the trigger starts: function/<name> or workflow/<name>."),
		printers.Column("Source", "string", "When it fires: its schedule, the kind and event types it watches, or http."),
		printers.Column("Last-Fire", "string", minik8sv1.TriggerStatus{}.SwaggerDoc()["lastFireTime"]),
		printers.Column("Last-Result", "string", minik8sv1.TriggerStatus{}.SwaggerDoc()["lastResult"]),
		printers.Column("Fired", "integer", minik8sv1.TriggerStatus{}.SwaggerDoc()["fired"]),
		printers.AgeColumn(),
	},
	func(tr *minik8sv1.Trigger, now time.Time) []interface{} {
		lastFire := printers.None
		if t := tr.Status.LastFireTime; t != nil {
			lastFire = printers.Age(*t, now)
		}
		return []interface{}{tr.Name, triggerTarget(&tr.Spec.Target), triggerSource(&tr.Spec), lastFire,
			tr.Status.LastResult, tr.Status.Fired, printers.Age(tr.CreationTimestamp, now)}
	},
)

func triggerTarget(t *minik8sv1.TriggerTarget) string {
	switch {
	case t.Function != "":
		return "function/" + t.Function
	case t.Workflow != "":
		return "workflow/" + t.Workflow
	}
	return ""
}

func triggerSource(s *minik8sv1.TriggerSpec) string {
	switch {
	case s.Schedule != nil:
		return "schedule: " + s.Schedule.Schedule
	case s.Event != nil:
		return "event: " + s.Event.Kind + " " + strings.Join(s.Event.Types, ",")
	case s.HTTP != nil:
		return "http"
	}
	return ""
}
