package kinds

import (
	"path"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	storageutil "k8s.io/kubectl/pkg/util/storage"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// PersistentVolumes: cluster-scoped storage; the source never changes.
func persistentVolumes() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("persistentvolumes"), Kind: "PersistentVolume",
		ShortNames: []string{"pv"}, Status: true, NoGeneration: true,
		Default:        defaulter(defaultPersistentVolume),
		NameRule:       validation.PathSegmentName,
		Validate:       validator(validatePersistentVolume),
		ValidateUpdate: updateValidator(validatePersistentVolumeUpdate),
		Printer:        persistentVolumePrinter,
		// Kubernetes' StorageObjectInUseProtection admission: deleting a
		// volume waits until it is no longer Bound
		// (pkg/controller/volume/protection).
		PrepareForCreate: func(obj runtime.Object) { addFinalizer(obj, pvProtectionFinalizer) },
	}
}

// The storage object in use protection finalizers.
const (
	pvProtectionFinalizer  = "kubernetes.io/pv-protection"
	pvcProtectionFinalizer = "kubernetes.io/pvc-protection"
)

// addFinalizer adds f to obj's finalizers unless it is there.
func addFinalizer(obj runtime.Object, f string) {
	m, err := meta.Accessor(obj)
	if err != nil || slices.Contains(m.GetFinalizers(), f) {
		return
	}
	m.SetFinalizers(append(m.GetFinalizers(), f))
}

// Defaults.

func defaultPersistentVolume(pv *corev1.PersistentVolume) {
	if pv.Status.Phase == "" {
		pv.Status.Phase = corev1.VolumePending
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	if pv.Spec.HostPath != nil {
		defaults.HostPath(pv.Spec.HostPath)
	}
	defaults.ResourceList(pv.Spec.Capacity)
}

// Validation.

var supportedPVReclaim = []corev1.PersistentVolumeReclaimPolicy{corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain}

func validatePersistentVolume(pv *corev1.PersistentVolume) field.ErrorList {
	spec := &pv.Spec
	specPath := field.NewPath("spec")
	allErrs := validation.AccessModes(spec.AccessModes, specPath.Child("accessModes"))

	capPath := specPath.Child("capacity")
	if len(spec.Capacity) == 0 {
		allErrs = append(allErrs, field.Required(capPath, ""))
	}
	for _, name := range validation.SortedKeys(spec.Capacity) {
		if name != corev1.ResourceStorage {
			allErrs = append(allErrs, field.NotSupported(capPath, name, validation.StorageOnly))
		}
	}
	allErrs = append(allErrs, validation.ResourceList(spec.Capacity, capPath)...)
	allErrs = append(allErrs, validation.OptionalEnum(spec.PersistentVolumeReclaimPolicy, supportedPVReclaim, specPath.Child("persistentVolumeReclaimPolicy"))...)
	if spec.VolumeMode != nil {
		allErrs = append(allErrs, validation.Enum(*spec.VolumeMode, validation.SupportedVolumeModes, specPath.Child("volumeMode"))...)
	}
	allErrs = append(allErrs, validation.StorageClassName(&spec.StorageClassName, specPath.Child("storageClassName"))...)

	switch n := validation.CountSetPointers(&spec.PersistentVolumeSource); {
	case n == 0:
		allErrs = append(allErrs, field.Required(specPath, "must specify a volume type"))
	case n > 1:
		allErrs = append(allErrs, field.Forbidden(specPath, "may not specify more than 1 volume type"))
	}
	if s := spec.HostPath; s != nil {
		allErrs = append(allErrs, validation.HostPath(s, specPath.Child("hostPath"))...)
	}
	if s := spec.NFS; s != nil {
		allErrs = append(allErrs, validation.NFS(s, specPath.Child("nfs"))...)
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

func validatePersistentVolumeUpdate(pv, old *corev1.PersistentVolume) field.ErrorList {
	allErrs := field.ErrorList{}
	specPath := field.NewPath("spec")
	if !equality.Semantic.DeepEqual(pv.Spec.PersistentVolumeSource, old.Spec.PersistentVolumeSource) {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("persistentvolumesource"),
			"spec.persistentvolumesource is immutable after creation\n"+diff.Diff(old.Spec.PersistentVolumeSource, pv.Spec.PersistentVolumeSource)))
	}
	allErrs = append(allErrs, validation.Immutable(pv.Spec.VolumeMode, old.Spec.VolumeMode, specPath.Child("volumeMode"))...)
	if old.Spec.NodeAffinity != nil {
		allErrs = append(allErrs, validation.Immutable(pv.Spec.NodeAffinity, old.Spec.NodeAffinity, specPath.Child("nodeAffinity"))...)
	}
	return allErrs
}

// The table.

var persistentVolumePrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Capacity", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["capacity"]),
		printers.Column("Access Modes", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["accessModes"]),
		printers.Column("Reclaim Policy", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["persistentVolumeReclaimPolicy"]),
		printers.Column("Status", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["phase"]),
		printers.Column("Claim", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["claimRef"]),
		printers.Column("StorageClass", "string", "StorageClass of the pv"),
		printers.Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
		printers.Column("Reason", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["reason"]),
		printers.AgeColumn(),
		printers.Wide(printers.Column("VolumeMode", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["volumeMode"])),
	},
	persistentVolumeCells,
)

func persistentVolumeCells(pv *corev1.PersistentVolume, now time.Time) []interface{} {
	claim := ""
	if ref := pv.Spec.ClaimRef; ref != nil {
		claim = ref.Namespace + "/" + ref.Name
	}
	phase := string(pv.Status.Phase)
	if pv.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	capacity := pv.Spec.Capacity[corev1.ResourceStorage]
	return []interface{}{
		pv.Name,
		capacity.String(),
		storageutil.GetAccessModesAsString(pv.Spec.AccessModes),
		string(pv.Spec.PersistentVolumeReclaimPolicy),
		phase,
		claim,
		storageutil.GetPersistentVolumeClass(pv),
		printers.StringPtrCell(pv.Spec.VolumeAttributesClassName),
		pv.Status.Reason,
		printers.Age(pv.CreationTimestamp, now),
		printers.VolumeModeCell(pv.Spec.VolumeMode),
	}
}
