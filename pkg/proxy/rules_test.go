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
			"add rule ip minik8s-proxy services fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports",
			// Localhost NodePorts, for the node itself only.
			"add rule ip minik8s-proxy services ip daddr 127.0.0.0/8 fib saddr type local meta l4proto . th dport vmap @service-nodeports",
			"add rule ip minik8s-proxy reject-services ip daddr 127.0.0.0/8 fib saddr type local meta l4proto . th dport @no-endpoint-nodeports goto refuse",
			"goto svc-",
			// The localnet guard.
			`add rule ip minik8s-proxy filter-input ip daddr 127.0.0.0/8 iif != "lo" ct state & (established | related) == 0 ct status & dnat == 0 drop`,
		},
	}, {
		name: "ports a ClusterIP does not define are refused after service dispatch",
		svcs: []*corev1.Service{service("web", "10.96.0.10", []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 0), port("https", corev1.ProtocolTCP, 443, 0)}),
			service("empty", "10.96.0.11", web)},
		eps: []*discoveryv1.EndpointSlice{webEPs},
		want: []string{
			"add element ip minik8s-proxy cluster-ips { 10.96.0.10 }",
			"add element ip minik8s-proxy cluster-ips { 10.96.0.11 }",
			"add rule ip minik8s-proxy cluster-ips-check ip daddr @cluster-ips goto refuse",
			"add rule ip minik8s-proxy filter-forward ct state new jump cluster-ips-check",
			"add rule ip minik8s-proxy filter-output-post-dnat ct state new jump cluster-ips-check",
			"add chain ip minik8s-proxy filter-output-post-dnat { type filter hook output priority -90 ; }",
		},
		avoid: []string{"cluster-ips-check ip daddr 10.96.0.0/12"}, // no ServiceCIDR
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

// TestRenderServiceCIDRAndLocalhost: with a ServiceCIDR, both modes
// refuse the rest of it too (iptables with one rule for it and one per
// ClusterIP outside it); without localhost NodePorts, 127.0.0.0/8 leads
// to none (the guard stays); a ServiceCIDR that is not an IPv4 CIDR is
// refused.
func TestRenderServiceCIDRAndLocalhost(t *testing.T) {
	svcs := []*corev1.Service{service("web", "10.96.0.10", []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 30080)}, nodePortType),
		service("old", "172.20.0.5", []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 0)})}
	eps := []*discoveryv1.EndpointSlice{slice("web", []string{"10.244.1.2"}, epPort("http", corev1.ProtocolTCP, 8080))}
	cfg := Config{Client: fake.NewClientset(), ClusterCIDR: "10.244.0.0/16", ServiceCIDR: "10.96.0.0/12", LocalhostNodePorts: ptr.To(false)}

	nftCfg := cfg
	nft := newFakeNFT()
	nftCfg.NFT = nft
	p, err := New(nftCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Sync(context.Background(), svcs, eps); err != nil {
		t.Fatal(err)
	}
	dump := nft.Dump()
	checkRules(t, dump, []string{
		"add rule ip minik8s-proxy cluster-ips-check ip daddr @cluster-ips goto refuse",
		"add rule ip minik8s-proxy cluster-ips-check ip daddr 10.96.0.0/12 goto refuse",
		"add element ip minik8s-proxy cluster-ips { 172.20.0.5 }",
		"add rule ip minik8s-proxy services fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports",
	}, []string{"add rule ip minik8s-proxy filter-input ip daddr 127.0.0.0/8"}, []string{"fib saddr type local meta l4proto"})

	iptCfg := cfg
	run := &fakeRunner{}
	iptCfg.Mode, iptCfg.Runner = ModeIPTables, run
	p, err = New(iptCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Sync(context.Background(), svcs, eps); err != nil {
		t.Fatal(err)
	}
	in := run.restores[0]
	checkRules(t, in, []string{
		`-A MINIK8S-SERVICES -d 172.20.0.5/32 -m comment --comment "default/old has no such port" -j MINIK8S-REFUSE`,
		`-A MINIK8S-SERVICES -d 10.96.0.0/12 -m comment --comment "no Service has this address and port" -j MINIK8S-REFUSE`,
		"-A MINIK8S-SERVICES ! -d 127.0.0.0/8 -m addrtype --dst-type LOCAL -j MINIK8S-NODEPORTS",
	}, []string{"-A MINIK8S-FIREWALL ! -i lo -d 127.0.0.0/8 "}, []string{"-d 127.0.0.0/8 -m addrtype --src-type LOCAL", "-d 10.96.0.10/32 -m comment"})

	for _, bad := range []string{"10.96.0.0", "fd00::/108", "nonsense"} {
		cfg.ServiceCIDR, cfg.NFT = bad, newFakeNFT()
		if _, err := New(cfg); err == nil {
			t.Errorf("ServiceCIDR %q accepted", bad)
		}
	}
}
