// Package hostservice publishes a program that runs on a host rather
// than in a pod (CoreDNS, the gateway's nginx) as a Service, so pods
// reach it like any other: a selectorless Service plus one EndpointSlice,
// managed by us, naming the address at which pods reach the host.
//
// That address is either given (a host address on the nodes' network) or
// the pod-bridge gateway of the node the program runs on: the first
// address of its podCIDR, which every pod of the cluster can reach (its
// own node's pods over the bridge, the others over the host-gw routes).
//
// It owns the Service, the slice named <service>-minik8s and the v1
// Endpoints of the same name (for clients that still read them); the proxy
// (pkg/proxy) does the rest, as for every Service.
package hostservice

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Service describes the Service to publish.
type Service struct {
	Namespace, Name string
	Labels          map[string]string
	// Annotations are set on the Service (prometheus.io/scrape and
	// friends, which Prometheus' service-endpoints job reads); others
	// that it has are kept.
	Annotations map[string]string
	// ClusterIP is fixed (kube-dns's 10.96.0.10) or empty: allocated by
	// the apiserver and kept.
	ClusterIP string
	Ports     []Port
	// ManagedBy labels the slice (endpointslice.kubernetes.io/managed-by)
	// so the EndpointSlice controller leaves it alone.
	ManagedBy string
}

// Port is one port of the Service: Port on the clusterIP, TargetPort
// where the program listens on the host.
type Port struct {
	Name       string
	Protocol   corev1.Protocol
	Port       int32
	TargetPort int32
}

// SliceName is the name of the EndpointSlice published for service.
func SliceName(service string) string { return service + "-minik8s" }

// Endpoint is where pods reach the program.
type Endpoint struct {
	Address  netip.Addr
	NodeName string // optional
}

// Ensure converges the Service and its slice onto ep and returns the
// Service. Level-based: it fixes whatever it finds; a Service with
// another fixed clusterIP is replaced (clusterIP is immutable).
func Ensure(ctx context.Context, client kubernetes.Interface, svc Service, ep Endpoint) (*corev1.Service, error) {
	out, err := ensureService(ctx, client, svc)
	if err != nil {
		return nil, fmt.Errorf("service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	if err := ensureSlice(ctx, client, svc, ep); err != nil {
		return nil, fmt.Errorf("endpointslice %s/%s: %w", svc.Namespace, SliceName(svc.Name), err)
	}
	// The v1 Endpoints too, for clients that still read them (as the
	// apiserver writes both for default/kubernetes).
	if err := ensureEndpoints(ctx, client, svc, ep); err != nil {
		return nil, fmt.Errorf("endpoints %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return out, nil
}

func desiredEndpoints(svc Service, ep Endpoint) *corev1.Endpoints {
	addr := corev1.EndpointAddress{IP: ep.Address.String()}
	if ep.NodeName != "" {
		addr.NodeName = ptr.To(ep.NodeName)
	}
	subset := corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{addr}}
	for _, p := range svc.Ports {
		subset.Ports = append(subset.Ports, corev1.EndpointPort{Name: p.Name, Protocol: p.Protocol, Port: p.TargetPort})
	}
	return &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace, Labels: svc.Labels},
		Subsets:    []corev1.EndpointSubset{subset},
	}
}

func ensureEndpoints(ctx context.Context, client kubernetes.Interface, svc Service, ep Endpoint) error {
	endpoints := client.CoreV1().Endpoints(svc.Namespace)
	want := desiredEndpoints(svc, ep)
	cur, err := endpoints.Get(ctx, svc.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = endpoints.Create(ctx, want, metav1.CreateOptions{})
		return err
	case err != nil:
		return err
	}
	if equality.Semantic.DeepEqual(cur.Subsets, want.Subsets) {
		return nil
	}
	cur.Subsets = want.Subsets
	_, err = endpoints.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}

func desiredService(svc Service) *corev1.Service {
	out := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace, Labels: svc.Labels, Annotations: svc.Annotations},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: svc.ClusterIP},
	}
	for _, p := range svc.Ports {
		out.Spec.Ports = append(out.Spec.Ports, corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port, TargetPort: intstr.FromInt32(p.TargetPort)})
	}
	return out
}

func ensureService(ctx context.Context, client kubernetes.Interface, svc Service) (*corev1.Service, error) {
	services := client.CoreV1().Services(svc.Namespace)
	want := desiredService(svc)
	cur, err := services.Get(ctx, svc.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return services.Create(ctx, want, metav1.CreateOptions{})
	case err != nil:
		return nil, err
	}
	if want.Spec.ClusterIP != "" && cur.Spec.ClusterIP != want.Spec.ClusterIP {
		if err := services.Delete(ctx, svc.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &cur.UID},
		}); err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		return services.Create(ctx, want, metav1.CreateOptions{})
	}
	if portsEqual(cur.Spec.Ports, want.Spec.Ports) && len(cur.Spec.Selector) == 0 &&
		hasAll(cur.Labels, want.Labels) && hasAll(cur.Annotations, want.Annotations) {
		return cur, nil
	}
	cur.Spec.Ports, cur.Spec.Selector = want.Spec.Ports, nil
	cur.Labels = withAll(cur.Labels, want.Labels)
	cur.Annotations = withAll(cur.Annotations, want.Annotations)
	return services.Update(ctx, cur, metav1.UpdateOptions{})
}

// hasAll says whether m holds every key of want, with its value.
func hasAll(m, want map[string]string) bool {
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// withAll is m with want's keys set; m's others are kept.
func withAll(m, want map[string]string) map[string]string {
	if len(want) == 0 {
		return m
	}
	if m == nil {
		m = map[string]string{}
	}
	for k, v := range want {
		m[k] = v
	}
	return m
}

func portsEqual(a, b []corev1.ServicePort) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Protocol != b[i].Protocol || a[i].Port != b[i].Port || a[i].TargetPort != b[i].TargetPort {
			return false
		}
	}
	return true
}

func desiredSlice(svc Service, ep Endpoint) *discoveryv1.EndpointSlice {
	e := discoveryv1.Endpoint{
		Addresses:  []string{ep.Address.String()},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
	}
	if ep.NodeName != "" {
		e.NodeName = ptr.To(ep.NodeName)
	}
	family := discoveryv1.AddressTypeIPv4
	if ep.Address.Is6() {
		family = discoveryv1.AddressTypeIPv6
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: SliceName(svc.Name), Namespace: svc.Namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: svc.ManagedBy},
		},
		AddressType: family,
		Endpoints:   []discoveryv1.Endpoint{e},
	}
	for _, p := range svc.Ports {
		slice.Ports = append(slice.Ports, discoveryv1.EndpointPort{Name: ptr.To(p.Name), Protocol: ptr.To(p.Protocol), Port: ptr.To(p.TargetPort)})
	}
	return slice
}

func ensureSlice(ctx context.Context, client kubernetes.Interface, svc Service, ep Endpoint) error {
	slices := client.DiscoveryV1().EndpointSlices(svc.Namespace)
	want := desiredSlice(svc, ep)
	cur, err := slices.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = slices.Create(ctx, want, metav1.CreateOptions{})
		return err
	case err != nil:
		return err
	}
	if cur.AddressType != want.AddressType {
		if err := slices.Delete(ctx, want.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		_, err = slices.Create(ctx, want, metav1.CreateOptions{})
		return err
	}
	if equality.Semantic.DeepEqual(cur.Labels, want.Labels) && equality.Semantic.DeepEqual(cur.Endpoints, want.Endpoints) &&
		equality.Semantic.DeepEqual(cur.Ports, want.Ports) {
		return nil
	}
	cur.Labels, cur.Endpoints, cur.Ports = want.Labels, want.Endpoints, want.Ports
	_, err = slices.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}

// PublishConfig is what Publish needs.
type PublishConfig struct {
	Client  kubernetes.Interface
	Service Service
	// Address is where pods reach the host. When it is not set, the
	// pod-bridge gateway of NodeName is used, once the node has a podCIDR.
	Address  netip.Addr
	NodeName string
	// Interval is how often the Service and slice are re-checked
	// (default 30s).
	Interval time.Duration
	// Published, when set, is called after each convergence with the
	// Service (to learn its allocated clusterIP).
	Published func(*corev1.Service)
	Logger    *slog.Logger
}

// Publish keeps the Service pointing at the host until ctx ends.
// Level-based: each round reads what it needs and converges.
func Publish(ctx context.Context, cfg PublishConfig) error {
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	var published netip.Addr
	for {
		wait := cfg.Interval
		addr, svc, err := publishOnce(ctx, cfg)
		switch {
		case err != nil:
			log.Warn("publish host service", "service", cfg.Service.Namespace+"/"+cfg.Service.Name, "err", err)
			wait = 2 * time.Second
		case !addr.IsValid():
			wait = time.Second // the node has no pod CIDR yet
		default:
			if addr != published {
				log.Info("host service published", "service", cfg.Service.Namespace+"/"+cfg.Service.Name,
					"clusterIP", svc.Spec.ClusterIP, "endpoint", addr)
				published = addr
			}
			if cfg.Published != nil {
				cfg.Published(svc)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// publishOnce converges the Service; it returns no address while the
// node is not registered or has no pod CIDR.
func publishOnce(ctx context.Context, cfg PublishConfig) (netip.Addr, *corev1.Service, error) {
	addr := cfg.Address
	if !addr.IsValid() {
		node, err := cfg.Client.CoreV1().Nodes().Get(ctx, cfg.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return netip.Addr{}, nil, nil
		}
		if err != nil {
			return netip.Addr{}, nil, err
		}
		if node.Spec.PodCIDR == "" {
			return netip.Addr{}, nil, nil
		}
		if addr, err = Gateway(node.Spec.PodCIDR); err != nil {
			return netip.Addr{}, nil, err
		}
	}
	svc, err := Ensure(ctx, cfg.Client, cfg.Service, Endpoint{Address: addr, NodeName: cfg.NodeName})
	return addr, svc, err
}

// Gateway is a node's pod-bridge address: the first address of its pod
// CIDR (pkg/kubelet/network), which every pod of the cluster can reach.
func Gateway(podCIDR string) (netip.Addr, error) {
	p, err := netip.ParsePrefix(podCIDR)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("pod CIDR %q: %w", podCIDR, err)
	}
	return p.Masked().Addr().Next(), nil
}
