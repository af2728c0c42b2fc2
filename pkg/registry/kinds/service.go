package kinds

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
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
		Default:          defaulter(defaults.Service),
		NameRule:         apivalidation.NameIsDNSLabel,
		Validate:         validator(validation.Service),
		ValidateUpdate:   updateValidator(validation.ServiceUpdate),
		Printer:          printers.Service,
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
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "", nil
		svc.Spec.IPFamilies, svc.Spec.IPFamilyPolicy = nil, nil
		return
	}
	if svc.Spec.ClusterIP == "" && prev.Spec.Type != corev1.ServiceTypeExternalName {
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = prev.Spec.ClusterIP, prev.Spec.ClusterIPs
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
