package kinds

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	storageutil "k8s.io/kubectl/pkg/util/storage"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
	"github.com/minik8s/minik8s/pkg/storage"
)

// PersistentVolumeClaims: a claim's spec is fixed but for storage growth and its first binding.
func persistentVolumeClaims() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), Kind: "PersistentVolumeClaim",
		Namespaced: true, ShortNames: []string{"pvc"}, Status: true, NoGeneration: true,
		Default:        defaulter(defaults.PersistentVolumeClaim),
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validatePersistentVolumeClaim),
		ValidateUpdate: updateValidator(validatePersistentVolumeClaimUpdate),
		Printer:        persistentVolumeClaimPrinter,
		// Kubernetes' StorageObjectInUseProtection admission: deleting a
		// claim waits until no pod uses it (pkg/controller/volume/protection).
		PrepareForCreate: func(obj runtime.Object) { addFinalizer(obj, pvcProtectionFinalizer) },
		NewWriteHook:     newDefaultClassAdmission,
	}
}

// Admission.

// The annotations that make a StorageClass the default.
const (
	isDefaultClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	betaIsDefaultClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

// defaultClassAdmission is Kubernetes' DefaultStorageClass admission: a
// claim created without spec.storageClassName gets the default class (the
// newest of them when several are marked). An explicit "" asks for no
// class and is kept. It runs as the claims' write hook because that is
// the step of a create that may read other objects; a dry-run create,
// which skips the hooks, shows the claim without the class.
type defaultClassAdmission struct{ store storage.Store }

func newDefaultClassAdmission(cfg registry.HookConfig) (registry.WriteHook, error) {
	return &defaultClassAdmission{store: cfg.Store}, nil
}

func (d *defaultClassAdmission) Before(ctx context.Context, obj, old runtime.Object) (func(), error) {
	undo := func() {}
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok || old != nil || pvc.Spec.StorageClassName != nil {
		return undo, nil
	}
	name, err := d.defaultClass(ctx)
	if err != nil {
		return undo, apierrors.NewInternalError(fmt.Errorf("find the default storage class: %w", err))
	}
	if name != "" {
		pvc.Spec.StorageClassName = &name
	}
	return undo, nil
}

func (d *defaultClassAdmission) After(context.Context, runtime.Object, runtime.Object) {}

// defaultClass is the name of the newest StorageClass marked default (by
// name among equals), or "".
func (d *defaultClassAdmission) defaultClass(ctx context.Context) (string, error) {
	list, err := d.store.List(ctx, "/registry/storageclasses/", storage.ListOptions{})
	if err != nil {
		return "", err
	}
	var best *storagev1.StorageClass
	for _, kv := range list.KVs {
		var sc storagev1.StorageClass
		if err := json.Unmarshal(kv.Value, &sc); err != nil {
			return "", fmt.Errorf("decode %s: %w", kv.Key, err)
		}
		if sc.Annotations[isDefaultClassAnnotation] != "true" && sc.Annotations[betaIsDefaultClassAnnotation] != "true" {
			continue
		}
		if best == nil || sc.CreationTimestamp.After(best.CreationTimestamp.Time) ||
			(sc.CreationTimestamp.Equal(&best.CreationTimestamp) && sc.Name < best.Name) {
			best = &sc
		}
	}
	if best == nil {
		return "", nil
	}
	return best.Name, nil
}

// Validation.

const pvcSpecImmutableErrorMsg = "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"

func validatePersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) field.ErrorList {
	return validatePersistentVolumeClaimSpec(&pvc.Spec, field.NewPath("spec"))
}

func validatePersistentVolumeClaimSpec(spec *corev1.PersistentVolumeClaimSpec, specPath *field.Path) field.ErrorList {
	allErrs := validation.AccessModes(spec.AccessModes, specPath.Child("accessModes"))
	allErrs = append(allErrs, validation.LabelSelector(spec.Selector, specPath.Child("selector"))...)
	resPath := specPath.Child("resources")
	storagePath := resPath.Key(string(corev1.ResourceStorage))
	if q, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		allErrs = append(allErrs, field.Required(storagePath, ""))
	} else if !validation.PositiveQuantity(q) {
		allErrs = append(allErrs, field.Invalid(storagePath, q.String(), validation.IsNotPositiveErrorMsg))
	}
	allErrs = append(allErrs, validation.ResourceList(spec.Resources.Requests, resPath.Child("requests"))...)
	allErrs = append(allErrs, validation.ResourceList(spec.Resources.Limits, resPath.Child("limits"))...)
	if spec.VolumeMode != nil {
		allErrs = append(allErrs, validation.Enum(*spec.VolumeMode, validation.SupportedVolumeModes, specPath.Child("volumeMode"))...)
	}
	allErrs = append(allErrs, validation.StorageClassName(spec.StorageClassName, specPath.Child("storageClassName"))...)
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

// validatePersistentVolumeClaimUpdate: the spec is fixed except that a
// claim may be bound once (volumeName), get a storage class when it had
// none, change its volumeAttributesClassName, and, once bound, change its
// storage request (not below the provisioned capacity).
func validatePersistentVolumeClaimUpdate(pvc, old *corev1.PersistentVolumeClaim) field.ErrorList {
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

// The table.

var persistentVolumeClaimPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Status", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"]),
		printers.Column("Volume", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"]),
		printers.Column("Capacity", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"]),
		printers.Column("Access Modes", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"]),
		printers.Column("StorageClass", "string", "StorageClass of the pvc"),
		printers.Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
		printers.AgeColumn(),
		printers.Wide(printers.Column("VolumeMode", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"])),
	},
	persistentVolumeClaimCells,
)

func persistentVolumeClaimCells(pvc *corev1.PersistentVolumeClaim, now time.Time) []interface{} {
	phase := string(pvc.Status.Phase)
	if pvc.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	// Capacity and access modes are only meaningful once the claim is bound.
	capacity, accessModes := "", ""
	if pvc.Spec.VolumeName != "" {
		q := pvc.Status.Capacity[corev1.ResourceStorage]
		capacity = q.String()
		accessModes = storageutil.GetAccessModesAsString(pvc.Status.AccessModes)
	}
	return []interface{}{
		pvc.Name,
		phase,
		pvc.Spec.VolumeName,
		capacity,
		accessModes,
		storageutil.GetPersistentVolumeClaimClass(pvc),
		printers.StringPtrCell(pvc.Spec.VolumeAttributesClassName),
		printers.Age(pvc.CreationTimestamp, now),
		printers.VolumeModeCell(pvc.Spec.VolumeMode),
	}
}
