package dns

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

// Names of the DNS Service and of its EndpointSlice.
const (
	ServiceName   = "kube-dns"
	SliceName     = "kube-dns-minik8s"
	ManagedBy     = "minik8s.io/dns"
	PortName      = "dns"
	TCPPortName   = "dns-tcp"
	ServicePort   = 53
	appLabelKey   = "k8s-app"
	appLabelValue = "kube-dns"
)

// ServiceIP is the DNS Service's clusterIP in serviceCIDR: its tenth
// address, as kubeadm picks (10.96.0.10 in 10.96.0.0/12).
func ServiceIP(serviceCIDR string) (netip.Addr, error) {
	p, err := netip.ParsePrefix(serviceCIDR)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("service CIDR %q: %w", serviceCIDR, err)
	}
	a := p.Masked().Addr()
	for range 10 {
		a = a.Next()
	}
	if !p.Contains(a) {
		return netip.Addr{}, fmt.Errorf("service CIDR %s has no tenth address", p)
	}
	return a, nil
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

// Endpoint says where the kube-dns Service points.
type Endpoint struct {
	// ClusterIP is the Service's clusterIP (ServiceIP of the service CIDR).
	ClusterIP netip.Addr
	// Address and Port are where CoreDNS answers, as pods reach it.
	Address netip.Addr
	Port    int32
	// NodeName is the node hosting Address (optional).
	NodeName string
}

// EnsureService creates or updates kube-system/kube-dns, selectorless with
// clusterIP ep.ClusterIP, and its EndpointSlice naming ep.Address:ep.Port.
// Level-based: it converges whatever it finds; a Service with another
// clusterIP is replaced (clusterIP is immutable).
func EnsureService(ctx context.Context, client kubernetes.Interface, ep Endpoint) error {
	if err := ensureService(ctx, client, ep); err != nil {
		return fmt.Errorf("service %s/%s: %w", metav1.NamespaceSystem, ServiceName, err)
	}
	if err := ensureSlice(ctx, client, ep); err != nil {
		return fmt.Errorf("endpointslice %s/%s: %w", metav1.NamespaceSystem, SliceName, err)
	}
	return nil
}

func desiredService(ep Endpoint) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: ServiceName, Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{appLabelKey: appLabelValue, "kubernetes.io/name": "CoreDNS"},
		},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: ep.ClusterIP.String(),
			Ports: []corev1.ServicePort{
				{Name: PortName, Protocol: corev1.ProtocolUDP, Port: ServicePort, TargetPort: intstr.FromInt32(ep.Port)},
				{Name: TCPPortName, Protocol: corev1.ProtocolTCP, Port: ServicePort, TargetPort: intstr.FromInt32(ep.Port)},
			},
		},
	}
}

func ensureService(ctx context.Context, client kubernetes.Interface, ep Endpoint) error {
	services := client.CoreV1().Services(metav1.NamespaceSystem)
	want := desiredService(ep)
	cur, err := services.Get(ctx, ServiceName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = services.Create(ctx, want, metav1.CreateOptions{})
		return err
	case err != nil:
		return err
	}
	if cur.Spec.ClusterIP != want.Spec.ClusterIP {
		if err := services.Delete(ctx, ServiceName, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &cur.UID},
		}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		_, err = services.Create(ctx, want, metav1.CreateOptions{})
		return err
	}
	if servicePortsEqual(cur.Spec.Ports, want.Spec.Ports) && len(cur.Spec.Selector) == 0 && cur.Labels[appLabelKey] == appLabelValue {
		return nil
	}
	cur.Spec.Ports, cur.Spec.Selector = want.Spec.Ports, nil
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	for k, v := range want.Labels {
		cur.Labels[k] = v
	}
	_, err = services.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}

func servicePortsEqual(a, b []corev1.ServicePort) bool {
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

func desiredSlice(ep Endpoint) *discoveryv1.EndpointSlice {
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
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: SliceName, Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{
				discoveryv1.LabelServiceName: ServiceName,
				discoveryv1.LabelManagedBy:   ManagedBy,
			},
		},
		AddressType: family,
		Endpoints:   []discoveryv1.Endpoint{e},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To(PortName), Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(ep.Port)},
			{Name: ptr.To(TCPPortName), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(ep.Port)},
		},
	}
}

func ensureSlice(ctx context.Context, client kubernetes.Interface, ep Endpoint) error {
	slices := client.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem)
	want := desiredSlice(ep)
	cur, err := slices.Get(ctx, SliceName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = slices.Create(ctx, want, metav1.CreateOptions{})
		return err
	case err != nil:
		return err
	}
	if cur.AddressType != want.AddressType {
		if err := slices.Delete(ctx, SliceName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
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
	Client kubernetes.Interface
	// NodeName is the node on whose pod bridge CoreDNS is reached (the
	// host CoreDNS runs on).
	NodeName string
	// ClusterIP is the Service's clusterIP; Port is CoreDNS's port.
	ClusterIP netip.Addr
	Port      int32
	// Interval is how often the Service and slice are re-checked
	// (default 30s).
	Interval time.Duration
	Logger   *slog.Logger
}

// Publish keeps kube-dns pointing at the pod-bridge gateway of NodeName
// (once the node has a pod CIDR) until ctx ends. Level-based: each round
// reads the Node and converges the Service and slice.
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
		if gw, err := publishOnce(ctx, cfg); err != nil {
			log.Warn("dns: publish kube-dns", "node", cfg.NodeName, "err", err)
			wait = 2 * time.Second
		} else if !gw.IsValid() {
			wait = time.Second // the node has no pod CIDR yet
		} else if gw != published {
			log.Info("dns: kube-dns published", "clusterIP", cfg.ClusterIP, "endpoint", netip.AddrPortFrom(gw, uint16(cfg.Port)))
			published = gw
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// publishOnce converges kube-dns onto the node's gateway; it returns no
// address while the node is not registered or has no pod CIDR.
func publishOnce(ctx context.Context, cfg PublishConfig) (netip.Addr, error) {
	node, err := cfg.Client.CoreV1().Nodes().Get(ctx, cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return netip.Addr{}, nil
	}
	if err != nil {
		return netip.Addr{}, err
	}
	if node.Spec.PodCIDR == "" {
		return netip.Addr{}, nil
	}
	gw, err := Gateway(node.Spec.PodCIDR)
	if err != nil {
		return netip.Addr{}, err
	}
	ep := Endpoint{ClusterIP: cfg.ClusterIP, Address: gw, Port: cfg.Port, NodeName: cfg.NodeName}
	return gw, EnsureService(ctx, cfg.Client, ep)
}
