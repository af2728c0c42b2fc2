package kinds

import (
	"net/netip"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// IPAddresses: an IP held by an object, named by the IP in canonical
// form (networking.k8s.io/v1), stored as objects: the apiserver's
// allocator keeps its own record. The parent reference never changes.
func ipAddresses() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: networkingv1.SchemeGroupVersion.WithResource("ipaddresses"), Kind: "IPAddress",
		ShortNames: []string{"ip"}, NoGeneration: true,
		NameRule: ipAddressName,
		Validate: validator(validateIPAddress),
		ValidateUpdate: updateValidator(func(ip, old *networkingv1.IPAddress) field.ErrorList {
			return validation.Immutable(ip.Spec.ParentRef, old.Spec.ParentRef, field.NewPath("spec", "parentRef"))
		}),
		Printer: ipAddressPrinter,
	}
}

// ipAddressName: an IP address in canonical form.
func ipAddressName(name string, prefix bool) []string {
	if prefix {
		return []string{"prefix not allowed"}
	}
	addr, err := netip.ParseAddr(name)
	if err != nil || addr.Zone() != "" {
		return []string{"must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"}
	}
	if addr.Unmap().String() != name {
		return []string{"must be in canonical form (\"" + addr.Unmap().String() + "\")"}
	}
	return nil
}

func validateIPAddress(ip *networkingv1.IPAddress) field.ErrorList {
	p := field.NewPath("spec", "parentRef")
	ref := ip.Spec.ParentRef
	if ref == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	var allErrs field.ErrorList
	if ref.Group != "" {
		allErrs = append(allErrs, validation.DNS1123Subdomain(ref.Group, p.Child("group"))...)
	}
	if ref.Resource == "" {
		allErrs = append(allErrs, field.Required(p.Child("resource"), ""))
	} else {
		allErrs = append(allErrs, validation.DNS1123Label(ref.Resource, p.Child("resource"))...)
	}
	if ref.Name == "" {
		allErrs = append(allErrs, field.Required(p.Child("name"), ""))
	} else {
		for _, msg := range validation.PathSegmentName(ref.Name, false) {
			allErrs = append(allErrs, field.Invalid(p.Child("name"), ref.Name, msg))
		}
	}
	if ref.Namespace != "" {
		allErrs = append(allErrs, validation.DNS1123Label(ref.Namespace, p.Child("namespace"))...)
	}
	return allErrs
}

var ipAddressPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("ParentRef", "string", networkingv1.IPAddressSpec{}.SwaggerDoc()["parentRef"]),
	},
	func(ip *networkingv1.IPAddress, _ time.Time) []interface{} {
		parent := "<none>"
		if r := ip.Spec.ParentRef; r != nil {
			parent = strings.ToLower(schema.GroupResource{Group: r.Group, Resource: r.Resource}.String())
			if r.Namespace != "" {
				parent += "/" + r.Namespace
			}
			parent += "/" + r.Name
		}
		return []interface{}{ip.Name, parent}
	},
)
