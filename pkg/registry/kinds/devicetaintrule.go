package kinds

import (
	"slices"

	resourcev1 "k8s.io/api/resource/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
)

// DeviceTaintRules (resource.k8s.io/v1): taints put on the devices a
// selector picks, with conditions in their status.
func deviceTaintRules() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: resourcev1.SchemeGroupVersion.WithResource("devicetaintrules"), Kind: "DeviceTaintRule",
		Printer:  printers.Default, // as Kubernetes' default table: the name and when it was created
		NameRule: apivalidation.NameIsDNSSubdomain, Status: true,
		Validate: validator(func(r *resourcev1.DeviceTaintRule) field.ErrorList {
			var allErrs field.ErrorList
			taint := field.NewPath("spec", "taint")
			if r.Spec.Taint.Key == "" {
				allErrs = append(allErrs, field.Required(taint.Child("key"), ""))
			}
			effects := []string{string(resourcev1.DeviceTaintEffectNone), string(resourcev1.DeviceTaintEffectNoSchedule), string(resourcev1.DeviceTaintEffectNoExecute)}
			if !slices.Contains(effects, string(r.Spec.Taint.Effect)) {
				allErrs = append(allErrs, field.NotSupported(taint.Child("effect"), r.Spec.Taint.Effect, effects))
			}
			return allErrs
		}),
	}
}
