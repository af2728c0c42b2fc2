package kinds

import (
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Endpoints: the addresses behind a Service, written by the endpoints controller.
func endpoints() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("endpoints"), Kind: "Endpoints",
		Namespaced: true, ShortNames: []string{"ep"}, NoGeneration: true,
		Default:  defaulter(defaultEndpoints),
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validateEndpoints),
		Printer:  endpointsPrinter,
	}
}

// Defaults.

func defaultEndpoints(ep *corev1.Endpoints) {
	for i := range ep.Subsets {
		for j := range ep.Subsets[i].Ports {
			p := &ep.Subsets[i].Ports[j]
			if p.Protocol == "" {
				p.Protocol = corev1.ProtocolTCP
			}
		}
	}
}

// Validation.

func validateEndpoints(ep *corev1.Endpoints) field.ErrorList {
	allErrs := field.ErrorList{}
	for i, ss := range ep.Subsets {
		idxPath := field.NewPath("subsets").Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			allErrs = append(allErrs, field.Required(idxPath, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j, a := range ss.Addresses {
			allErrs = append(allErrs, validateEndpointAddress(&a, idxPath.Child("addresses").Index(j))...)
		}
		for j, a := range ss.NotReadyAddresses {
			allErrs = append(allErrs, validateEndpointAddress(&a, idxPath.Child("notReadyAddresses").Index(j))...)
		}
		names := sets.New[string]()
		for j, p := range ss.Ports {
			portPath := idxPath.Child("ports").Index(j)
			if p.Name == "" {
				if len(ss.Ports) > 1 {
					allErrs = append(allErrs, field.Required(portPath.Child("name"), ""))
				}
			} else {
				allErrs = append(allErrs, validation.DNS1123Label(p.Name, portPath.Child("name"))...)
				if names.Has(p.Name) {
					allErrs = append(allErrs, field.Duplicate(portPath.Child("name"), p.Name))
				}
				names.Insert(p.Name)
			}
			allErrs = append(allErrs, validation.PortNumber(p.Port, portPath.Child("port"))...)
			allErrs = append(allErrs, validation.Protocol(p.Protocol, portPath.Child("protocol"))...)
		}
	}
	return allErrs
}

func validateEndpointAddress(a *corev1.EndpointAddress, fldPath *field.Path) field.ErrorList {
	allErrs := utilvalidation.IsValidIP(fldPath.Child("ip"), a.IP)
	if a.Hostname != "" {
		allErrs = append(allErrs, validation.DNS1123Label(a.Hostname, fldPath.Child("hostname"))...)
	}
	if a.NodeName != nil && *a.NodeName != "" {
		allErrs = append(allErrs, validation.DNS1123Subdomain(*a.NodeName, fldPath.Child("nodeName"))...)
	}
	return allErrs
}

// The table.

var endpointsPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Endpoints", "string", corev1.Endpoints{}.SwaggerDoc()["subsets"]),
		printers.AgeColumn(),
	},
	func(ep *corev1.Endpoints, now time.Time) []interface{} {
		return []interface{}{ep.Name, endpointAddresses(ep), printers.Age(ep.CreationTimestamp, now)}
	},
)

// endpointAddresses lists the first three "ip:port" pairs (bare IPs for
// port-less subsets), "<none>" without subsets.
func endpointAddresses(ep *corev1.Endpoints) string {
	if len(ep.Subsets) == 0 {
		return printers.None
	}
	var list []string
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 {
			for _, a := range ss.Addresses {
				list = append(list, a.IP)
			}
			continue
		}
		for _, p := range ss.Ports {
			for _, a := range ss.Addresses {
				list = append(list, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	return printers.TruncatedList(list, 3, ",")
}
