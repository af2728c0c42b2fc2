package validation

import (
	"path"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	supportedAccessModes = []corev1.PersistentVolumeAccessMode{
		corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod,
	}
	supportedVolumeModes     = []corev1.PersistentVolumeMode{corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem}
	supportedPVReclaim       = []corev1.PersistentVolumeReclaimPolicy{corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain}
	storageOnly              = []corev1.ResourceName{corev1.ResourceStorage}
	pvcSpecImmutableErrorMsg = "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"
)

func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, fldPath *field.Path) field.ErrorList {
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

func validateStorageClassName(name *string, fldPath *field.Path) field.ErrorList {
	if name == nil || *name == "" {
		return nil
	}
	return DNS1123Subdomain(*name, fldPath)
}

func PersistentVolume(pv *corev1.PersistentVolume) field.ErrorList {
	spec := &pv.Spec
	specPath := field.NewPath("spec")
	allErrs := validateAccessModes(spec.AccessModes, specPath.Child("accessModes"))

	capPath := specPath.Child("capacity")
	if len(spec.Capacity) == 0 {
		allErrs = append(allErrs, field.Required(capPath, ""))
	}
	for _, name := range SortedKeys(spec.Capacity) {
		if name != corev1.ResourceStorage {
			allErrs = append(allErrs, field.NotSupported(capPath, name, storageOnly))
		}
	}
	allErrs = append(allErrs, ResourceList(spec.Capacity, capPath)...)
	allErrs = append(allErrs, validateOptionalEnum(spec.PersistentVolumeReclaimPolicy, supportedPVReclaim, specPath.Child("persistentVolumeReclaimPolicy"))...)
	if spec.VolumeMode != nil {
		allErrs = append(allErrs, Enum(*spec.VolumeMode, supportedVolumeModes, specPath.Child("volumeMode"))...)
	}
	allErrs = append(allErrs, validateStorageClassName(&spec.StorageClassName, specPath.Child("storageClassName"))...)

	switch n := CountSetPointers(&spec.PersistentVolumeSource); {
	case n == 0:
		allErrs = append(allErrs, field.Required(specPath, "must specify a volume type"))
	case n > 1:
		allErrs = append(allErrs, field.Forbidden(specPath, "may not specify more than 1 volume type"))
	}
	if s := spec.HostPath; s != nil {
		allErrs = append(allErrs, validateHostPath(s, specPath.Child("hostPath"))...)
	}
	if s := spec.NFS; s != nil {
		allErrs = append(allErrs, validateNFS(s, specPath.Child("nfs"))...)
	}
	if s := spec.Local; s != nil {
		lp := specPath.Child("local", "path")
		if s.Path == "" {
			allErrs = append(allErrs, field.Required(lp, ""))
		} else if !path.IsAbs(s.Path) {
			allErrs = append(allErrs, field.Invalid(lp, s.Path, "must be an absolute path"))
		}
		if spec.NodeAffinity == nil {
			allErrs = append(allErrs, field.Required(specPath.Child("nodeAffinity"), "Local volume requires node affinity"))
		}
	}
	if s := spec.CSI; s != nil {
		if s.Driver == "" {
			allErrs = append(allErrs, field.Required(specPath.Child("csi", "driver"), ""))
		}
		if s.VolumeHandle == "" {
			allErrs = append(allErrs, field.Required(specPath.Child("csi", "volumeHandle"), ""))
		}
	}
	if ref := spec.ClaimRef; ref != nil && ref.Name == "" {
		allErrs = append(allErrs, field.Required(specPath.Child("claimRef", "name"), ""))
	}
	return allErrs
}

func PersistentVolumeUpdate(pv, old *corev1.PersistentVolume) field.ErrorList {
	allErrs := field.ErrorList{}
	specPath := field.NewPath("spec")
	if !equality.Semantic.DeepEqual(pv.Spec.PersistentVolumeSource, old.Spec.PersistentVolumeSource) {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("persistentvolumesource"),
			"spec.persistentvolumesource is immutable after creation\n"+diff.Diff(old.Spec.PersistentVolumeSource, pv.Spec.PersistentVolumeSource)))
	}
	allErrs = append(allErrs, Immutable(pv.Spec.VolumeMode, old.Spec.VolumeMode, specPath.Child("volumeMode"))...)
	if old.Spec.NodeAffinity != nil {
		allErrs = append(allErrs, Immutable(pv.Spec.NodeAffinity, old.Spec.NodeAffinity, specPath.Child("nodeAffinity"))...)
	}
	return allErrs
}

func PersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) field.ErrorList {
	return validatePersistentVolumeClaimSpec(&pvc.Spec, field.NewPath("spec"))
}

func validatePersistentVolumeClaimSpec(spec *corev1.PersistentVolumeClaimSpec, specPath *field.Path) field.ErrorList {
	allErrs := validateAccessModes(spec.AccessModes, specPath.Child("accessModes"))
	allErrs = append(allErrs, validateLabelSelector(spec.Selector, specPath.Child("selector"))...)
	resPath := specPath.Child("resources")
	storagePath := resPath.Key(string(corev1.ResourceStorage))
	if q, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		allErrs = append(allErrs, field.Required(storagePath, ""))
	} else if !positiveQuantity(q) {
		allErrs = append(allErrs, field.Invalid(storagePath, q.String(), isNotPositiveErrorMsg))
	}
	allErrs = append(allErrs, ResourceList(spec.Resources.Requests, resPath.Child("requests"))...)
	allErrs = append(allErrs, ResourceList(spec.Resources.Limits, resPath.Child("limits"))...)
	if spec.VolumeMode != nil {
		allErrs = append(allErrs, Enum(*spec.VolumeMode, supportedVolumeModes, specPath.Child("volumeMode"))...)
	}
	allErrs = append(allErrs, validateStorageClassName(spec.StorageClassName, specPath.Child("storageClassName"))...)
	if ds := spec.DataSource; ds != nil {
		if ds.Name == "" {
			allErrs = append(allErrs, field.Required(specPath.Child("dataSource", "name"), ""))
		}
		if ds.Kind == "" {
			allErrs = append(allErrs, field.Required(specPath.Child("dataSource", "kind"), ""))
		}
	}
	return allErrs
}

// PersistentVolumeClaimUpdate: the spec is fixed except that a
// claim may be bound once (volumeName), get a storage class when it had
// none, change its volumeAttributesClassName, and, once bound, change its
// storage request (not below the provisioned capacity).
func PersistentVolumeClaimUpdate(pvc, old *corev1.PersistentVolumeClaim) field.ErrorList {
	allErrs := field.ErrorList{}
	specPath := field.NewPath("spec")
	oldSpec, newSpec := old.Spec.DeepCopy(), pvc.Spec.DeepCopy()
	if oldSpec.VolumeName == "" {
		oldSpec.VolumeName = newSpec.VolumeName
	}
	if oldSpec.StorageClassName == nil {
		oldSpec.StorageClassName = newSpec.StorageClassName
	}
	oldSpec.VolumeAttributesClassName = newSpec.VolumeAttributesClassName
	bound := old.Status.Phase == corev1.ClaimBound
	newStorage, hasNew := newSpec.Resources.Requests[corev1.ResourceStorage]
	if bound && hasNew && oldSpec.Resources.Requests != nil {
		oldSpec.Resources.Requests[corev1.ResourceStorage] = newStorage
	}
	if !equality.Semantic.DeepEqual(oldSpec, newSpec) {
		allErrs = append(allErrs, field.Forbidden(specPath, pvcSpecImmutableErrorMsg+"\n"+diff.Diff(oldSpec, newSpec)))
	}
	if bound && hasNew {
		storagePath := specPath.Child("resources", "requests", "storage")
		if capacity, ok := old.Status.Capacity[corev1.ResourceStorage]; ok {
			if newStorage.Cmp(capacity) < 0 {
				allErrs = append(allErrs, field.Forbidden(storagePath, "field can not be less than status.capacity"))
			}
		} else if oldStorage, ok := old.Spec.Resources.Requests[corev1.ResourceStorage]; ok && newStorage.Cmp(oldStorage) < 0 {
			allErrs = append(allErrs, field.Forbidden(storagePath, "field can not be less than previous value"))
		}
	}
	return allErrs
}
