package kinds

import (
	"strings"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// ResourceClaims (resource.k8s.io/v1): a request for devices; the spec
// never changes, the allocation is the status.
func resourceClaims() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: resourcev1.SchemeGroupVersion.WithResource("resourceclaims"), Kind: "ResourceClaim",
		Namespaced: true, NameRule: apivalidation.NameIsDNSSubdomain, Status: true, Printer: resourceClaimPrinter,
		Validate: validator(func(c *resourcev1.ResourceClaim) field.ErrorList {
			return validateClaimSpec(&c.Spec, field.NewPath("spec"))
		}),
		ValidateUpdate: updateValidator(func(c, old *resourcev1.ResourceClaim) field.ErrorList {
			return validation.Immutable(c.Spec, old.Spec, field.NewPath("spec"))
		}),
	}
}

// validateClaimSpec checks that every request is named, once, and asks
// for a class.
func validateClaimSpec(spec *resourcev1.ResourceClaimSpec, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[string]bool{}
	requests := path.Child("devices", "requests")
	for i, r := range spec.Devices.Requests {
		p := requests.Index(i)
		switch {
		case r.Name == "":
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		case seen[r.Name]:
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), r.Name))
		}
		seen[r.Name] = true
		if (r.Exactly == nil) == (len(r.FirstAvailable) == 0) {
			allErrs = append(allErrs, field.Invalid(p, r.Name, "exactly one of `exactly` or `firstAvailable` is required"))
		}
		if r.Exactly != nil && r.Exactly.DeviceClassName == "" {
			allErrs = append(allErrs, field.Required(p.Child("exactly", "deviceClassName"), ""))
		}
	}
	return allErrs
}

// resourceClaimPrinter shows kubectl's columns: whether the claim is
// allocated and reserved for a pod.
var resourceClaimPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("State", "string", "Whether the claim is allocated and reserved for a consumer."),
		printers.AgeColumn(),
	},
	func(c *resourcev1.ResourceClaim, now time.Time) []interface{} {
		var state []string
		if c.DeletionTimestamp != nil {
			state = append(state, "deleted")
		}
		if c.Status.Allocation != nil {
			state = append(state, "allocated")
		} else {
			state = append(state, "pending")
		}
		if len(c.Status.ReservedFor) > 0 {
			state = append(state, "reserved")
		}
		return []interface{}{c.Name, strings.Join(state, ","), printers.Age(c.CreationTimestamp, now)}
	},
)
