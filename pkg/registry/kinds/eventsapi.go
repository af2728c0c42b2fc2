package kinds

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	regvalidation "github.com/minik8s/minik8s/pkg/registry/validation"
)

// Events of events.k8s.io/v1: the same objects as core/v1 Events, stored
// as those (as in Kubernetes), so an event one client writes through
// either API every other reads through both. Only the field names differ:
// regarding is involvedObject, note is message, the deprecated* fields
// are core's source, firstTimestamp, lastTimestamp and count.
func eventsAPIEvents() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: eventsv1.SchemeGroupVersion.WithResource("events"), Kind: "Event",
		Namespaced: true, ShortNames: []string{"ev"}, NoGeneration: true,
		NameRule:       regvalidation.PathSegmentName,
		StoragePrefix:  "/registry/events/",
		StoredAs:       &registry.StorageConversion{New: func() runtime.Object { return &corev1.Event{} }, ToStored: toCoreEvent, FromStored: fromCoreEvent},
		Validate:       validator(validateEventsAPIEvent),
		ValidateUpdate: updateValidator(validateEventsAPIEventUpdate),
		Printer: printers.Printer{Columns: eventPrinter.Columns, Cells: func(obj runtime.Object, now time.Time) []interface{} {
			core, _ := toCoreEvent(obj)
			return eventPrinter.Cells(core, now)
		}},
		FieldLabels: func(obj runtime.Object) fields.Set {
			core, _ := toCoreEvent(obj)
			set := eventFields(core)
			// The events.k8s.io names of the same fields select too.
			for field, coreField := range map[string]string{
				"regarding.kind": "involvedObject.kind", "regarding.namespace": "involvedObject.namespace",
				"regarding.name": "involvedObject.name", "regarding.uid": "involvedObject.uid",
				"regarding.apiVersion": "involvedObject.apiVersion", "regarding.resourceVersion": "involvedObject.resourceVersion",
				"regarding.fieldPath": "involvedObject.fieldPath", "reportingController": "reportingComponent", "deprecatedSource": "source",
			} {
				set[field] = set[coreField]
			}
			return set
		},
	}
}

func toCoreEvent(obj runtime.Object) (runtime.Object, error) {
	e := obj.(*eventsv1.Event)
	out := &corev1.Event{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta: e.ObjectMeta, InvolvedObject: e.Regarding, Reason: e.Reason, Message: e.Note,
		Source: e.DeprecatedSource, FirstTimestamp: e.DeprecatedFirstTimestamp, LastTimestamp: e.DeprecatedLastTimestamp,
		Count: e.DeprecatedCount, Type: e.Type, EventTime: e.EventTime, Action: e.Action, Related: e.Related,
		ReportingController: e.ReportingController, ReportingInstance: e.ReportingInstance,
	}
	if e.Series != nil {
		out.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out, nil
}

func fromCoreEvent(stored runtime.Object) (runtime.Object, error) {
	e := stored.(*corev1.Event)
	out := &eventsv1.Event{
		TypeMeta:   metav1.TypeMeta{APIVersion: eventsv1.SchemeGroupVersion.String(), Kind: "Event"},
		ObjectMeta: e.ObjectMeta, Regarding: e.InvolvedObject, Reason: e.Reason, Note: e.Message,
		DeprecatedSource: e.Source, DeprecatedFirstTimestamp: e.FirstTimestamp, DeprecatedLastTimestamp: e.LastTimestamp,
		DeprecatedCount: e.Count, Type: e.Type, EventTime: e.EventTime, Action: e.Action, Related: e.Related,
		ReportingController: e.ReportingController, ReportingInstance: e.ReportingInstance,
	}
	if e.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out, nil
}

// noteMaxLength is Kubernetes' bound on an event's note.
const noteMaxLength = 1024

// validateEventsAPIEvent is Kubernetes' check of an event written through
// events.k8s.io/v1, stricter than core's: who reported it, when, and
// what happened are required.
func validateEventsAPIEvent(e *eventsv1.Event) field.ErrorList {
	core, _ := toCoreEvent(e)
	allErrs := validateEvent(core.(*corev1.Event))
	if e.EventTime.IsZero() {
		allErrs = append(allErrs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		allErrs = append(allErrs, field.Invalid(field.NewPath("type"), e.Type, "has invalid value: "+e.Type))
	}
	for _, f := range []struct {
		name, value string
	}{{"reportingController", e.ReportingController}, {"reportingInstance", e.ReportingInstance}, {"action", e.Action}, {"reason", e.Reason}} {
		switch {
		case f.value == "":
			allErrs = append(allErrs, field.Required(field.NewPath(f.name), ""))
		case len(f.value) > 128:
			allErrs = append(allErrs, field.TooLong(field.NewPath(f.name), "", 128))
		}
	}
	if e.ReportingController != "" {
		for _, msg := range validation.IsQualifiedName(e.ReportingController) {
			allErrs = append(allErrs, field.Invalid(field.NewPath("reportingController"), e.ReportingController, msg))
		}
	}
	if len(e.Note) > noteMaxLength {
		allErrs = append(allErrs, field.TooLong(field.NewPath("note"), "", noteMaxLength))
	}
	if e.Series != nil {
		if e.Series.Count < 2 {
			allErrs = append(allErrs, field.Invalid(field.NewPath("series", "count"), e.Series.Count, "should be at least 2"))
		}
		if e.Series.LastObservedTime.IsZero() {
			allErrs = append(allErrs, field.Required(field.NewPath("series", "lastObservedTime"), ""))
		}
	}
	return allErrs
}

// validateEventsAPIEventUpdate keeps what identifies an event: only its
// series, note and the deprecated counters may change.
func validateEventsAPIEventUpdate(e, old *eventsv1.Event) field.ErrorList {
	var allErrs field.ErrorList
	for _, f := range []struct {
		name     string
		now, was any
	}{
		{"action", e.Action, old.Action}, {"reason", e.Reason, old.Reason}, {"regarding", e.Regarding, old.Regarding},
		{"related", e.Related, old.Related}, {"reportingController", e.ReportingController, old.ReportingController},
		{"reportingInstance", e.ReportingInstance, old.ReportingInstance}, {"type", e.Type, old.Type},
		{"eventTime", e.EventTime, old.EventTime},
	} {
		if !apiequality.Semantic.DeepEqual(f.now, f.was) {
			allErrs = append(allErrs, field.Invalid(field.NewPath(f.name), f.now, "field is immutable"))
		}
	}
	return allErrs
}
