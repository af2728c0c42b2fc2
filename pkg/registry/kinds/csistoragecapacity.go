package kinds

import (
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// CSIStorageCapacities: the capacity a CSI driver reports for a storage
// class in a topology segment (storage.k8s.io/v1, namespaced). The
// segment and the class never change.
func csiStorageCapacities() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: storagev1.SchemeGroupVersion.WithResource("csistoragecapacities"), Kind: "CSIStorageCapacity",
		Namespaced: true, NoGeneration: true,
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validateCSIStorageCapacity),
		ValidateUpdate: updateValidator(func(c, old *storagev1.CSIStorageCapacity) field.ErrorList {
			var allErrs field.ErrorList
			if !apiequality.Semantic.DeepEqual(c.NodeTopology, old.NodeTopology) {
				allErrs = append(allErrs, field.Invalid(field.NewPath("nodeTopology"), c.NodeTopology, "field is immutable"))
			}
			if c.StorageClassName != old.StorageClassName {
				allErrs = append(allErrs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, "field is immutable"))
			}
			return allErrs
		}),
		Printer: csiStorageCapacityPrinter,
	}
}

func validateCSIStorageCapacity(c *storagev1.CSIStorageCapacity) field.ErrorList {
	allErrs := validation.LabelSelector(c.NodeTopology, field.NewPath("nodeTopology"))
	for _, msg := range apivalidation.NameIsDNSSubdomain(c.StorageClassName, false) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, msg))
	}
	if q := c.Capacity; q != nil && q.Sign() < 0 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("capacity"), q.String(), "must be greater than or equal to 0"))
	}
	return allErrs
}

var csiStorageCapacityPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("StorageClassName", "string", storagev1.CSIStorageCapacity{}.SwaggerDoc()["storageClassName"]),
		printers.Column("Capacity", "string", storagev1.CSIStorageCapacity{}.SwaggerDoc()["capacity"]),
	},
	func(c *storagev1.CSIStorageCapacity, _ time.Time) []interface{} {
		capacity := "<unset>"
		if c.Capacity != nil {
			capacity = c.Capacity.String()
		}
		return []interface{}{c.Name, c.StorageClassName, capacity}
	},
)
