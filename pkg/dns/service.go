package dns

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/hostservice"
)

// Names of the DNS Service and its ports.
const (
	ServiceName = "kube-dns"
	ManagedBy   = "dns.minik8s.io"
	PortName    = "dns"
	TCPPortName = "dns-tcp"
	ServicePort = 53
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

// KubeDNS is kube-system/kube-dns as hostservice publishes it: clusterIP
// clusterIP, UDP and TCP 53 to CoreDNS's port on the host.
func KubeDNS(clusterIP netip.Addr, port int32) hostservice.Service {
	return hostservice.Service{
		Namespace: metav1.NamespaceSystem, Name: ServiceName, ClusterIP: clusterIP.String(), ManagedBy: ManagedBy,
		Labels: map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"},
		Ports: []hostservice.Port{
			{Name: PortName, Protocol: corev1.ProtocolUDP, Port: ServicePort, TargetPort: port},
			{Name: TCPPortName, Protocol: corev1.ProtocolTCP, Port: ServicePort, TargetPort: port},
		},
	}
}
