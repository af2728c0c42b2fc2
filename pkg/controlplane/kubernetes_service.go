package controlplane

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"

	"github.com/minik8s/minik8s/pkg/apiserver/authz"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/hostservice"
)

// KubernetesServiceIP is the clusterIP of default/kubernetes: the first
// address of the service CIDR (10.96.0.1), which the allocator never hands
// out at random.
func KubernetesServiceIP(serviceCIDR string) (netip.Addr, error) {
	p, err := netip.ParsePrefix(serviceCIDR)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("service CIDR %q: %w", serviceCIDR, err)
	}
	return p.Masked().Addr().Next(), nil
}

// KubernetesService is default/kubernetes as hostservice publishes it:
// how pods reach the apiserver (port 443 to apiserverPort), what in-cluster
// clients find in KUBERNETES_SERVICE_HOST and at kubernetes.default.svc.
func KubernetesService(serviceCIDR string, apiserverPort int32) (hostservice.Service, error) {
	ip, err := KubernetesServiceIP(serviceCIDR)
	if err != nil {
		return hostservice.Service{}, err
	}
	return hostservice.Service{
		Namespace: metav1.NamespaceDefault, Name: "kubernetes", ClusterIP: ip.String(), ManagedBy: "apiserver.minik8s.io",
		Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"},
		Ports:  []hostservice.Port{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: apiserverPort}},
	}, nil
}

// publishKubernetesService keeps default/kubernetes pointing at
// cfg.AdvertiseAddress and the apiserver's port of cp until ctx ends.
func publishKubernetesService(ctx context.Context, cfg *Config, cp ControlPlane) error {
	port, err := strconv.Atoi(cp.URL[strings.LastIndex(cp.URL, ":")+1:])
	if err != nil {
		return fmt.Errorf("apiserver port of %s: %w", cp.URL, err)
	}
	svc, err := KubernetesService(cfg.ServiceCIDR, int32(port))
	if err != nil {
		return err
	}
	rc, err := componentConfig(cp.URL, cp.Bundle, authz.UserHostServices, "minik8s-apiserver")
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	return hostservice.Publish(ctx, hostservice.PublishConfig{Client: client, Service: svc, Address: cfg.AdvertiseAddress, Logger: cfg.Logger})
}
