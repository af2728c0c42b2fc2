package kinds

import (
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
)

// ResourceSlices (resource.k8s.io/v1): the devices a driver publishes
// for a pool, on one node or for the cluster.
func resourceSlices() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: resourcev1.SchemeGroupVersion.WithResource("resourceslices"), Kind: "ResourceSlice",
		NameRule: apivalidation.NameIsDNSSubdomain, Printer: resourceSlicePrinter,
		Validate: validator(func(s *resourcev1.ResourceSlice) field.ErrorList {
			var allErrs field.ErrorList
			spec := field.NewPath("spec")
			if s.Spec.Driver == "" {
				allErrs = append(allErrs, field.Required(spec.Child("driver"), ""))
			}
			if s.Spec.Pool.Name == "" {
				allErrs = append(allErrs, field.Required(spec.Child("pool", "name"), ""))
			}
			if s.Spec.Pool.ResourceSliceCount < 1 {
				allErrs = append(allErrs, field.Invalid(spec.Child("pool", "resourceSliceCount"), s.Spec.Pool.ResourceSliceCount, "must be greater than zero"))
			}
			where := 0
			for _, set := range []bool{ptr.Deref(s.Spec.NodeName, "") != "", s.Spec.NodeSelector != nil, ptr.Deref(s.Spec.AllNodes, false), ptr.Deref(s.Spec.PerDeviceNodeSelection, false)} {
				if set {
					where++
				}
			}
			if where != 1 {
				allErrs = append(allErrs, field.Invalid(spec, "", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"))
			}
			return allErrs
		}),
		FieldLabels: func(obj runtime.Object) fields.Set {
			s := obj.(*resourcev1.ResourceSlice)
			return fields.Set{"spec.nodeName": ptr.Deref(s.Spec.NodeName, ""), "spec.driver": s.Spec.Driver}
		},
	}
}

// resourceSlicePrinter shows kubectl's columns: where the devices are and
// whose they are.
var resourceSlicePrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Node", "string", resourcev1.ResourceSliceSpec{}.SwaggerDoc()["nodeName"]),
		printers.Column("Driver", "string", resourcev1.ResourceSliceSpec{}.SwaggerDoc()["driver"]),
		printers.Column("Pool", "string", resourcev1.ResourcePool{}.SwaggerDoc()["name"]),
		printers.AgeColumn(),
	},
	func(s *resourcev1.ResourceSlice, now time.Time) []interface{} {
		return []interface{}{s.Name, ptr.Deref(s.Spec.NodeName, ""), s.Spec.Driver, s.Spec.Pool.Name, printers.Age(s.CreationTimestamp, now)}
	},
)
