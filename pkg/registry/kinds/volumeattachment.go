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
)

// Bounds of a VolumeAttachment's status, as Kubernetes has them.
const (
	maxAttachmentMetadataSize = 256 * 1024
	maxVolumeErrorMessageSize = 1024
)

// VolumeAttachments: a request to attach a volume to a node
// (storage.k8s.io/v1, cluster-scoped). The spec never changes; the
// attacher writes /status.
func volumeAttachments() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: storagev1.SchemeGroupVersion.WithResource("volumeattachments"), Kind: "VolumeAttachment",
		Status:   true,
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validateVolumeAttachment),
		ValidateUpdate: updateValidator(func(va, old *storagev1.VolumeAttachment) field.ErrorList {
			if !apiequality.Semantic.DeepEqual(va.Spec, old.Spec) {
				return field.ErrorList{field.Invalid(field.NewPath("spec"), va.Spec, "field is immutable")}
			}
			return nil
		}),
		Printer: volumeAttachmentPrinter,
	}
}

func validateVolumeAttachment(va *storagev1.VolumeAttachment) field.ErrorList {
	spec := field.NewPath("spec")
	allErrs := csiDriverName(va.Spec.Attacher, spec.Child("attacher"))
	src := spec.Child("source")
	switch s := va.Spec.Source; {
	case s.InlineVolumeSpec == nil && s.PersistentVolumeName == nil:
		allErrs = append(allErrs, field.Required(src, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case s.InlineVolumeSpec != nil && s.PersistentVolumeName != nil:
		allErrs = append(allErrs, field.Forbidden(src, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case s.PersistentVolumeName != nil:
		if *s.PersistentVolumeName == "" {
			allErrs = append(allErrs, field.Required(src.Child("persistentVolumeName"), "must specify non empty persistentVolumeName"))
		}
		for _, msg := range apivalidation.NameIsDNSSubdomain(*s.PersistentVolumeName, false) {
			allErrs = append(allErrs, field.Invalid(src.Child("persistentVolumeName"), *s.PersistentVolumeName, msg))
		}
	}
	if va.Spec.NodeName == "" {
		allErrs = append(allErrs, field.Required(spec.Child("nodeName"), ""))
	} else {
		for _, msg := range apivalidation.NameIsDNSSubdomain(va.Spec.NodeName, false) {
			allErrs = append(allErrs, field.Invalid(spec.Child("nodeName"), va.Spec.NodeName, msg))
		}
	}
	status := field.NewPath("status")
	size := 0
	for k, v := range va.Status.AttachmentMetadata {
		size += len(k) + len(v)
	}
	if size > maxAttachmentMetadataSize {
		allErrs = append(allErrs, field.TooLong(status.Child("attachmentMetadata"), "", maxAttachmentMetadataSize))
	}
	for name, e := range map[string]*storagev1.VolumeError{"attachError": va.Status.AttachError, "detachError": va.Status.DetachError} {
		if e == nil {
			continue
		}
		if len(e.Message) > maxVolumeErrorMessageSize {
			allErrs = append(allErrs, field.TooLong(status.Child(name, "message"), "", maxVolumeErrorMessageSize))
		}
		if e.ErrorCode != nil && *e.ErrorCode < 0 {
			allErrs = append(allErrs, field.Invalid(status.Child(name, "errorCode"), *e.ErrorCode, "must be between 0 and 2147483647, inclusive"))
		}
	}
	return allErrs
}

var volumeAttachmentPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Attacher", "string", storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["attacher"]),
		printers.Column("PV", "string", storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]),
		printers.Column("Node", "string", storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["nodeName"]),
		printers.Column("Attached", "boolean", storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]),
		printers.AgeColumn(),
	},
	func(va *storagev1.VolumeAttachment, now time.Time) []interface{} {
		pv := ""
		if va.Spec.Source.PersistentVolumeName != nil {
			pv = *va.Spec.Source.PersistentVolumeName
		}
		return []interface{}{va.Name, va.Spec.Attacher, pv, va.Spec.NodeName, va.Status.Attached, printers.Age(va.CreationTimestamp, now)}
	},
)
