package dns

import (
	"fmt"
	"net/netip"
	"strconv"

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
	// MetricsPortName is the port of CoreDNS's /metrics, as in
	// Kubernetes' kube-dns Service (9153/TCP).
	MetricsPortName = "metrics"
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
// clusterIP, UDP and TCP 53 to CoreDNS's port on the host and, when
// metricsPort is not 0, TCP 9153 (metrics) to CoreDNS's metrics port,
// annotated for Prometheus' service-endpoints job as Kubernetes' kube-dns
// Service is (prometheus.io/port names the port on the endpoints, the
// host's). Without metrics the Service says prometheus.io/scrape "false",
// so a Service an earlier run annotated is no longer scraped.
func KubeDNS(clusterIP netip.Addr, port, metricsPort int32) hostservice.Service {
	svc := hostservice.Service{
		Namespace: metav1.NamespaceSystem, Name: ServiceName, ClusterIP: clusterIP.String(), ManagedBy: ManagedBy,
		Labels:      map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"},
		Annotations: map[string]string{"prometheus.io/scrape": "false"},
		Ports: []hostservice.Port{
			{Name: PortName, Protocol: corev1.ProtocolUDP, Port: ServicePort, TargetPort: port},
			{Name: TCPPortName, Protocol: corev1.ProtocolTCP, Port: ServicePort, TargetPort: port},
		},
	}
	if metricsPort != 0 {
		svc.Annotations = map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": strconv.Itoa(int(metricsPort))}
		svc.Ports = append(svc.Ports, hostservice.Port{Name: MetricsPortName, Protocol: corev1.ProtocolTCP,
			Port: DefaultMetricsPort, TargetPort: metricsPort})
	}
	return svc
}
