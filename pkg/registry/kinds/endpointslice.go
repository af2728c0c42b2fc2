package kinds

import (
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	discoveryv1 "k8s.io/api/discovery/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// EndpointSlices: a slice's addressType never changes.
func endpointSlices() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), Kind: "EndpointSlice",
		Namespaced: true, NoGeneration: true,
		Default:        defaulter(defaultEndpointSlice),
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validateEndpointSlice),
		ValidateUpdate: updateValidator(validateEndpointSliceUpdate),
		Printer:        endpointSlicePrinter,
	}
}

// Defaults.

func defaultEndpointSlice(es *discoveryv1.EndpointSlice) {
	for i := range es.Ports {
		p := &es.Ports[i]
		if p.Name == nil {
			p.Name = ptr.To("")
		}
		if p.Protocol == nil {
			p.Protocol = ptr.To(corev1.ProtocolTCP)
		}
	}
}

// Validation.

const (
	maxEndpointSliceEndpoints = 1000
	maxEndpointSlicePorts     = 100
	maxEndpointAddresses      = 100
)

var supportedAddressTypes = []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN}

func validateEndpointSlice(es *discoveryv1.EndpointSlice) field.ErrorList {
	allErrs := validation.Enum(es.AddressType, supportedAddressTypes, field.NewPath("addressType"))
	epPath := field.NewPath("endpoints")
	if len(es.Endpoints) > maxEndpointSliceEndpoints {
		allErrs = append(allErrs, field.TooMany(epPath, len(es.Endpoints), maxEndpointSliceEndpoints))
	}
	for i, ep := range es.Endpoints {
		idxPath := epPath.Index(i)
		addrPath := idxPath.Child("addresses")
		switch n := len(ep.Addresses); {
		case n == 0:
			allErrs = append(allErrs, field.Required(addrPath, "must contain at least 1 address"))
		case n > maxEndpointAddresses:
			allErrs = append(allErrs, field.TooMany(addrPath, n, maxEndpointAddresses))
		}
		for j, a := range ep.Addresses {
			allErrs = append(allErrs, validateSliceAddress(es.AddressType, a, addrPath.Index(j))...)
		}
		if ep.NodeName != nil && *ep.NodeName != "" {
			allErrs = append(allErrs, validation.DNS1123Subdomain(*ep.NodeName, idxPath.Child("nodeName"))...)
		}
		if ep.Hostname != nil && *ep.Hostname != "" {
			allErrs = append(allErrs, validation.DNS1123Label(*ep.Hostname, idxPath.Child("hostname"))...)
		}
	}
	portsPath := field.NewPath("ports")
	if len(es.Ports) > maxEndpointSlicePorts {
		allErrs = append(allErrs, field.TooMany(portsPath, len(es.Ports), maxEndpointSlicePorts))
	}
	names := sets.New[string]()
	for i, p := range es.Ports {
		idxPath := portsPath.Index(i)
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		if name != "" {
			allErrs = append(allErrs, validation.DNS1123Label(name, idxPath.Child("name"))...)
		}
		if names.Has(name) {
			allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), name))
		}
		names.Insert(name)
		if p.Port != nil {
			allErrs = append(allErrs, validation.PortNumber(*p.Port, idxPath.Child("port"))...)
		}
		if p.Protocol == nil {
			allErrs = append(allErrs, field.Required(idxPath.Child("protocol"), ""))
		} else {
			allErrs = append(allErrs, validation.Protocol(*p.Protocol, idxPath.Child("protocol"))...)
		}
	}
	return allErrs
}

func validateSliceAddress(t discoveryv1.AddressType, addr string, fldPath *field.Path) field.ErrorList {
	switch t {
	case discoveryv1.AddressTypeIPv4:
		if ip := net.ParseIP(addr); ip == nil || ip.To4() == nil || strings.Contains(addr, ":") {
			return field.ErrorList{field.Invalid(fldPath, addr, "must be a valid IPv4 address")}
		}
		return utilvalidation.IsValidIP(fldPath, addr)
	case discoveryv1.AddressTypeIPv6:
		if ip := net.ParseIP(addr); ip == nil || !strings.Contains(addr, ":") {
			return field.ErrorList{field.Invalid(fldPath, addr, "must be a valid IPv6 address")}
		}
	case discoveryv1.AddressTypeFQDN:
		return validation.DNS1123Subdomain(addr, fldPath)
	}
	return nil
}

func validateEndpointSliceUpdate(es, old *discoveryv1.EndpointSlice) field.ErrorList {
	return validation.Immutable(es.AddressType, old.AddressType, field.NewPath("addressType"))
}

// The table.

var endpointSlicePrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("AddressType", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["addressType"]),
		printers.Column("Ports", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["ports"]),
		printers.Column("Endpoints", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["endpoints"]),
		printers.AgeColumn(),
	},
	endpointSliceCells,
)

func endpointSliceCells(es *discoveryv1.EndpointSlice, now time.Time) []interface{} {
	var ports, addrs []string
	for _, p := range es.Ports {
		switch {
		case p.Port != nil:
			ports = append(ports, strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			ports = append(ports, *p.Name)
		default:
			ports = append(ports, "*")
		}
	}
	for _, ep := range es.Endpoints {
		addrs = append(addrs, ep.Addresses...)
	}
	return []interface{}{
		es.Name,
		string(es.AddressType),
		printers.OrDefault(printers.TruncatedList(ports, 3, ","), printers.Unset),
		printers.OrDefault(printers.TruncatedList(addrs, 3, ","), printers.Unset),
		printers.Age(es.CreationTimestamp, now),
	}
}
