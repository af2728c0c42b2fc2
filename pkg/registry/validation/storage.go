package validation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	supportedAccessModes = []corev1.PersistentVolumeAccessMode{
		corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod,
	}
	SupportedVolumeModes = []corev1.PersistentVolumeMode{corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem}
	StorageOnly          = []corev1.ResourceName{corev1.ResourceStorage}
)

func AccessModes(modes []corev1.PersistentVolumeAccessMode, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if len(modes) == 0 {
		return append(allErrs, field.Required(fldPath, ""))
	}
	valid := sets.New(supportedAccessModes...)
	for _, m := range modes {
		if !valid.Has(m) {
			allErrs = append(allErrs, field.NotSupported(fldPath, m, supportedAccessModes))
		}
	}
	if len(modes) > 1 && sets.New(modes...).Has(corev1.ReadWriteOncePod) {
		allErrs = append(allErrs, field.Forbidden(fldPath, "may not use ReadWriteOncePod with other access modes"))
	}
	return allErrs
}

func StorageClassName(name *string, fldPath *field.Path) field.ErrorList {
	if name == nil || *name == "" {
		return nil
	}
	return DNS1123Subdomain(*name, fldPath)
}
