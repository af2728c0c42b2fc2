package hostservice

import (
	"context"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func dnsLike(clusterIP string) Service {
	return Service{
		Namespace: "kube-system", Name: "kube-dns", ClusterIP: clusterIP, ManagedBy: "dns.minik8s.io",
		Labels: map[string]string{"k8s-app": "kube-dns"},
		Ports: []Port{
			{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: 10053},
			{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, TargetPort: 10053},
		},
	}
}

func TestEnsureConverges(t *testing.T) {
	ctx := context.Background()
	stale := desiredService(dnsLike("10.96.0.99"))
	stale.Spec.Selector = map[string]string{"k8s-app": "kube-dns"}
	client := fake.NewClientset(stale)
	ep := Endpoint{Address: netip.MustParseAddr("10.244.0.1"), NodeName: "n1"}
	for range 2 { // the second round changes nothing
		if _, err := Ensure(ctx, client, dnsLike("10.96.0.10"), ep); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := client.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != "10.96.0.10" || len(svc.Spec.Selector) != 0 || len(svc.Spec.Ports) != 2 ||
		svc.Spec.Ports[0].Protocol != corev1.ProtocolUDP || svc.Spec.Ports[0].Port != 53 || svc.Spec.Ports[0].TargetPort.IntVal != 10053 {
		t.Errorf("service = %+v", svc.Spec)
	}
	slice, err := client.DiscoveryV1().EndpointSlices("kube-system").Get(ctx, SliceName("kube-dns"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if slice.Labels["kubernetes.io/service-name"] != "kube-dns" || slice.Labels["endpointslice.kubernetes.io/managed-by"] != "dns.minik8s.io" {
		t.Errorf("slice labels = %v", slice.Labels)
	}
	if len(slice.Endpoints) != 1 || slice.Endpoints[0].Addresses[0] != "10.244.0.1" || *slice.Endpoints[0].NodeName != "n1" ||
		len(slice.Ports) != 2 || *slice.Ports[0].Port != 10053 || *slice.Ports[1].Name != "dns-tcp" {
		t.Errorf("slice = %+v", slice)
	}
	eps, err := client.CoreV1().Endpoints("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil || len(eps.Subsets) != 1 || eps.Subsets[0].Addresses[0].IP != "10.244.0.1" || len(eps.Subsets[0].Ports) != 2 || eps.Subsets[0].Ports[1].Port != 10053 {
		t.Errorf("endpoints = %+v, %v", eps, err)
	}
	// The endpoint moves (another pod CIDR): the slice follows.
	ep.Address = netip.MustParseAddr("10.244.7.1")
	if _, err := Ensure(ctx, client, dnsLike("10.96.0.10"), ep); err != nil {
		t.Fatal(err)
	}
	slice, _ = client.DiscoveryV1().EndpointSlices("kube-system").Get(ctx, SliceName("kube-dns"), metav1.GetOptions{})
	if slice.Endpoints[0].Addresses[0] != "10.244.7.1" {
		t.Errorf("slice endpoint = %v, want 10.244.7.1", slice.Endpoints[0].Addresses)
	}
}

// A Service without a fixed clusterIP keeps the one it was given.
func TestEnsureKeepsAllocatedClusterIP(t *testing.T) {
	ctx := context.Background()
	cur := desiredService(dnsLike(""))
	cur.Spec.ClusterIP = "10.96.4.4"
	client := fake.NewClientset(cur)
	svc, err := Ensure(ctx, client, dnsLike(""), Endpoint{Address: netip.MustParseAddr("172.30.0.254")})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != "10.96.4.4" {
		t.Errorf("clusterIP = %q, want the allocated 10.96.4.4 kept", svc.Spec.ClusterIP)
	}
}

func TestGateway(t *testing.T) {
	if gw, err := Gateway("10.244.3.0/24"); err != nil || gw.String() != "10.244.3.1" {
		t.Errorf("Gateway = %v, %v", gw, err)
	}
	if _, err := Gateway("nonsense"); err == nil {
		t.Error("Gateway of a bad CIDR should fail")
	}
}

// The Service's annotations are set, on create and on a Service that
// lacks them; annotations of others are kept.
func TestEnsureAnnotations(t *testing.T) {
	ctx := context.Background()
	svc := dnsLike("10.96.0.10")
	svc.Annotations = map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9153"}
	ep := Endpoint{Address: netip.MustParseAddr("10.244.0.1")}

	client := fake.NewClientset()
	got, err := Ensure(ctx, client, svc, ep)
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations["prometheus.io/scrape"] != "true" || got.Annotations["prometheus.io/port"] != "9153" {
		t.Errorf("created with annotations %v", got.Annotations)
	}

	old := desiredService(dnsLike("10.96.0.10"))
	old.Annotations = map[string]string{"someone.else/note": "kept", "prometheus.io/port": "1"}
	client = fake.NewClientset(old)
	for range 2 {
		if _, err := Ensure(ctx, client, svc, ep); err != nil {
			t.Fatal(err)
		}
	}
	got, err = client.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"someone.else/note": "kept", "prometheus.io/scrape": "true", "prometheus.io/port": "9153"}
	if len(got.Annotations) != len(want) {
		t.Errorf("annotations = %v, want %v", got.Annotations, want)
	}
	for k, v := range want {
		if got.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, got.Annotations[k], v)
		}
	}
}
