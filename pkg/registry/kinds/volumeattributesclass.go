package kinds

import (
	"reflect"
	"strings"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Bounds of a class's parameters, as Kubernetes has them for StorageClasses
// and VolumeAttributesClasses.
const (
	maxClassParameters    = 512
	maxClassParameterSize = 256 * 1024
)

// VolumeAttributesClasses: mutable volume attributes a CSI driver applies
// (storage.k8s.io/v1). driverName and parameters never change.
func volumeAttributesClasses() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: storagev1.SchemeGroupVersion.WithResource("volumeattributesclasses"), Kind: "VolumeAttributesClass",
		ShortNames: []string{"vac"}, NoGeneration: true,
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validateVolumeAttributesClass),
		ValidateUpdate: updateValidator(func(c, old *storagev1.VolumeAttributesClass) field.ErrorList {
			var allErrs field.ErrorList
			if c.DriverName != old.DriverName {
				allErrs = append(allErrs, field.Forbidden(field.NewPath("driverName"), "updates to driverName are forbidden."))
			}
			if !reflect.DeepEqual(c.Parameters, old.Parameters) {
				allErrs = append(allErrs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
			}
			return allErrs
		}),
		Printer: volumeAttributesClassPrinter,
	}
}

func validateVolumeAttributesClass(c *storagev1.VolumeAttributesClass) field.ErrorList {
	var allErrs field.ErrorList
	driver := field.NewPath("driverName")
	if c.DriverName == "" {
		allErrs = append(allErrs, field.Required(driver, ""))
	} else {
		allErrs = append(allErrs, validation.QualifiedName(strings.ToLower(c.DriverName), driver)...)
	}
	params := field.NewPath("parameters")
	if len(c.Parameters) > maxClassParameters {
		return append(allErrs, field.TooLong(params, "", maxClassParameters))
	}
	size := 0
	for k, v := range c.Parameters {
		if k == "" {
			allErrs = append(allErrs, field.Invalid(params, k, "field can not be empty."))
		}
		size += len(k) + len(v)
	}
	if size > maxClassParameterSize {
		allErrs = append(allErrs, field.TooLong(params, "", maxClassParameterSize))
	}
	if len(c.Parameters) == 0 {
		allErrs = append(allErrs, field.Required(params, "must contain at least one key/value pair"))
	}
	return allErrs
}

var volumeAttributesClassPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("DriverName", "string", storagev1.VolumeAttributesClass{}.SwaggerDoc()["driverName"]),
		printers.AgeColumn(),
	},
	func(c *storagev1.VolumeAttributesClass, now time.Time) []interface{} {
		return []interface{}{c.Name, c.DriverName, printers.Age(c.CreationTimestamp, now)}
	},
)
