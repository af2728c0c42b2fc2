package validation

import (
	"fmt"
	"net"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
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
	maxHPAStabilizationWindow = 3600
	maxHPAPolicyPeriodSeconds = 1800
)

var (
	supportedMetricSourceTypes = []autoscalingv2.MetricSourceType{
		autoscalingv2.ObjectMetricSourceType, autoscalingv2.PodsMetricSourceType, autoscalingv2.ResourceMetricSourceType,
		autoscalingv2.ContainerResourceMetricSourceType, autoscalingv2.ExternalMetricSourceType,
	}
	supportedMetricTargetTypes = []autoscalingv2.MetricTargetType{
		autoscalingv2.UtilizationMetricType, autoscalingv2.ValueMetricType, autoscalingv2.AverageValueMetricType,
	}
	supportedSelectPolicies = []autoscalingv2.ScalingPolicySelect{
		autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect,
	}
	supportedScalingPolicyTypes = []autoscalingv2.HPAScalingPolicyType{autoscalingv2.PodsScalingPolicy, autoscalingv2.PercentScalingPolicy}
	supportedAddressTypes       = []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN}
	supportedPathTypes          = []networkingv1.PathType{networkingv1.PathTypeExact, networkingv1.PathTypePrefix, networkingv1.PathTypeImplementationSpecific}
)

func HorizontalPodAutoscaler(hpa *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	spec := &hpa.Spec
	specPath := field.NewPath("spec")
	refPath := specPath.Child("scaleTargetRef")
	allErrs := field.ErrorList{}
	if spec.ScaleTargetRef.Kind == "" {
		allErrs = append(allErrs, field.Required(refPath.Child("kind"), ""))
	} else {
		for _, msg := range PathSegmentName(spec.ScaleTargetRef.Kind, false) {
			allErrs = append(allErrs, field.Invalid(refPath.Child("kind"), spec.ScaleTargetRef.Kind, msg))
		}
	}
	if spec.ScaleTargetRef.Name == "" {
		allErrs = append(allErrs, field.Required(refPath.Child("name"), ""))
	} else {
		for _, msg := range PathSegmentName(spec.ScaleTargetRef.Name, false) {
			allErrs = append(allErrs, field.Invalid(refPath.Child("name"), spec.ScaleTargetRef.Name, msg))
		}
	}
	if spec.MinReplicas != nil && *spec.MinReplicas < 1 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("minReplicas"), *spec.MinReplicas, "must be greater than or equal to 1"))
	}
	if spec.MaxReplicas < 1 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("maxReplicas"), spec.MaxReplicas, "must be greater than 0"))
	}
	if spec.MinReplicas != nil && spec.MaxReplicas < *spec.MinReplicas {
		allErrs = append(allErrs, field.Invalid(specPath.Child("maxReplicas"), spec.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	for i := range spec.Metrics {
		allErrs = append(allErrs, validateMetricSpec(&spec.Metrics[i], specPath.Child("metrics").Index(i))...)
	}
	if b := spec.Behavior; b != nil {
		bPath := specPath.Child("behavior")
		allErrs = append(allErrs, validateScalingRules(b.ScaleUp, bPath.Child("scaleUp"))...)
		allErrs = append(allErrs, validateScalingRules(b.ScaleDown, bPath.Child("scaleDown"))...)
	}
	return allErrs
}

func validateMetricSpec(m *autoscalingv2.MetricSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateEnum(m.Type, supportedMetricSourceTypes, fldPath.Child("type"))
	if len(allErrs) > 0 {
		return allErrs
	}
	if countSetPointers(m) > 1 {
		allErrs = append(allErrs, field.Forbidden(fldPath, "must populate the given metric source only"))
	}
	missing := func(child string) field.ErrorList {
		return field.ErrorList{field.Required(fldPath.Child(child), "must populate information for the given metric source")}
	}
	switch m.Type {
	case autoscalingv2.ResourceMetricSourceType:
		if m.Resource == nil {
			return append(allErrs, missing("resource")...)
		}
		p := fldPath.Child("resource")
		if m.Resource.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), "must specify a resource name"))
		}
		allErrs = append(allErrs, validateMetricTarget(&m.Resource.Target, p.Child("target"), true)...)
	case autoscalingv2.ContainerResourceMetricSourceType:
		if m.ContainerResource == nil {
			return append(allErrs, missing("containerResource")...)
		}
		p := fldPath.Child("containerResource")
		if m.ContainerResource.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), "must specify a resource name"))
		}
		if m.ContainerResource.Container == "" {
			allErrs = append(allErrs, field.Required(p.Child("container"), "must specify a container"))
		} else {
			allErrs = append(allErrs, validateDNS1123Label(m.ContainerResource.Container, p.Child("container"))...)
		}
		allErrs = append(allErrs, validateMetricTarget(&m.ContainerResource.Target, p.Child("target"), true)...)
	case autoscalingv2.PodsMetricSourceType:
		if m.Pods == nil {
			return append(allErrs, missing("pods")...)
		}
		p := fldPath.Child("pods")
		allErrs = append(allErrs, validateMetricName(m.Pods.Metric.Name, p.Child("metric", "name"))...)
		allErrs = append(allErrs, validateMetricTarget(&m.Pods.Target, p.Child("target"), false)...)
	case autoscalingv2.ObjectMetricSourceType:
		if m.Object == nil {
			return append(allErrs, missing("object")...)
		}
		p := fldPath.Child("object")
		if m.Object.DescribedObject.Kind == "" {
			allErrs = append(allErrs, field.Required(p.Child("describedObject", "kind"), ""))
		}
		if m.Object.DescribedObject.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("describedObject", "name"), ""))
		}
		allErrs = append(allErrs, validateMetricName(m.Object.Metric.Name, p.Child("metric", "name"))...)
		allErrs = append(allErrs, validateMetricTarget(&m.Object.Target, p.Child("target"), false)...)
	case autoscalingv2.ExternalMetricSourceType:
		if m.External == nil {
			return append(allErrs, missing("external")...)
		}
		p := fldPath.Child("external")
		allErrs = append(allErrs, validateMetricName(m.External.Metric.Name, p.Child("metric", "name"))...)
		allErrs = append(allErrs, validateMetricTarget(&m.External.Target, p.Child("target"), false)...)
	}
	return allErrs
}

func validateMetricName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "must specify a metric name")}
	}
	allErrs := field.ErrorList{}
	for _, msg := range PathSegmentName(name, false) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

// validateMetricTarget checks a metric target; utilization targets only
// make sense for resource metrics.
func validateMetricTarget(t *autoscalingv2.MetricTarget, fldPath *field.Path, resourceMetric bool) field.ErrorList {
	allErrs := validateEnum(t.Type, supportedMetricTargetTypes, fldPath.Child("type"))
	switch t.Type {
	case autoscalingv2.UtilizationMetricType:
		if !resourceMetric {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("type"), t.Type, "must be either Value or AverageValue"))
		}
		if t.AverageUtilization == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("averageUtilization"), "must set either a target raw value or a target utilization"))
		}
	case autoscalingv2.ValueMetricType:
		if t.Value == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("value"), "must set either a target value or averageValue"))
		}
	case autoscalingv2.AverageValueMetricType:
		if t.AverageValue == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("averageValue"), "must set either a target value or averageValue"))
		}
	}
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("averageUtilization"), *t.AverageUtilization, "must be greater than 0"))
	}
	if t.Value != nil && t.Value.Sign() <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("value"), t.Value.String(), "must be positive"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("averageValue"), t.AverageValue.String(), "must be positive"))
	}
	return allErrs
}

func validateScalingRules(r *autoscalingv2.HPAScalingRules, fldPath *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	allErrs := field.ErrorList{}
	if w := r.StabilizationWindowSeconds; w != nil {
		wp := fldPath.Child("stabilizationWindowSeconds")
		if *w < 0 {
			allErrs = append(allErrs, field.Invalid(wp, *w, "must be greater than or equal to zero"))
		} else if *w > maxHPAStabilizationWindow {
			allErrs = append(allErrs, field.Invalid(wp, *w, fmt.Sprintf("must be less than or equal to %d", maxHPAStabilizationWindow)))
		}
	}
	if r.SelectPolicy != nil {
		allErrs = append(allErrs, validateEnum(*r.SelectPolicy, supportedSelectPolicies, fldPath.Child("selectPolicy"))...)
	}
	if len(r.Policies) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("policies"), "must specify at least one Policy"))
	}
	for i, p := range r.Policies {
		idxPath := fldPath.Child("policies").Index(i)
		allErrs = append(allErrs, validateEnum(p.Type, supportedScalingPolicyTypes, idxPath.Child("type"))...)
		if p.Value <= 0 {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("value"), p.Value, "must be greater than zero"))
		}
		if p.PeriodSeconds <= 0 {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("periodSeconds"), p.PeriodSeconds, "must be greater than zero"))
		} else if p.PeriodSeconds > maxHPAPolicyPeriodSeconds {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("periodSeconds"), p.PeriodSeconds,
				fmt.Sprintf("must be less than or equal to %d", maxHPAPolicyPeriodSeconds)))
		}
	}
	return allErrs
}

func EndpointSlice(es *discoveryv1.EndpointSlice) field.ErrorList {
	allErrs := validateEnum(es.AddressType, supportedAddressTypes, field.NewPath("addressType"))
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
			allErrs = append(allErrs, validateDNS1123Label(*ep.Hostname, idxPath.Child("hostname"))...)
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
			allErrs = append(allErrs, validateDNS1123Label(name, idxPath.Child("name"))...)
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
		allErrs = append(allErrs, validateEnum(*p.PathType, supportedPathTypes, fldPath.Child("pathType"))...)
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
		allErrs = append(allErrs, validateDNS1123Label(b.Service.Name, sp.Child("name"))...)
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
