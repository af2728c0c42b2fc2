package kinds

import (
	"net/netip"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
)

// ServiceCIDRs: ranges Service cluster IPs come from
// (networking.k8s.io/v1), stored as objects: the apiserver's allocator
// still takes its range from its flags. spec.cidrs never changes, but for
// a single-stack range becoming dual-stack.
func serviceCIDRs() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: networkingv1.SchemeGroupVersion.WithResource("servicecidrs"), Kind: "ServiceCIDR",
		Status:   true,
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validateServiceCIDR),
		ValidateUpdate: updateValidator(func(c, old *networkingv1.ServiceCIDR) field.ErrorList {
			n, o := c.Spec.CIDRs, old.Spec.CIDRs
			if len(o) == 1 && len(n) == 2 && n[0] == o[0] {
				return nil // single to dual stack
			}
			if strings.Join(n, ",") != strings.Join(o, ",") {
				return field.ErrorList{field.Invalid(field.NewPath("spec", "cidrs"), n, "field is immutable")}
			}
			return nil
		}),
		Printer: serviceCIDRPrinter,
	}
}

func validateServiceCIDR(c *networkingv1.ServiceCIDR) field.ErrorList {
	var allErrs field.ErrorList
	p := field.NewPath("spec", "cidrs")
	switch n := len(c.Spec.CIDRs); {
	case n == 0:
		allErrs = append(allErrs, field.Required(p, "at least one CIDR required"))
	case n > 2:
		allErrs = append(allErrs, field.TooMany(p, n, 2))
	}
	var families []bool
	for i, s := range c.Spec.CIDRs {
		prefix, err := netip.ParsePrefix(s)
		if err != nil {
			allErrs = append(allErrs, field.Invalid(p.Index(i), s, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
			continue
		}
		if prefix.Masked() != prefix {
			allErrs = append(allErrs, field.Invalid(p.Index(i), s, "must be in canonical form ("+prefix.Masked().String()+")"))
		}
		families = append(families, prefix.Addr().Is4())
	}
	if len(families) == 2 && families[0] == families[1] {
		allErrs = append(allErrs, field.Invalid(p, c.Spec.CIDRs, "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"))
	}
	return append(allErrs, metav1validation.ValidateConditions(c.Status.Conditions, field.NewPath("status", "conditions"))...)
}

var serviceCIDRPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("CIDRs", "string", networkingv1.ServiceCIDRSpec{}.SwaggerDoc()["cidrs"]),
		printers.AgeColumn(),
	},
	func(c *networkingv1.ServiceCIDR, now time.Time) []interface{} {
		return []interface{}{c.Name, strings.Join(c.Spec.CIDRs, ","), printers.Age(c.CreationTimestamp, now)}
	},
)
