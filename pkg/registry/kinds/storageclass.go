package kinds

import (
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	storageutil "k8s.io/kubectl/pkg/util/storage"

	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// StorageClasses: their provisioner and parameters never change.
func storageClasses() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: storagev1.SchemeGroupVersion.WithResource("storageclasses"), Kind: "StorageClass",
		ShortNames: []string{"sc"}, NoGeneration: true,
		Default:        defaulter(defaultStorageClass),
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validateStorageClass),
		ValidateUpdate: updateValidator(validateStorageClassUpdate),
		Printer:        storageClassPrinter,
	}
}

// Defaults.

func defaultStorageClass(sc *storagev1.StorageClass) {
	if sc.ReclaimPolicy == nil {
		sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimDelete)
	}
	if sc.VolumeBindingMode == nil {
		sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingImmediate)
	}
}

// Validation.

var (
	supportedSCReclaim    = []corev1.PersistentVolumeReclaimPolicy{corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRetain}
	supportedBindingModes = []storagev1.VolumeBindingMode{storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer}
)

func validateStorageClass(sc *storagev1.StorageClass) field.ErrorList {
	allErrs := field.ErrorList{}
	provPath := field.NewPath("provisioner")
	if sc.Provisioner == "" {
		allErrs = append(allErrs, field.Required(provPath, ""))
	} else {
		allErrs = append(allErrs, validation.QualifiedName(sc.Provisioner, provPath)...)
	}
	if _, ok := sc.Parameters[""]; ok {
		allErrs = append(allErrs, field.Invalid(field.NewPath("parameters"), "", "parameter key must not be empty"))
	}
	if sc.ReclaimPolicy != nil {
		allErrs = append(allErrs, validation.Enum(*sc.ReclaimPolicy, supportedSCReclaim, field.NewPath("reclaimPolicy"))...)
	}
	if sc.VolumeBindingMode != nil {
		allErrs = append(allErrs, validation.Enum(*sc.VolumeBindingMode, supportedBindingModes, field.NewPath("volumeBindingMode"))...)
	}
	return allErrs
}

func validateStorageClassUpdate(sc, old *storagev1.StorageClass) field.ErrorList {
	allErrs := field.ErrorList{}
	if !reflect.DeepEqual(sc.Parameters, old.Parameters) && (len(sc.Parameters) != 0 || len(old.Parameters) != 0) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
	}
	if sc.Provisioner != old.Provisioner {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("provisioner"), "updates to provisioner are forbidden."))
	}
	if !reflect.DeepEqual(sc.ReclaimPolicy, old.ReclaimPolicy) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("reclaimPolicy"), "updates to reclaimPolicy are forbidden."))
	}
	allErrs = append(allErrs, validation.Immutable(sc.VolumeBindingMode, old.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
	return allErrs
}

// The table.

var storageClassPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Provisioner", "string", storagev1.StorageClass{}.SwaggerDoc()["provisioner"]),
		printers.Column("ReclaimPolicy", "string", storagev1.StorageClass{}.SwaggerDoc()["reclaimPolicy"]),
		printers.Column("VolumeBindingMode", "string", storagev1.StorageClass{}.SwaggerDoc()["volumeBindingMode"]),
		printers.Column("AllowVolumeExpansion", "string", storagev1.StorageClass{}.SwaggerDoc()["allowVolumeExpansion"]),
		printers.AgeColumn(),
	},
	storageClassCells,
)

func storageClassCells(sc *storagev1.StorageClass, now time.Time) []interface{} {
	name := sc.Name
	if storageutil.IsDefaultAnnotationText(sc.ObjectMeta) == "Yes" {
		name += " (default)"
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if sc.ReclaimPolicy != nil {
		reclaim = *sc.ReclaimPolicy
	}
	binding := storagev1.VolumeBindingImmediate
	if sc.VolumeBindingMode != nil {
		binding = *sc.VolumeBindingMode
	}
	expansion := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
	return []interface{}{name, sc.Provisioner, string(reclaim), string(binding), expansion, printers.Age(sc.CreationTimestamp, now)}
}
