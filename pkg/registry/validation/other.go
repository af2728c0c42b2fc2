package validation

import (
	"fmt"
	"net"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	maxEndpointSliceEndpoints = 1000
	maxEndpointSlicePorts     = 100
	maxEndpointAddresses      = 100
)

var (
	supportedAddressTypes = []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN}
	supportedPathTypes    = []networkingv1.PathType{networkingv1.PathTypeExact, networkingv1.PathTypePrefix, networkingv1.PathTypeImplementationSpecific}
)

func EndpointSlice(es *discoveryv1.EndpointSlice) field.ErrorList {
	allErrs := Enum(es.AddressType, supportedAddressTypes, field.NewPath("addressType"))
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
			allErrs = append(allErrs, DNS1123Subdomain(*ep.NodeName, idxPath.Child("nodeName"))...)
		}
		if ep.Hostname != nil && *ep.Hostname != "" {
			allErrs = append(allErrs, DNS1123Label(*ep.Hostname, idxPath.Child("hostname"))...)
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
			allErrs = append(allErrs, DNS1123Label(name, idxPath.Child("name"))...)
		}
		if names.Has(name) {
			allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), name))
		}
		names.Insert(name)
		if p.Port != nil {
			allErrs = append(allErrs, validatePortNumber(*p.Port, idxPath.Child("port"))...)
		}
		if p.Protocol == nil {
			allErrs = append(allErrs, field.Required(idxPath.Child("protocol"), ""))
		} else {
			allErrs = append(allErrs, validateProtocol(*p.Protocol, idxPath.Child("protocol"))...)
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
		return DNS1123Subdomain(addr, fldPath)
	}
	return nil
}

func EndpointSliceUpdate(es, old *discoveryv1.EndpointSlice) field.ErrorList {
	return validateImmutable(es.AddressType, old.AddressType, field.NewPath("addressType"))
}

func Lease(l *coordinationv1.Lease) field.ErrorList {
	allErrs := field.ErrorList{}
	specPath := field.NewPath("spec")
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	allErrs = append(allErrs, validateNonnegativePtr32(l.Spec.LeaseTransitions, specPath.Child("leaseTransitions"))...)
	if l.Spec.Strategy != nil {
		allErrs = append(allErrs, validateQualifiedName(string(*l.Spec.Strategy), specPath.Child("strategy"))...)
	}
	if l.Spec.PreferredHolder != nil && *l.Spec.PreferredHolder != "" && l.Spec.Strategy == nil {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return allErrs
}

func Ingress(ing *networkingv1.Ingress) field.ErrorList {
	spec := &ing.Spec
	specPath := field.NewPath("spec")
	allErrs := field.ErrorList{}
	if len(spec.Rules) == 0 && spec.DefaultBackend == nil {
		allErrs = append(allErrs, field.Invalid(specPath, spec.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if spec.DefaultBackend != nil {
		allErrs = append(allErrs, validateIngressBackend(spec.DefaultBackend, specPath.Child("defaultBackend"))...)
	}
	if spec.IngressClassName != nil {
		allErrs = append(allErrs, DNS1123Subdomain(*spec.IngressClassName, specPath.Child("ingressClassName"))...)
	}
	for i, rule := range spec.Rules {
		rulePath := specPath.Child("rules").Index(i)
		if rule.Host != "" {
			allErrs = append(allErrs, validateHost(rule.Host, rulePath.Child("host"))...)
		}
		if rule.HTTP == nil {
			continue
		}
		httpPath := rulePath.Child("http")
		if len(rule.HTTP.Paths) == 0 {
			allErrs = append(allErrs, field.Required(httpPath.Child("paths"), ""))
		}
		for j := range rule.HTTP.Paths {
			allErrs = append(allErrs, validateHTTPIngressPath(&rule.HTTP.Paths[j], httpPath.Child("paths").Index(j))...)
		}
	}
	for i, tls := range spec.TLS {
		tlsPath := specPath.Child("tls").Index(i)
		for j, host := range tls.Hosts {
			allErrs = append(allErrs, validateHost(host, tlsPath.Child("hosts").Index(j))...)
		}
		if tls.SecretName != "" {
			allErrs = append(allErrs, DNS1123Subdomain(tls.SecretName, tlsPath.Child("secretName"))...)
		}
	}
	return allErrs
}

func validateHTTPIngressPath(p *networkingv1.HTTPIngressPath, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	pathPath := fldPath.Child("path")
	if p.PathType == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("pathType"), "pathType must be specified"))
	} else {
		allErrs = append(allErrs, Enum(*p.PathType, supportedPathTypes, fldPath.Child("pathType"))...)
		switch *p.PathType {
		case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
			if !strings.HasPrefix(p.Path, "/") {
				allErrs = append(allErrs, field.Invalid(pathPath, p.Path, "must be an absolute path"))
			}
			for _, bad := range []string{"//", "/./", "/../", "%2f", "%2F"} {
				if strings.Contains(p.Path, bad) {
					allErrs = append(allErrs, field.Invalid(pathPath, p.Path, fmt.Sprintf("must not contain '%s'", bad)))
				}
			}
		case networkingv1.PathTypeImplementationSpecific:
			if p.Path != "" && !strings.HasPrefix(p.Path, "/") {
				allErrs = append(allErrs, field.Invalid(pathPath, p.Path, "must be an absolute path"))
			}
		}
	}
	allErrs = append(allErrs, validateIngressBackend(&p.Backend, fldPath.Child("backend"))...)
	return allErrs
}

func validateIngressBackend(b *networkingv1.IngressBackend, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	switch {
	case b.Service != nil && b.Resource != nil:
		return append(allErrs, field.Invalid(fldPath, "", "cannot set both resource and service backends"))
	case b.Service == nil && b.Resource == nil:
		return append(allErrs, field.Invalid(fldPath, "", "resource or service backend is required"))
	case b.Resource != nil:
		rp := fldPath.Child("resource")
		if b.Resource.Kind == "" {
			allErrs = append(allErrs, field.Required(rp.Child("kind"), ""))
		}
		if b.Resource.Name == "" {
			allErrs = append(allErrs, field.Required(rp.Child("name"), ""))
		}
		return allErrs
	}
	sp := fldPath.Child("service")
	if b.Service.Name == "" {
		allErrs = append(allErrs, field.Required(sp.Child("name"), ""))
	} else {
		allErrs = append(allErrs, DNS1123Label(b.Service.Name, sp.Child("name"))...)
	}
	port := b.Service.Port
	portPath := sp.Child("port")
	switch {
	case port.Name != "" && port.Number != 0:
		allErrs = append(allErrs, field.Invalid(portPath, port.Name, "cannot set both port name & port number"))
	case port.Name != "":
		allErrs = append(allErrs, validatePortName(port.Name, portPath.Child("name"))...)
	case port.Number != 0:
		allErrs = append(allErrs, validatePortNumber(port.Number, portPath.Child("number"))...)
	default:
		allErrs = append(allErrs, field.Required(portPath, "port name or number is required"))
	}
	return allErrs
}
