package kinds

import (
	"strings"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// CSIDrivers: how Kubernetes talks to a CSI volume driver
// (storage.k8s.io/v1). attachRequired and volumeLifecycleModes never change.
func csiDrivers() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: storagev1.SchemeGroupVersion.WithResource("csidrivers"), Kind: "CSIDriver",
		NameRule: apivalidation.NameIsDNSSubdomain,
		Default:  defaulter(defaultCSIDriver),
		Validate: validator(validateCSIDriver),
		ValidateUpdate: updateValidator(func(d, old *storagev1.CSIDriver) field.ErrorList {
			spec := field.NewPath("spec")
			// Kubernetes reports the first under "attachedRequired".
			allErrs := validation.Immutable(d.Spec.AttachRequired, old.Spec.AttachRequired, spec.Child("attachedRequired"))
			return append(allErrs, validation.Immutable(d.Spec.VolumeLifecycleModes, old.Spec.VolumeLifecycleModes, spec.Child("volumeLifecycleModes"))...)
		}),
		Printer: csiDriverPrinter,
	}
}

func defaultCSIDriver(d *storagev1.CSIDriver) {
	s := &d.Spec
	if s.AttachRequired == nil {
		s.AttachRequired = ptr.To(true)
	}
	if s.PodInfoOnMount == nil {
		s.PodInfoOnMount = ptr.To(false)
	}
	if s.StorageCapacity == nil {
		s.StorageCapacity = ptr.To(false)
	}
	if s.FSGroupPolicy == nil {
		s.FSGroupPolicy = ptr.To(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)
	}
	if len(s.VolumeLifecycleModes) == 0 {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
	if s.RequiresRepublish == nil {
		s.RequiresRepublish = ptr.To(false)
	}
	if s.SELinuxMount == nil {
		s.SELinuxMount = ptr.To(false)
	}
}

var (
	supportedFSGroupPolicies = []storagev1.FSGroupPolicy{storagev1.FileFSGroupPolicy, storagev1.NoneFSGroupPolicy, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy}
	supportedLifecycleModes  = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}
)

func validateCSIDriver(d *storagev1.CSIDriver) field.ErrorList {
	var allErrs field.ErrorList
	spec := field.NewPath("spec")
	for _, f := range []struct {
		v    *bool
		name string
	}{{d.Spec.AttachRequired, "attachedRequired"}, {d.Spec.PodInfoOnMount, "podInfoOnMount"}, {d.Spec.StorageCapacity, "storageCapacity"}, {d.Spec.SELinuxMount, "seLinuxMount"}} {
		if f.v == nil {
			allErrs = append(allErrs, field.Required(spec.Child(f.name), ""))
		}
	}
	if p := d.Spec.FSGroupPolicy; p != nil {
		allErrs = append(allErrs, validation.Enum(*p, supportedFSGroupPolicies, spec.Child("fsGroupPolicy"))...)
	}
	for _, m := range d.Spec.VolumeLifecycleModes {
		allErrs = append(allErrs, validation.Enum(m, supportedLifecycleModes, spec.Child("volumeLifecycleModes"))...)
	}
	audiences := map[string]bool{}
	for i, tr := range d.Spec.TokenRequests {
		p := spec.Child("tokenRequests").Index(i)
		if audiences[tr.Audience] {
			allErrs = append(allErrs, field.Duplicate(p.Child("audience"), tr.Audience))
			continue
		}
		audiences[tr.Audience] = true
		if s := tr.ExpirationSeconds; s != nil {
			if *s < 600 {
				allErrs = append(allErrs, field.Invalid(p.Child("expirationSeconds"), *s, "may not specify a duration less than 10 minutes"))
			}
			if *s > 1<<32 {
				allErrs = append(allErrs, field.Invalid(p.Child("expirationSeconds"), *s, "may not specify a duration larger than 2^32 seconds"))
			}
		}
	}
	if s := d.Spec.NodeAllocatableUpdatePeriodSeconds; s != nil && *s < 10 {
		allErrs = append(allErrs, field.Invalid(spec.Child("nodeAllocatableUpdatePeriodSeconds"), *s, "must be greater than or equal to 10 seconds"))
	}
	return allErrs
}

// csiDriverName checks the name of a CSI driver as Kubernetes does
// wherever one is named: at most 63 characters, a DNS subdomain in lower case.
func csiDriverName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var allErrs field.ErrorList
	if len(name) > 63 {
		allErrs = append(allErrs, field.TooLong(p, "", 63))
	}
	for _, msg := range utilvalidation.IsDNS1123Subdomain(strings.ToLower(name)) {
		allErrs = append(allErrs, field.Invalid(p, name, msg))
	}
	return allErrs
}

var csiDriverPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("AttachRequired", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["attachRequired"]),
		printers.Column("PodInfoOnMount", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["podInfoOnMount"]),
		printers.Column("StorageCapacity", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["storageCapacity"]),
		printers.Column("TokenRequests", "string", storagev1.CSIDriverSpec{}.SwaggerDoc()["tokenRequests"]),
		printers.Column("RequiresRepublish", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["requiresRepublish"]),
		printers.Column("Modes", "string", storagev1.CSIDriverSpec{}.SwaggerDoc()["volumeLifecycleModes"]),
		printers.AgeColumn(),
	},
	func(d *storagev1.CSIDriver, now time.Time) []interface{} {
		var modes []string
		for _, m := range d.Spec.VolumeLifecycleModes {
			modes = append(modes, string(m))
		}
		tokenRequests := "<unset>"
		if d.Spec.TokenRequests != nil {
			var audiences []string
			for _, t := range d.Spec.TokenRequests {
				audiences = append(audiences, t.Audience)
			}
			tokenRequests = strings.Join(audiences, ",")
		}
		return []interface{}{d.Name, ptr.Deref(d.Spec.AttachRequired, true), ptr.Deref(d.Spec.PodInfoOnMount, false),
			ptr.Deref(d.Spec.StorageCapacity, false), tokenRequests, ptr.Deref(d.Spec.RequiresRepublish, false),
			printers.OrDefault(strings.Join(modes, ","), "<none>"), printers.Age(d.CreationTimestamp, now)}
	},
)
