package kinds

import (
	"time"

	nodev1 "k8s.io/api/node/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// RuntimeClasses: named container runtime handlers (node.k8s.io/v1).
func runtimeClasses() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: nodev1.SchemeGroupVersion.WithResource("runtimeclasses"), Kind: "RuntimeClass",
		NoGeneration: true,
		NameRule:     apivalidation.NameIsDNSSubdomain,
		Validate:     validator(validateRuntimeClass),
		ValidateUpdate: updateValidator(func(rc, old *nodev1.RuntimeClass) field.ErrorList {
			allErrs := validateRuntimeClass(rc)
			if rc.Handler != old.Handler {
				allErrs = append(allErrs, field.Invalid(field.NewPath("handler"), rc.Handler, "field is immutable"))
			}
			return allErrs
		}),
		Printer: runtimeClassPrinter,
	}
}

func validateRuntimeClass(rc *nodev1.RuntimeClass) field.ErrorList {
	allErrs := validation.DNS1123Label(rc.Handler, field.NewPath("handler"))
	if o := rc.Overhead; o != nil {
		for name, q := range o.PodFixed {
			if q.Sign() < 0 {
				allErrs = append(allErrs, field.Invalid(field.NewPath("overhead", "podFixed").Key(string(name)), q.String(), "must be greater than or equal to 0"))
			}
		}
	}
	if s := rc.Scheduling; s != nil {
		allErrs = append(allErrs, validation.Labels(s.NodeSelector, field.NewPath("scheduling", "nodeSelector"))...)
	}
	return allErrs
}

var runtimeClassPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Handler", "string", nodev1.RuntimeClass{}.SwaggerDoc()["handler"]),
		printers.AgeColumn(),
	},
	func(rc *nodev1.RuntimeClass, now time.Time) []interface{} {
		return []interface{}{rc.Name, rc.Handler, printers.Age(rc.CreationTimestamp, now)}
	},
)
