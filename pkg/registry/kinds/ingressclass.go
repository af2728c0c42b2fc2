package kinds

import (
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
)

// IngressClasses: which controller serves an Ingress
// (networking.k8s.io/v1).
func ingressClasses() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: networkingv1.SchemeGroupVersion.WithResource("ingressclasses"), Kind: "IngressClass",
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validateIngressClass),
		ValidateUpdate: updateValidator(func(ic, old *networkingv1.IngressClass) field.ErrorList {
			allErrs := validateIngressClass(ic)
			if ic.Spec.Controller != old.Spec.Controller {
				allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "controller"), ic.Spec.Controller, "field is immutable"))
			}
			return allErrs
		}),
		Printer: ingressClassPrinter,
	}
}

func validateIngressClass(ic *networkingv1.IngressClass) field.ErrorList {
	var allErrs field.ErrorList
	p := field.NewPath("spec", "controller")
	switch {
	case ic.Spec.Controller == "":
		allErrs = append(allErrs, field.Required(p, ""))
	case len(ic.Spec.Controller) > 250:
		allErrs = append(allErrs, field.TooLong(p, "", 250))
	}
	return allErrs
}

var ingressClassPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Controller", "string", networkingv1.IngressClassSpec{}.SwaggerDoc()["controller"]),
		printers.Column("Parameters", "string", networkingv1.IngressClassSpec{}.SwaggerDoc()["parameters"]),
		printers.AgeColumn(),
	},
	func(ic *networkingv1.IngressClass, now time.Time) []interface{} {
		params := "<none>"
		if p := ic.Spec.Parameters; p != nil {
			params = p.Kind + "/" + p.Name
		}
		return []interface{}{ic.Name, ic.Spec.Controller, params, printers.Age(ic.CreationTimestamp, now)}
	},
)
