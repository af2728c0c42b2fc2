package kinds

import (
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// ControllerRevisions: the immutable snapshots of a DaemonSet's or
// StatefulSet's template that rollouts and `kubectl rollout undo` use.
func controllerRevisions() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: appsv1.SchemeGroupVersion.WithResource("controllerrevisions"), Kind: "ControllerRevision",
		Namespaced: true, NoGeneration: true,
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validateControllerRevision),
		ValidateUpdate: updateValidator(validateControllerRevisionUpdate),
		Printer:        controllerRevisionPrinter,
	}
}

// Validation.

func validateControllerRevision(cr *appsv1.ControllerRevision) field.ErrorList {
	allErrs := validation.Nonnegative(cr.Revision, field.NewPath("revision"))
	if cr.Data.Raw == nil && cr.Data.Object == nil {
		allErrs = append(allErrs, field.Required(field.NewPath("data"), "data is mandatory"))
	}
	return allErrs
}

func validateControllerRevisionUpdate(cr, old *appsv1.ControllerRevision) field.ErrorList {
	allErrs := validateControllerRevision(cr)
	if !apiequality.Semantic.DeepEqual(cr.Data.Raw, old.Data.Raw) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("data"), "field is immutable"))
	}
	return allErrs
}

// The table.

var controllerRevisionPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Controller", "string", "The controller that owns the revision."),
		printers.Column("Revision", "integer", appsv1.ControllerRevision{}.SwaggerDoc()["revision"]),
		printers.AgeColumn(),
	},
	func(cr *appsv1.ControllerRevision, now time.Time) []interface{} {
		// As kubectl prints it: daemonset.apps/fluentd.
		controller := "<none>"
		if ref := metav1.GetControllerOf(cr); ref != nil {
			kind := strings.ToLower(ref.Kind)
			if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && gv.Group != "" {
				kind += "." + gv.Group
			}
			controller = kind + "/" + ref.Name
		}
		return []interface{}{cr.Name, controller, cr.Revision, printers.Age(cr.CreationTimestamp, now)}
	},
)
