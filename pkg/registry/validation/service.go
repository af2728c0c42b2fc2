package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Node port range of the minik8s apiserver (upstream's default).
const (
	minNodePort = 30000
	maxNodePort = 32767
	// maxClientIPAffinitySeconds is the longest ClientIP session affinity.
	maxClientIPAffinitySeconds int32 = 86400
)

var (
	supportedServiceTypes = []corev1.ServiceType{
		corev1.ServiceTypeClusterIP, corev1.ServiceTypeExternalName, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort,
	}
	supportedSessionAffinities = []corev1.ServiceAffinity{corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone}
	supportedExternalPolicies  = []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal}
	supportedInternalPolicies  = []corev1.ServiceInternalTrafficPolicy{corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal}
	supportedIPFamilyPolicies  = []corev1.IPFamilyPolicy{corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack}
	supportedIPFamilies        = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
)

func Service(svc *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	specPath := field.NewPath("spec")
	allErrs := Enum(spec.Type, supportedServiceTypes, specPath.Child("type"))

	if spec.Type == corev1.ServiceTypeExternalName {
		allErrs = append(allErrs, validateExternalNameService(spec, specPath)...)
	} else {
		allErrs = append(allErrs, validateClusterIPs(spec, specPath)...)
	}
	headless := spec.ClusterIP == corev1.ClusterIPNone
	if len(spec.Ports) == 0 && spec.Type != corev1.ServiceTypeExternalName && !headless {
		allErrs = append(allErrs, field.Required(specPath.Child("ports"), ""))
	}
	allErrs = append(allErrs, validateServicePorts(spec, specPath.Child("ports"))...)
	allErrs = append(allErrs, validateLabels(spec.Selector, specPath.Child("selector"))...)
	allErrs = append(allErrs, validateSessionAffinity(spec, specPath)...)
	for i, ip := range spec.ExternalIPs {
		allErrs = append(allErrs, utilvalidation.IsValidIP(specPath.Child("externalIPs").Index(i), ip)...)
	}

	externallyAccessible := spec.Type == corev1.ServiceTypeLoadBalancer || spec.Type == corev1.ServiceTypeNodePort ||
		(spec.Type == corev1.ServiceTypeClusterIP && len(spec.ExternalIPs) > 0)
	etpPath := specPath.Child("externalTrafficPolicy")
	if externallyAccessible {
		allErrs = append(allErrs, Enum(spec.ExternalTrafficPolicy, supportedExternalPolicies, etpPath)...)
	} else if spec.ExternalTrafficPolicy != "" {
		allErrs = append(allErrs, field.Invalid(etpPath, spec.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
	}
	if spec.Type != corev1.ServiceTypeExternalName {
		itpPath := specPath.Child("internalTrafficPolicy")
		if spec.InternalTrafficPolicy == nil {
			allErrs = append(allErrs, field.Required(itpPath, ""))
		} else {
			allErrs = append(allErrs, Enum(*spec.InternalTrafficPolicy, supportedInternalPolicies, itpPath)...)
		}
	}

	if spec.Type != corev1.ServiceTypeLoadBalancer {
		if len(spec.LoadBalancerSourceRanges) > 0 {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("loadBalancerSourceRanges"), "may only be used when `type` is 'LoadBalancer'"))
		}
		if spec.AllocateLoadBalancerNodePorts != nil {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
		}
	}
	for i, cidr := range spec.LoadBalancerSourceRanges {
		allErrs = append(allErrs, utilvalidation.IsValidCIDR(specPath.Child("loadBalancerSourceRanges").Index(i), cidr)...)
	}
	return allErrs
}

func validateExternalNameService(spec *corev1.ServiceSpec, specPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if spec.ClusterIP != "" {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("clusterIP"), "may not be set for ExternalName services"))
	}
	if len(spec.ClusterIPs) > 0 {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
	}
	if spec.IPFamilyPolicy != nil {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
	}
	if len(spec.IPFamilies) > 0 {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("ipFamilies"), "may not be set for ExternalName services"))
	}
	namePath := specPath.Child("externalName")
	if spec.ExternalName == "" {
		allErrs = append(allErrs, field.Required(namePath, ""))
	} else {
		name := spec.ExternalName
		if len(name) > 1 && name[len(name)-1] == '.' {
			name = name[:len(name)-1]
		}
		for _, msg := range utilvalidation.IsDNS1123Subdomain(name) {
			allErrs = append(allErrs, field.Invalid(namePath, spec.ExternalName, msg))
		}
	}
	return allErrs
}

// validateClusterIPs checks clusterIP(s) and the IP family fields of a
// service that is not ExternalName.
func validateClusterIPs(spec *corev1.ServiceSpec, specPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	ipPath := specPath.Child("clusterIP")
	switch spec.ClusterIP {
	case "":
	case corev1.ClusterIPNone:
		if spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer {
			allErrs = append(allErrs, field.Invalid(ipPath, spec.ClusterIP, fmt.Sprintf("may not be set to 'None' for %s services", spec.Type)))
		}
	default:
		allErrs = append(allErrs, utilvalidation.IsValidIP(ipPath, spec.ClusterIP)...)
	}
	if len(spec.ClusterIPs) > 0 && spec.ClusterIP != "" && spec.ClusterIPs[0] != spec.ClusterIP {
		allErrs = append(allErrs, field.Invalid(specPath.Child("clusterIPs").Index(0), spec.ClusterIPs[0], "must match `clusterIP` if specified"))
	}
	if len(spec.ClusterIPs) > 2 {
		allErrs = append(allErrs, field.TooMany(specPath.Child("clusterIPs"), len(spec.ClusterIPs), 2))
	}
	for i, ip := range spec.ClusterIPs {
		if i == 0 && ip == corev1.ClusterIPNone {
			continue
		}
		allErrs = append(allErrs, utilvalidation.IsValidIP(specPath.Child("clusterIPs").Index(i), ip)...)
	}
	if spec.IPFamilyPolicy != nil {
		allErrs = append(allErrs, Enum(*spec.IPFamilyPolicy, supportedIPFamilyPolicies, specPath.Child("ipFamilyPolicy"))...)
	}
	famPath := specPath.Child("ipFamilies")
	if len(spec.IPFamilies) > 2 {
		allErrs = append(allErrs, field.TooMany(famPath, len(spec.IPFamilies), 2))
	}
	seen := sets.New[corev1.IPFamily]()
	for i, f := range spec.IPFamilies {
		allErrs = append(allErrs, Enum(f, supportedIPFamilies, famPath.Index(i))...)
		if seen.Has(f) {
			allErrs = append(allErrs, field.Duplicate(famPath.Index(i), f))
		}
		seen.Insert(f)
	}
	if spec.IPFamilyPolicy != nil && *spec.IPFamilyPolicy == corev1.IPFamilyPolicySingleStack && len(spec.IPFamilies) > 1 {
		allErrs = append(allErrs, field.Invalid(famPath, spec.IPFamilies, "when `ipFamilyPolicy` is SingleStack, only one family may be specified"))
	}
	return allErrs
}

func validateServicePorts(spec *corev1.ServiceSpec, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	names := sets.New[string]()
	portProtos := sets.New[string]()
	nodePorts := sets.New[string]()
	for i := range spec.Ports {
		p := &spec.Ports[i]
		portPath := fldPath.Index(i)
		namePath := portPath.Child("name")
		if p.Name == "" {
			if len(spec.Ports) > 1 {
				allErrs = append(allErrs, field.Required(namePath, ""))
			}
		} else {
			allErrs = append(allErrs, DNS1123Label(p.Name, namePath)...)
			if names.Has(p.Name) {
				allErrs = append(allErrs, field.Duplicate(namePath, p.Name))
			}
			names.Insert(p.Name)
		}
		allErrs = append(allErrs, PortNumber(p.Port, portPath.Child("port"))...)
		allErrs = append(allErrs, Protocol(p.Protocol, portPath.Child("protocol"))...)
		key := fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if portProtos.Has(key) {
			allErrs = append(allErrs, field.Duplicate(portPath, key))
		}
		portProtos.Insert(key)
		if spec.Type != corev1.ServiceTypeExternalName {
			allErrs = append(allErrs, PortNumOrName(p.TargetPort, portPath.Child("targetPort"))...)
		}
		if p.AppProtocol != nil {
			allErrs = append(allErrs, QualifiedName(*p.AppProtocol, portPath.Child("appProtocol"))...)
		}
		if p.NodePort == 0 {
			continue
		}
		npPath := portPath.Child("nodePort")
		switch spec.Type {
		case corev1.ServiceTypeClusterIP, corev1.ServiceTypeExternalName:
			allErrs = append(allErrs, field.Forbidden(npPath, fmt.Sprintf("may not be used when `type` is '%s'", spec.Type)))
			continue
		}
		if p.NodePort < minNodePort || p.NodePort > maxNodePort {
			allErrs = append(allErrs, field.Invalid(npPath, p.NodePort,
				fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %d-%d", minNodePort, maxNodePort)))
		}
		npKey := fmt.Sprintf("%d/%s", p.NodePort, p.Protocol)
		if nodePorts.Has(npKey) {
			allErrs = append(allErrs, field.Duplicate(npPath, p.NodePort))
		}
		nodePorts.Insert(npKey)
	}
	return allErrs
}

func validateSessionAffinity(spec *corev1.ServiceSpec, specPath *field.Path) field.ErrorList {
	allErrs := Enum(spec.SessionAffinity, supportedSessionAffinities, specPath.Child("sessionAffinity"))
	cfgPath := specPath.Child("sessionAffinityConfig")
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityClientIP:
		if c := spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			if t := *c.ClientIP.TimeoutSeconds; t <= 0 || t > maxClientIPAffinitySeconds {
				allErrs = append(allErrs, field.Invalid(cfgPath.Child("clientIP", "timeoutSeconds"), t,
					fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPAffinitySeconds)))
			}
		}
	case corev1.ServiceAffinityNone:
		if spec.SessionAffinityConfig != nil {
			allErrs = append(allErrs, field.Forbidden(cfgPath, fmt.Sprintf("must not be set when session affinity is %s", corev1.ServiceAffinityNone)))
		}
	}
	return allErrs
}

// ServiceUpdate keeps an allocated cluster IP fixed unless the
// service becomes, or stops being, ExternalName.
func ServiceUpdate(svc, old *corev1.Service) field.ErrorList {
	allErrs := field.ErrorList{}
	if svc.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName {
		return allErrs
	}
	specPath := field.NewPath("spec")
	if old.Spec.ClusterIP != "" {
		allErrs = append(allErrs, Immutable(svc.Spec.ClusterIP, old.Spec.ClusterIP, specPath.Child("clusterIP"))...)
	}
	if len(old.Spec.ClusterIPs) > 0 && len(svc.Spec.ClusterIPs) > 0 && old.Spec.ClusterIPs[0] != svc.Spec.ClusterIPs[0] {
		allErrs = append(allErrs, field.Invalid(specPath.Child("clusterIPs").Index(0), svc.Spec.ClusterIPs[0], "may not change once set"))
	}
	return allErrs
}
