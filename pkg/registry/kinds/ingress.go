package kinds

import (
	"fmt"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Ingresses (networking.k8s.io/v1): no defaults.
func ingresses() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: networkingv1.SchemeGroupVersion.WithResource("ingresses"), Kind: "Ingress",
		Namespaced: true, ShortNames: []string{"ing"}, Status: true,
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validateIngress),
		Printer:  ingressPrinter,
	}
}

// Validation.

var supportedPathTypes = []networkingv1.PathType{networkingv1.PathTypeExact, networkingv1.PathTypePrefix, networkingv1.PathTypeImplementationSpecific}

func validateIngress(ing *networkingv1.Ingress) field.ErrorList {
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
		allErrs = append(allErrs, validation.DNS1123Subdomain(*spec.IngressClassName, specPath.Child("ingressClassName"))...)
	}
	for i, rule := range spec.Rules {
		rulePath := specPath.Child("rules").Index(i)
		if rule.Host != "" {
			allErrs = append(allErrs, validation.Host(rule.Host, rulePath.Child("host"))...)
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
			allErrs = append(allErrs, validation.Host(host, tlsPath.Child("hosts").Index(j))...)
		}
		if tls.SecretName != "" {
			allErrs = append(allErrs, validation.DNS1123Subdomain(tls.SecretName, tlsPath.Child("secretName"))...)
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
		allErrs = append(allErrs, validation.Enum(*p.PathType, supportedPathTypes, fldPath.Child("pathType"))...)
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
		allErrs = append(allErrs, validation.DNS1123Label(b.Service.Name, sp.Child("name"))...)
	}
	port := b.Service.Port
	portPath := sp.Child("port")
	switch {
	case port.Name != "" && port.Number != 0:
		allErrs = append(allErrs, field.Invalid(portPath, port.Name, "cannot set both port name & port number"))
	case port.Name != "":
		allErrs = append(allErrs, validation.PortName(port.Name, portPath.Child("name"))...)
	case port.Number != 0:
		allErrs = append(allErrs, validation.PortNumber(port.Number, portPath.Child("number"))...)
	default:
		allErrs = append(allErrs, field.Required(portPath, "port name or number is required"))
	}
	return allErrs
}

// The table.

var ingressPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Class", "string", "The name of the IngressClass resource that should be used for additional configuration"),
		printers.Column("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
		printers.Column("Address", "string", "Address is a list containing ingress points for the load-balancer"),
		printers.Column("Ports", "string", "Ports of TLS configurations that open"),
		printers.AgeColumn(),
	},
	ingressCells,
)

func ingressCells(ing *networkingv1.Ingress, now time.Time) []interface{} {
	class := printers.None
	if ing.Spec.IngressClassName != nil {
		class = *ing.Spec.IngressClassName
	}
	var addrs []string
	for _, in := range ing.Status.LoadBalancer.Ingress {
		addrs = append(addrs, printers.OrDefault(in.IP, in.Hostname))
	}
	ports := "80"
	if len(ing.Spec.TLS) > 0 {
		ports = "80, 443"
	}
	return []interface{}{
		ing.Name,
		class,
		ingressHosts(ing.Spec.Rules),
		strings.Join(printers.SortedUnique(addrs), ","),
		ports,
		printers.Age(ing.CreationTimestamp, now),
	}
}

// ingressHosts lists the first three rule hosts ("*" when no rule names one);
// rules past the third host are summarized as "+ N more...", N counting from
// the third rule as kubectl does.
func ingressHosts(rules []networkingv1.IngressRule) string {
	const max = 3
	var hosts []string
	more := false
	for _, r := range rules {
		if len(hosts) == max {
			more = true
			break
		}
		if r.Host != "" {
			hosts = append(hosts, r.Host)
		}
	}
	if len(hosts) == 0 {
		return "*"
	}
	s := strings.Join(hosts, ",")
	if more {
		s += fmt.Sprintf(" + %d more...", len(rules)-max)
	}
	return s
}
