package kinds

import (
	resourcev1 "k8s.io/api/resource/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
)

// DeviceClasses (resource.k8s.io/v1): kinds of devices a claim may ask
// for, selected by CEL. minik8s serves the API; no driver allocates.
func deviceClasses() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: resourcev1.SchemeGroupVersion.WithResource("deviceclasses"), Kind: "DeviceClass",
		Printer:  printers.Default, // as Kubernetes' default table: the name and when it was created
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(func(c *resourcev1.DeviceClass) field.ErrorList {
			return validateDeviceSelectors(c.Spec.Selectors, field.NewPath("spec", "selectors"))
		}),
	}
}

// validateDeviceSelectors checks that each selector has its CEL expression.
func validateDeviceSelectors(selectors []resourcev1.DeviceSelector, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, s := range selectors {
		if s.CEL == nil {
			allErrs = append(allErrs, field.Required(path.Index(i).Child("cel"), ""))
		} else if s.CEL.Expression == "" {
			allErrs = append(allErrs, field.Required(path.Index(i).Child("cel", "expression"), ""))
		}
	}
	return allErrs
}
