package kinds

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
	"github.com/minik8s/minik8s/pkg/storage"
)

// Services: the apiserver allocates their cluster IPs and node ports
// (serviceAllocator, below) and keeps them when an update leaves them out.
func services() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("services"), Kind: "Service", Namespaced: true,
		ShortNames: []string{"svc"}, Categories: []string{"all"}, Status: true, NoGeneration: true,
		Default:          defaulter(defaultService),
		NameRule:         apivalidation.NameIsDNSLabel,
		Validate:         validator(validateService),
		ValidateUpdate:   updateValidator(validateServiceUpdate),
		Printer:          servicePrinter,
		FieldLabels:      serviceFields,
		PrepareForUpdate: keepServiceAllocations,
		NewWriteHook:     newServiceAllocator,
	}
}

func serviceFields(obj runtime.Object) fields.Set {
	s := obj.(*corev1.Service)
	return fields.Set{"spec.clusterIP": s.Spec.ClusterIP, "spec.type": string(s.Spec.Type)}
}

// keepServiceAllocations keeps the cluster IPs and node ports an update
// leaves out, as Kubernetes does: clients never have to echo allocations.
func keepServiceAllocations(obj, old runtime.Object) {
	svc, prev := obj.(*corev1.Service), old.(*corev1.Service)
	dropTypeDependentFields(svc, prev)
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return
	}
	if svc.Spec.ClusterIP == "" && prev.Spec.Type != corev1.ServiceTypeExternalName {
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = prev.Spec.ClusterIP, prev.Spec.ClusterIPs
	}
	if !needsNodePorts(svc) {
		return
	}
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].NodePort != 0 {
			continue
		}
		for _, p := range prev.Spec.Ports {
			if p.Port == svc.Spec.Ports[i].Port && p.Protocol == svc.Spec.Ports[i].Protocol {
				svc.Spec.Ports[i].NodePort = p.NodePort
			}
		}
	}
}

func needsNodePorts(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}

// dropTypeDependentFields clears, on an update that changes a Service's
// type, what the new type may not have and the client sent back
// unchanged (a NodePort's node ports when it becomes a ClusterIP, its
// cluster IP and traffic policies when it becomes an ExternalName), as
// Kubernetes' service strategy does: a client that only changes the type
// is not refused for fields the old type filled in. What the client did
// change is left for validation to judge.
func dropTypeDependentFields(svc, prev *corev1.Service) {
	if svc.Spec.Type == prev.Spec.Type {
		return
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		if svc.Spec.ClusterIP == prev.Spec.ClusterIP && slices.Equal(svc.Spec.ClusterIPs, prev.Spec.ClusterIPs) {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "", nil
		}
		if slices.Equal(svc.Spec.IPFamilies, prev.Spec.IPFamilies) {
			svc.Spec.IPFamilies = nil
		}
		if equality.Semantic.DeepEqual(svc.Spec.IPFamilyPolicy, prev.Spec.IPFamilyPolicy) {
			svc.Spec.IPFamilyPolicy = nil
		}
		if equality.Semantic.DeepEqual(svc.Spec.InternalTrafficPolicy, prev.Spec.InternalTrafficPolicy) {
			svc.Spec.InternalTrafficPolicy = nil
		}
	}
	if needsNodePorts(prev) && !needsNodePorts(svc) && sameNodePorts(svc, prev) {
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 0
		}
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		if svc.Spec.HealthCheckNodePort == prev.Spec.HealthCheckNodePort {
			svc.Spec.HealthCheckNodePort = 0
		}
		if equality.Semantic.DeepEqual(svc.Spec.AllocateLoadBalancerNodePorts, prev.Spec.AllocateLoadBalancerNodePorts) {
			svc.Spec.AllocateLoadBalancerNodePorts = nil
		}
		if equality.Semantic.DeepEqual(svc.Spec.LoadBalancerClass, prev.Spec.LoadBalancerClass) {
			svc.Spec.LoadBalancerClass = nil
		}
	}
	if !needsNodePorts(svc) && svc.Spec.ExternalTrafficPolicy == prev.Spec.ExternalTrafficPolicy {
		svc.Spec.ExternalTrafficPolicy = ""
	}
}

// sameNodePorts says whether svc keeps prev's node ports, port by port.
func sameNodePorts(svc, prev *corev1.Service) bool {
	have := map[string]int32{}
	for _, p := range prev.Spec.Ports {
		have[string(p.Protocol)+"/"+strconv.Itoa(int(p.Port))] = p.NodePort
	}
	for _, p := range svc.Spec.Ports {
		if n, ok := have[string(p.Protocol)+"/"+strconv.Itoa(int(p.Port))]; p.NodePort != 0 && (!ok || n != p.NodePort) {
			return false
		}
	}
	return true
}

// serviceAllocator hands out Service cluster IPs and node ports. Each
// allocation is a key under /registry/ranges/, created only if absent, so
// two concurrent creates can never receive the same address and the
// allocations survive restarts with the rest of the state.
type serviceAllocator struct {
	store            storage.Store
	cidr             *net.IPNet
	portMin, portMax int
}

// newServiceAllocator is the services' write hook.
func newServiceAllocator(cfg registry.HookConfig) (registry.WriteHook, error) {
	store, cidr, portMin, portMax := cfg.Store, cfg.ServiceCIDR, cfg.NodePortMin, cfg.NodePortMax
	_, ipnet, err := net.ParseCIDR(cidr)
	if err != nil || ipnet.IP.To4() == nil {
		return nil, fmt.Errorf("service CIDR %q must be an IPv4 CIDR", cidr)
	}
	if ones, _ := ipnet.Mask.Size(); ones > 28 {
		return nil, fmt.Errorf("service CIDR %q is too small", cidr)
	}
	return &serviceAllocator{store: store, cidr: ipnet, portMin: portMin, portMax: portMax}, nil
}

const (
	rangeServiceIPs = "/registry/ranges/serviceips/"
	rangeNodePorts  = "/registry/ranges/servicenodeports/"
)

// allocationsOf lists the addresses a service holds.
func allocationsOf(svc *corev1.Service) []string {
	var keys []string
	for _, ip := range svc.Spec.ClusterIPs {
		if ip != "" && ip != corev1.ClusterIPNone {
			keys = append(keys, rangeServiceIPs+ip)
		}
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			keys = append(keys, rangeNodePorts+strconv.Itoa(int(p.NodePort)))
		}
	}
	return keys
}

// allocate gives svc the addresses it needs and reserves every address it
// holds that old (nil on create) did not. On error nothing stays reserved.
// undo releases what this call reserved.
func (a *serviceAllocator) allocate(ctx context.Context, svc, old *corev1.Service) (undo func(), err error) {
	owner := []byte(svc.Namespace + "/" + svc.Name)
	held := map[string]bool{}
	if old != nil {
		for _, k := range allocationsOf(old) {
			held[k] = true
		}
	}
	var reserved []string
	undo = func() {
		for _, k := range reserved {
			_, _ = a.store.Delete(context.WithoutCancel(ctx), k, 0)
		}
	}
	fail := func(err error) (func(), error) {
		undo()
		return nil, err
	}
	reserve := func(key string, path *field.Path, value any) error {
		if held[key] {
			return nil
		}
		if _, err := a.store.Create(ctx, key, owner); err != nil {
			if errors.Is(err, storage.ErrExists) {
				return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name,
					field.ErrorList{field.Invalid(path, value, "provided "+path.String()+" is already allocated")})
			}
			return err
		}
		held[key] = true
		reserved = append(reserved, key)
		return nil
	}

	spec := &svc.Spec
	if spec.Type != corev1.ServiceTypeExternalName && spec.ClusterIP != corev1.ClusterIPNone {
		if spec.ClusterIP == "" {
			ip, key, err := a.pick(ctx, owner, rangeServiceIPs, a.randomIP, a.ipCount(), staticBand(a.ipCount()))
			if err != nil {
				return fail(err)
			}
			reserved = append(reserved, key)
			held[key] = true
			spec.ClusterIP, spec.ClusterIPs = ip, []string{ip}
		} else {
			ip := net.ParseIP(spec.ClusterIP)
			if ip == nil || !a.cidr.Contains(ip) {
				return fail(apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name,
					field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), spec.ClusterIP,
						fmt.Sprintf("failed to allocate IP %s: the provided IP (%s) is not in the valid range. The range of valid IPs is %s", spec.ClusterIP, spec.ClusterIP, a.cidr))}))
			}
			if err := reserve(rangeServiceIPs+spec.ClusterIP, field.NewPath("spec", "clusterIPs").Index(0), spec.ClusterIP); err != nil {
				return fail(err)
			}
		}
	}
	if spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer {
		for i := range spec.Ports {
			p := &spec.Ports[i]
			path := field.NewPath("spec", "ports").Index(i).Child("nodePort")
			if p.NodePort == 0 {
				port, key, err := a.pick(ctx, owner, rangeNodePorts, a.randomPort, a.portMax-a.portMin+1, 0)
				if err != nil {
					return fail(err)
				}
				reserved = append(reserved, key)
				held[key] = true
				n, _ := strconv.Atoi(port)
				p.NodePort = int32(n)
				continue
			}
			if int(p.NodePort) < a.portMin || int(p.NodePort) > a.portMax {
				return fail(apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name,
					field.ErrorList{field.Invalid(path, p.NodePort, fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %d-%d", a.portMin, a.portMax))}))
			}
			if err := reserve(rangeNodePorts+strconv.Itoa(int(p.NodePort)), path, p.NodePort); err != nil {
				return fail(err)
			}
		}
	} else {
		for i := range spec.Ports {
			spec.Ports[i].NodePort = 0
		}
	}
	return undo, nil
}

// release frees what old held and svc (nil on delete) no longer does.
func (a *serviceAllocator) release(ctx context.Context, old, svc *corev1.Service) {
	keep := map[string]bool{}
	if svc != nil {
		for _, k := range allocationsOf(svc) {
			keep[k] = true
		}
	}
	for _, k := range allocationsOf(old) {
		if !keep[k] {
			_, _ = a.store.Delete(context.WithoutCancel(ctx), k, 0)
		}
	}
}

// pick reserves a free value: random probes first, above the first
// static values, then a scan of the whole range, so a nearly full range
// still finds its last free address.
func (a *serviceAllocator) pick(ctx context.Context, owner []byte, prefix string, random func(int) string, size, static int) (string, string, error) {
	try := func(v string) (bool, error) {
		_, err := a.store.Create(ctx, prefix+v, owner)
		if errors.Is(err, storage.ErrExists) {
			return false, nil
		}
		return err == nil, err
	}
	for i := 0; i < 32 && static < size; i++ {
		v := random(static + rand.IntN(size-static))
		if ok, err := try(v); ok || err != nil {
			return v, prefix + v, err
		}
	}
	for i := 0; i < size; i++ {
		v := random(i)
		if ok, err := try(v); ok || err != nil {
			return v, prefix + v, err
		}
	}
	what := "IPs"
	if prefix == rangeNodePorts {
		what = "node ports"
	}
	return "", "", apierrors.NewInternalError(fmt.Errorf("range is full: no free service %s", what))
}

// staticBand is how many addresses at the bottom of a range of size
// allocatable IPs random allocation leaves to the ones users and add-ons
// choose (kube-dns's tenth address), as Kubernetes does: size/16, at
// least 16 and at most 256. They are still handed out once the rest is
// full.
func staticBand(size int) int {
	return min(max(16, size/16), 256, size)
}

// ipCount is the number of allocatable IPs: the network and broadcast
// addresses and the first address (the `kubernetes` service) are skipped.
func (a *serviceAllocator) ipCount() int {
	ones, bits := a.cidr.Mask.Size()
	return 1<<(bits-ones) - 3
}

func (a *serviceAllocator) randomIP(i int) string {
	base := binary.BigEndian.Uint32(a.cidr.IP.To4())
	ip := make(net.IP, 4)
	binary.BigEndian.PutUint32(ip, base+2+uint32(i))
	return ip.String()
}

func (a *serviceAllocator) randomPort(i int) string { return strconv.Itoa(a.portMin + i) }

func (a *serviceAllocator) Before(ctx context.Context, obj, old runtime.Object) (func(), error) {
	if obj == nil {
		return func() {}, nil
	}
	var prev *corev1.Service
	if old != nil {
		prev = old.(*corev1.Service)
	}
	return a.allocate(ctx, obj.(*corev1.Service), prev)
}

func (a *serviceAllocator) After(ctx context.Context, obj, old runtime.Object) {
	if old == nil {
		return
	}
	var svc *corev1.Service
	if obj != nil {
		svc = obj.(*corev1.Service)
	}
	a.release(ctx, old.(*corev1.Service), svc)
}

// Defaults.

func defaultService(svc *corev1.Service) {
	spec := &svc.Spec
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityNone:
		spec.SessionAffinityConfig = nil
	case corev1.ServiceAffinityClientIP:
		c := spec.SessionAffinityConfig
		if c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
			spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{
				ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To(corev1.DefaultClientIPServiceAffinitySeconds)},
			}
		}
	}
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	externallyAccessible := spec.Type == corev1.ServiceTypeLoadBalancer ||
		spec.Type == corev1.ServiceTypeNodePort ||
		(spec.Type == corev1.ServiceTypeClusterIP && len(spec.ExternalIPs) > 0)
	if externallyAccessible && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if spec.InternalTrafficPolicy == nil && spec.Type != corev1.ServiceTypeExternalName {
		spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer {
		if spec.AllocateLoadBalancerNodePorts == nil {
			spec.AllocateLoadBalancerNodePorts = ptr.To(true)
		}
		for i := range svc.Status.LoadBalancer.Ingress {
			ing := &svc.Status.LoadBalancer.Ingress[i]
			if ing.IP != "" && ing.IPMode == nil {
				ing.IPMode = ptr.To(corev1.LoadBalancerIPModeVIP)
			}
		}
	}
	defaultServiceIPFields(spec)
}

// defaultServiceIPFields normalizes clusterIP/clusterIPs and fills the IP
// family fields the way the upstream service registry does for a
// single-stack cluster. ExternalName services carry none of them.
func defaultServiceIPFields(spec *corev1.ServiceSpec) {
	if spec.Type == corev1.ServiceTypeExternalName {
		return
	}
	if spec.ClusterIP == "" && len(spec.ClusterIPs) > 0 {
		spec.ClusterIP = spec.ClusterIPs[0]
	}
	if spec.ClusterIP != "" && len(spec.ClusterIPs) == 0 {
		spec.ClusterIPs = []string{spec.ClusterIP}
	}
	if spec.IPFamilyPolicy == nil {
		spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
	}
	if len(spec.IPFamilies) == 0 {
		family := corev1.IPv4Protocol
		if ip := net.ParseIP(spec.ClusterIP); ip != nil && ip.To4() == nil {
			family = corev1.IPv6Protocol
		}
		spec.IPFamilies = []corev1.IPFamily{family}
	}
}

// Validation.

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

func validateService(svc *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	specPath := field.NewPath("spec")
	allErrs := validation.Enum(spec.Type, supportedServiceTypes, specPath.Child("type"))

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
	allErrs = append(allErrs, validation.Labels(spec.Selector, specPath.Child("selector"))...)
	allErrs = append(allErrs, validateSessionAffinity(spec, specPath)...)
	for i, ip := range spec.ExternalIPs {
		allErrs = append(allErrs, utilvalidation.IsValidIP(specPath.Child("externalIPs").Index(i), ip)...)
	}

	externallyAccessible := spec.Type == corev1.ServiceTypeLoadBalancer || spec.Type == corev1.ServiceTypeNodePort ||
		(spec.Type == corev1.ServiceTypeClusterIP && len(spec.ExternalIPs) > 0)
	etpPath := specPath.Child("externalTrafficPolicy")
	if externallyAccessible {
		allErrs = append(allErrs, validation.Enum(spec.ExternalTrafficPolicy, supportedExternalPolicies, etpPath)...)
	} else if spec.ExternalTrafficPolicy != "" {
		allErrs = append(allErrs, field.Invalid(etpPath, spec.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
	}
	if spec.Type != corev1.ServiceTypeExternalName {
		itpPath := specPath.Child("internalTrafficPolicy")
		if spec.InternalTrafficPolicy == nil {
			allErrs = append(allErrs, field.Required(itpPath, ""))
		} else {
			allErrs = append(allErrs, validation.Enum(*spec.InternalTrafficPolicy, supportedInternalPolicies, itpPath)...)
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
		allErrs = append(allErrs, validation.Enum(*spec.IPFamilyPolicy, supportedIPFamilyPolicies, specPath.Child("ipFamilyPolicy"))...)
	}
	famPath := specPath.Child("ipFamilies")
	if len(spec.IPFamilies) > 2 {
		allErrs = append(allErrs, field.TooMany(famPath, len(spec.IPFamilies), 2))
	}
	seen := sets.New[corev1.IPFamily]()
	for i, f := range spec.IPFamilies {
		allErrs = append(allErrs, validation.Enum(f, supportedIPFamilies, famPath.Index(i))...)
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
			allErrs = append(allErrs, validation.DNS1123Label(p.Name, namePath)...)
			if names.Has(p.Name) {
				allErrs = append(allErrs, field.Duplicate(namePath, p.Name))
			}
			names.Insert(p.Name)
		}
		allErrs = append(allErrs, validation.PortNumber(p.Port, portPath.Child("port"))...)
		allErrs = append(allErrs, validation.Protocol(p.Protocol, portPath.Child("protocol"))...)
		key := fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if portProtos.Has(key) {
			allErrs = append(allErrs, field.Duplicate(portPath, key))
		}
		portProtos.Insert(key)
		if spec.Type != corev1.ServiceTypeExternalName {
			allErrs = append(allErrs, validation.PortNumOrName(p.TargetPort, portPath.Child("targetPort"))...)
		}
		if p.AppProtocol != nil {
			allErrs = append(allErrs, validation.QualifiedName(*p.AppProtocol, portPath.Child("appProtocol"))...)
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
	allErrs := validation.Enum(spec.SessionAffinity, supportedSessionAffinities, specPath.Child("sessionAffinity"))
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

// validateServiceUpdate keeps an allocated cluster IP fixed unless the
// service becomes, or stops being, ExternalName.
func validateServiceUpdate(svc, old *corev1.Service) field.ErrorList {
	allErrs := field.ErrorList{}
	if svc.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName {
		return allErrs
	}
	specPath := field.NewPath("spec")
	if old.Spec.ClusterIP != "" {
		allErrs = append(allErrs, validation.Immutable(svc.Spec.ClusterIP, old.Spec.ClusterIP, specPath.Child("clusterIP"))...)
	}
	if len(old.Spec.ClusterIPs) > 0 && len(svc.Spec.ClusterIPs) > 0 && old.Spec.ClusterIPs[0] != svc.Spec.ClusterIPs[0] {
		allErrs = append(allErrs, field.Invalid(specPath.Child("clusterIPs").Index(0), svc.Spec.ClusterIPs[0], "may not change once set"))
	}
	return allErrs
}

// The table.

var servicePrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Type", "string", corev1.ServiceSpec{}.SwaggerDoc()["type"]),
		printers.Column("Cluster-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["clusterIP"]),
		printers.Column("External-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["externalIPs"]),
		printers.Column("Port(s)", "string", corev1.ServiceSpec{}.SwaggerDoc()["ports"]),
		printers.AgeColumn(),
		printers.Wide(printers.Column("Selector", "string", corev1.ServiceSpec{}.SwaggerDoc()["selector"])),
	},
	serviceCells,
)

func serviceCells(svc *corev1.Service, now time.Time) []interface{} {
	clusterIP := svc.Spec.ClusterIP
	if len(svc.Spec.ClusterIPs) > 0 {
		clusterIP = svc.Spec.ClusterIPs[0]
	}
	return []interface{}{
		svc.Name,
		string(serviceType(svc)),
		printers.OrDefault(clusterIP, printers.None),
		serviceExternalIP(svc),
		printers.OrDefault(servicePorts(svc.Spec.Ports), printers.None),
		printers.Age(svc.CreationTimestamp, now),
		labels.FormatLabels(svc.Spec.Selector),
	}
}

// serviceType is the spec type, ClusterIP when unset (the API default).
func serviceType(svc *corev1.Service) corev1.ServiceType {
	if svc.Spec.Type == "" {
		return corev1.ServiceTypeClusterIP
	}
	return svc.Spec.Type
}

// serviceExternalIP renders EXTERNAL-IP: external IPs, load balancer ingress
// ("<pending>" until assigned) or the external name.
func serviceExternalIP(svc *corev1.Service) string {
	switch serviceType(svc) {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		return printers.OrDefault(strings.Join(svc.Spec.ExternalIPs, ","), printers.None)
	case corev1.ServiceTypeLoadBalancer:
		var ips []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			ips = append(ips, printers.OrDefault(in.IP, in.Hostname))
		}
		ips = append(printers.SortedUnique(ips), svc.Spec.ExternalIPs...)
		return printers.OrDefault(strings.Join(ips, ","), "<pending>")
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return printers.Unknown
}

// servicePorts renders "80/TCP" or, with a node port, "80:30080/TCP".
func servicePorts(ports []corev1.ServicePort) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		proto := printers.OrDefault(string(p.Protocol), string(corev1.ProtocolTCP))
		if p.NodePort > 0 {
			parts[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, proto)
		} else {
			parts[i] = fmt.Sprintf("%d/%s", p.Port, proto)
		}
	}
	return strings.Join(parts, ",")
}
