package kinds

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Events (core/v1): kubectl describe finds an object's events by the
// involvedObject fields.
func events() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("events"), Kind: "Event",
		Namespaced: true, ShortNames: []string{"ev"}, NoGeneration: true,
		NameRule:    validation.PathSegmentName,
		Validate:    validator(validateEvent),
		Printer:     eventPrinter,
		FieldLabels: eventFields,
	}
}

func eventFields(obj runtime.Object) fields.Set {
	e := obj.(*corev1.Event)
	// An event reported through events.k8s.io has no source but its
	// reporting controller, which "source" then selects, as upstream.
	source := e.Source.Component
	if source == "" {
		source = e.ReportingController
	}
	return fields.Set{
		"involvedObject.kind":            e.InvolvedObject.Kind,
		"involvedObject.namespace":       e.InvolvedObject.Namespace,
		"involvedObject.name":            e.InvolvedObject.Name,
		"involvedObject.uid":             string(e.InvolvedObject.UID),
		"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         source,
		"type":                           e.Type,
	}
}

// Validation.

func validateEvent(ev *corev1.Event) field.ErrorList {
	allErrs := field.ErrorList{}
	nsPath := field.NewPath("involvedObject", "namespace")
	if ev.InvolvedObject.Namespace == "" {
		// Events about cluster-scoped objects live in "default" (or nowhere).
		if ev.Namespace != metav1.NamespaceNone && ev.Namespace != metav1.NamespaceDefault {
			allErrs = append(allErrs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, "does not match event.namespace"))
		}
	} else if ev.Namespace != ev.InvolvedObject.Namespace {
		allErrs = append(allErrs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, "does not match event.namespace"))
	}
	if ev.Count < 0 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("count"), ev.Count, validation.IsNegativeErrorMsg))
	}
	return allErrs
}

// The table.

// eventPrinter follows kubectl get events: the name is a wide column at the end.
var eventPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.Column("Last Seen", "string", corev1.Event{}.SwaggerDoc()["lastTimestamp"]),
		printers.Column("Type", "string", corev1.Event{}.SwaggerDoc()["type"]),
		printers.Column("Reason", "string", corev1.Event{}.SwaggerDoc()["reason"]),
		printers.Column("Object", "string", corev1.Event{}.SwaggerDoc()["involvedObject"]),
		printers.Wide(printers.Column("Subobject", "string", corev1.ObjectReference{}.SwaggerDoc()["fieldPath"])),
		printers.Wide(printers.Column("Source", "string", corev1.Event{}.SwaggerDoc()["source"])),
		printers.Column("Message", "string", corev1.Event{}.SwaggerDoc()["message"]),
		printers.Wide(printers.Column("First Seen", "string", corev1.Event{}.SwaggerDoc()["firstTimestamp"])),
		printers.Wide(printers.Column("Count", "string", corev1.Event{}.SwaggerDoc()["count"])),
		printers.Wide(printers.NameColumn()),
	},
	eventCells,
)

func eventCells(ev *corev1.Event, now time.Time) []interface{} {
	first := printers.Age(ev.FirstTimestamp, now)
	if ev.FirstTimestamp.IsZero() {
		first = printers.MicroAge(ev.EventTime, now)
	}
	last := first
	if !ev.LastTimestamp.IsZero() {
		last = printers.Age(ev.LastTimestamp, now)
	}
	count := ev.Count
	switch {
	case ev.Series != nil:
		last = printers.MicroAge(ev.Series.LastObservedTime, now)
		count = ev.Series.Count
	case count == 0:
		count = 1 // singleton events from the events.k8s.io API carry no count
	}

	object := strings.ToLower(ev.InvolvedObject.Kind)
	if ev.InvolvedObject.Name != "" {
		object += "/" + ev.InvolvedObject.Name
	}

	source := printers.OrDefault(ev.Source.Component, ev.ReportingController)
	if host := printers.OrDefault(ev.Source.Host, ev.ReportingInstance); host != "" {
		source += ", " + host
	}

	return []interface{}{
		last,
		ev.Type,
		ev.Reason,
		object,
		ev.InvolvedObject.FieldPath,
		source,
		strings.TrimSpace(ev.Message),
		first,
		int64(count),
		ev.Name,
	}
}
