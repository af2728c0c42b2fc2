package proxy

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/knftables"
)

func newFakeProxier(t testing.TB, clusterCIDR string) (*Proxier, *knftables.Fake) {
	t.Helper()
	nft := knftables.NewFake(knftables.IPv4Family, TableName)
	p, err := New(Config{Client: fake.NewClientset(), NFT: nft, ClusterCIDR: clusterCIDR})
	if err != nil {
		t.Fatal(err)
	}
	return p, nft
}

func TestRender(t *testing.T) {
	nodePort := func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }
	web := []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 30080)}
	webEPs := slice("web", []string{"10.244.1.2", "10.244.2.3"}, epPort("http", corev1.ProtocolTCP, 8080))
	tests := []struct {
		name        string
		svcs        []*corev1.Service
		eps         []*discoveryv1.EndpointSlice
		want, avoid []string
	}{{
		name: "clusterIP spreads over ready endpoints",
		svcs: []*corev1.Service{service("web", "10.96.0.10", web)},
		eps:  []*discoveryv1.EndpointSlice{webEPs},
		want: []string{
			"add element ip minik8s-proxy service-ips { 10.96.0.10 . tcp . 80 : goto svc-",
			"numgen random mod 2 vmap { 0 : goto ep-",
			"meta l4proto tcp dnat to 10.244.1.2:8080",
			"meta l4proto tcp dnat to 10.244.2.3:8080",
			"ip saddr 10.244.1.2 jump mark-for-masquerade", // hairpin
			"ip saddr != 10.244.0.0/16 jump mark-for-masquerade",
		},
		avoid: []string{"add element ip minik8s-proxy service-nodeports", "add element ip minik8s-proxy no-endpoint-services", "affinity-"},
	}, {
		name: "nodePort",
		svcs: []*corev1.Service{service("web", "10.96.0.10", web, nodePort)},
		eps:  []*discoveryv1.EndpointSlice{webEPs},
		want: []string{
			"add element ip minik8s-proxy service-nodeports { tcp . 30080 : goto nodeport-",
			"fib daddr type local meta l4proto . th dport vmap @service-nodeports",
			"goto svc-",
		},
	}, {
		name: "no endpoints are rejected",
		svcs: []*corev1.Service{service("web", "10.96.0.10", web, nodePort)},
		want: []string{
			"add element ip minik8s-proxy no-endpoint-services { 10.96.0.10 . tcp . 80",
			"add element ip minik8s-proxy no-endpoint-nodeports { tcp . 30080",
			"meta l4proto tcp reject with tcp reset",
		},
		avoid: []string{"svc-", "dnat to"},
	}, {
		name: "not ready endpoints do not count",
		svcs: []*corev1.Service{service("web", "10.96.0.10", web)},
		eps: []*discoveryv1.EndpointSlice{func() *discoveryv1.EndpointSlice {
			s := slice("web", []string{"10.244.1.2"}, epPort("http", corev1.ProtocolTCP, 8080))
			s.Endpoints[0].Conditions.Ready = ptr.To(false)
			return s
		}()},
		want:  []string{"no-endpoint-services { 10.96.0.10 . tcp . 80"},
		avoid: []string{"dnat to"},
	}, {
		name: "session affinity ClientIP",
		svcs: []*corev1.Service{service("web", "10.96.0.10", web, func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}}
		})},
		eps: []*discoveryv1.EndpointSlice{webEPs},
		want: []string{
			"flags dynamic,timeout ; timeout 60s",
			"update @affinity-",
			"ip saddr @affinity-",
		},
	}, {
		name: "multiple ports and UDP",
		svcs: []*corev1.Service{service("dns", "10.96.0.53", []corev1.ServicePort{
			port("dns", corev1.ProtocolUDP, 53, 0), port("dns-tcp", corev1.ProtocolTCP, 53, 0), port("metrics", corev1.ProtocolTCP, 9153, 0)})},
		eps: []*discoveryv1.EndpointSlice{slice("dns", []string{"10.244.1.9"},
			epPort("dns", corev1.ProtocolUDP, 5353), epPort("dns-tcp", corev1.ProtocolTCP, 5353), epPort("metrics", corev1.ProtocolTCP, 9153))},
		want: []string{
			"service-ips { 10.96.0.53 . udp . 53 : goto svc-",
			"service-ips { 10.96.0.53 . tcp . 53 : goto svc-",
			"service-ips { 10.96.0.53 . tcp . 9153 : goto svc-",
			"meta l4proto udp dnat to 10.244.1.9:5353",
			"meta l4proto tcp dnat to 10.244.1.9:5353",
			"meta l4proto tcp dnat to 10.244.1.9:9153",
			"numgen random mod 1 vmap",
		},
	}, {
		name:  "headless services are skipped",
		svcs:  []*corev1.Service{service("db", "None", web)},
		eps:   []*discoveryv1.EndpointSlice{slice("db", []string{"10.244.1.2"}, epPort("http", corev1.ProtocolTCP, 8080))},
		avoid: []string{"dnat to", "add element ip minik8s-proxy no-endpoint-services"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, nft := newFakeProxier(t, "10.244.0.0/16")
			if err := p.Sync(context.Background(), tt.svcs, tt.eps); err != nil {
				t.Fatal(err)
			}
			checkRules(t, nft.Dump(), nil, tt.want, tt.avoid)
		})
	}
}

// TestServiceDeleteRemovesRules: a later sync without the Service leaves
// none of its chains, sets or map elements behind.
func TestServiceDeleteRemovesRules(t *testing.T) {
	p, nft := newFakeProxier(t, "")
	svc := service("web", "10.96.0.10", []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 30080)}, func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	})
	eps := slice("web", []string{"10.244.1.2"}, epPort("http", corev1.ProtocolTCP, 8080))
	ctx := context.Background()
	if err := p.Sync(ctx, []*corev1.Service{svc}, []*discoveryv1.EndpointSlice{eps}); err != nil {
		t.Fatal(err)
	}
	if d := nft.Dump(); !strings.Contains(d, "dnat to 10.244.1.2:8080") || !strings.Contains(d, "nodeport-") {
		t.Fatalf("service not programmed:\n%s", d)
	}
	if err := p.Sync(ctx, nil, []*discoveryv1.EndpointSlice{eps}); err != nil {
		t.Fatal(err)
	}
	d := nft.Dump()
	for _, gone := range []string{"svc-", "ep-", "nodeport-", "affinity-", "10.96.0.10", "30080"} {
		if strings.Contains(d, gone) {
			t.Errorf("%q left after the service was deleted:\n%s", gone, d)
		}
	}
	if !strings.Contains(d, "add chain ip minik8s-proxy services") {
		t.Errorf("base chains missing:\n%s", d)
	}
}
