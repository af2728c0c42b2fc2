package proxy

import (
	"context"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// onNodes puts endpoint i of s on nodes[i].
func onNodes(s *discoveryv1.EndpointSlice, nodes ...string) *discoveryv1.EndpointSlice {
	for i, n := range nodes {
		s.Endpoints[i].NodeName = ptr.To(n)
	}
	return s
}

func internalLocal(s *corev1.Service) {
	s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
}

func externalLocal(s *corev1.Service) {
	s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
}

func nodePortType(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }

// policyCase is one Service "web" (10.96.0.10:80, NodePort 30080 when
// a NodePort) with endpoints 10.244.1.2:8080 and 10.244.2.3:8080 on
// the nodes given, seen from node "n1".
type policyCase struct {
	name  string
	tweak []func(*corev1.Service)
	nodes [2]string // of the two endpoints
	// nft: lines of knftables.Fake's dump, with SVC, EXT, NP, EP1 and
	// EP2 replaced by the chains' names.
	want, avoid []string
	// iptables: lines of the restore input, with SVC, EXT, SEP1, SEP2.
	wantIPT, avoidIPT []string
}

var policyCases = []policyCase{{
	name:  "internal Local spreads over this node's endpoints",
	tweak: []func(*corev1.Service){internalLocal},
	nodes: [2]string{"n1", "n2"},
	want: []string{
		"add rule ip minik8s-proxy SVC ip saddr != 10.244.0.0/16 jump mark-for-masquerade",
		"add rule ip minik8s-proxy SVC numgen random mod 1 vmap { 0 : goto EP1 }",
		"add element ip minik8s-proxy service-ips { 10.96.0.10 . tcp . 80 : goto SVC }",
	},
	avoid: []string{"EP2", "dnat to 10.244.2.3:8080", "EXT", "add element ip minik8s-proxy no-endpoint-services"},
	wantIPT: []string{
		"-A SVC ! -s 10.244.0.0/16 -j MINIK8S-MARK-MASQ",
		`-A SVC -m comment --comment "default/web/tcp/80 -> 10.244.1.2:8080" -j SEP1`,
	},
	avoidIPT: []string{":SEP2 - [0:0]", "10.244.2.3:8080", "-j MINIK8S-MARK-DROP"},
}, {
	name:  "internal Local without endpoints here drops",
	tweak: []func(*corev1.Service){internalLocal},
	nodes: [2]string{"n2", "n2"},
	want: []string{
		"add rule ip minik8s-proxy SVC drop",
		"add element ip minik8s-proxy service-ips { 10.96.0.10 . tcp . 80 : goto SVC }",
	},
	avoid: []string{"dnat to", "add element ip minik8s-proxy no-endpoint-services", "SVC numgen", "SVC ip saddr"},
	wantIPT: []string{
		`-A MINIK8S-SERVICES -d 10.96.0.10/32 -p tcp -m tcp --dport 80 -m comment --comment "default/web/tcp/80" -j SVC`,
		"-A SVC -j MINIK8S-MARK-DROP",
		"-A MINIK8S-MARK-DROP -j MARK --or-mark 0x8000",
		"-A MINIK8S-SERVICES -m mark --mark 0x8000/0x8000 -j DROP",
	},
	avoidIPT: []string{"-j DNAT", `"default/web/tcp/80" -j REJECT`},
}, {
	name:  "external Local NodePort: this node's endpoints, not masqueraded; pods and the node as ClusterIP",
	tweak: []func(*corev1.Service){nodePortType, externalLocal},
	nodes: [2]string{"n1", "n2"},
	want: []string{
		"add element ip minik8s-proxy service-nodeports { tcp . 30080 : goto EXT }",
		"add rule ip minik8s-proxy EXT ip saddr 10.244.0.0/16 goto SVC",
		"add rule ip minik8s-proxy EXT fib saddr type local jump mark-for-masquerade",
		"add rule ip minik8s-proxy EXT fib saddr type local goto SVC",
		"add rule ip minik8s-proxy EXT numgen random mod 1 vmap { 0 : goto EP1 }",
		// The ClusterIP spreads over both.
		"add rule ip minik8s-proxy SVC numgen random mod 2 vmap { 0 : goto EP1 , 1 : goto EP2 }",
	},
	avoid: []string{"EXT ip saddr != 10.244.0.0/16", "nodeport-", "EXT drop"},
	wantIPT: []string{
		`-A MINIK8S-NODEPORTS -p tcp -m tcp --dport 30080 -m comment --comment "default/web/tcp/80" -j EXT`,
		"-A EXT -s 10.244.0.0/16 -g SVC",
		"-A EXT -m addrtype --src-type LOCAL -j MINIK8S-MARK-MASQ",
		"-A EXT -m addrtype --src-type LOCAL -g SVC",
		`-A EXT -m comment --comment "default/web/tcp/80 -> 10.244.1.2:8080" -j SEP1`,
	},
	avoidIPT: []string{
		`-A MINIK8S-NODEPORTS -p tcp -m tcp --dport 30080 ! -s 10.244.0.0/16 -m comment --comment "default/web/tcp/80" -j MINIK8S-MARK-MASQ`,
		"-A EXT ! -s 10.244.0.0/16 -j MINIK8S-MARK-MASQ",
		`-A EXT -m comment --comment "default/web/tcp/80 -> 10.244.2.3:8080" -j SEP2`,
	},
}, {
	name:  "external Local NodePort without endpoints here drops outside traffic",
	tweak: []func(*corev1.Service){nodePortType, externalLocal},
	nodes: [2]string{"n2", "n2"},
	want: []string{
		"add rule ip minik8s-proxy EXT fib saddr type local goto SVC",
		"add rule ip minik8s-proxy EXT drop",
		"add rule ip minik8s-proxy SVC numgen random mod 2 vmap { 0 : goto EP1 , 1 : goto EP2 }",
	},
	avoid: []string{"add element ip minik8s-proxy no-endpoint-nodeports", "EXT numgen"},
	wantIPT: []string{
		"-A EXT -m addrtype --src-type LOCAL -g SVC",
		"-A EXT -j MINIK8S-MARK-DROP",
	},
	avoidIPT: []string{"-A EXT -m comment", `"default/web/tcp/80" -j REJECT`},
}, {
	name:  "mixed: internal Local, external Cluster: the NodePort reaches every endpoint, masqueraded",
	tweak: []func(*corev1.Service){nodePortType, internalLocal},
	nodes: [2]string{"n1", "n2"},
	want: []string{
		"add rule ip minik8s-proxy SVC numgen random mod 1 vmap { 0 : goto EP1 }",
		"add rule ip minik8s-proxy EXT ip saddr != 10.244.0.0/16 jump mark-for-masquerade",
		"add rule ip minik8s-proxy EXT numgen random mod 2 vmap { 0 : goto EP1 , 1 : goto EP2 }",
		"add rule ip minik8s-proxy NP ip saddr != 10.244.0.0/16 jump mark-for-masquerade",
		"add rule ip minik8s-proxy NP goto EXT",
		"add element ip minik8s-proxy service-nodeports { tcp . 30080 : goto NP }",
	},
	avoid: []string{"EXT fib saddr"},
	wantIPT: []string{
		`-A MINIK8S-NODEPORTS -p tcp -m tcp --dport 30080 ! -s 10.244.0.0/16 -m comment --comment "default/web/tcp/80" -j MINIK8S-MARK-MASQ`,
		`-A MINIK8S-NODEPORTS -p tcp -m tcp --dport 30080 -m comment --comment "default/web/tcp/80" -j EXT`,
		`-A SVC -m comment --comment "default/web/tcp/80 -> 10.244.1.2:8080" -j SEP1`,
		`-A EXT -m comment --comment "default/web/tcp/80 -> 10.244.1.2:8080" -m statistic --mode random --probability 0.5000000000 -j SEP1`,
		`-A EXT -m comment --comment "default/web/tcp/80 -> 10.244.2.3:8080" -j SEP2`,
		":SEP2 - [0:0]",
	},
	avoidIPT: []string{"-A EXT -m addrtype --src-type LOCAL"},
}, {
	name: "mixed: both Local, externalIPs too, with affinity",
	tweak: []func(*corev1.Service){nodePortType, internalLocal, externalLocal, func(s *corev1.Service) {
		s.Spec.ExternalIPs = []string{"192.0.2.7"}
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	}},
	nodes: [2]string{"n2", "n1"},
	want: []string{
		"add element ip minik8s-proxy service-ips { 10.96.0.10 . tcp . 80 : goto SVC }",
		"add element ip minik8s-proxy service-ips { 192.0.2.7 . tcp . 80 : goto EXT }",
		"add element ip minik8s-proxy service-nodeports { tcp . 30080 : goto EXT }",
		"add rule ip minik8s-proxy SVC numgen random mod 1 vmap { 0 : goto EP2 }",
		"add rule ip minik8s-proxy EXT numgen random mod 1 vmap { 0 : goto EP2 }",
	},
	avoid: []string{"EP1", "dnat to 10.244.1.2", "nodeport-"},
	wantIPT: []string{
		`-A MINIK8S-SERVICES -d 192.0.2.7/32 -p tcp -m tcp --dport 80 -m comment --comment "default/web/tcp/80" -j EXT`,
		`-A SVC -m comment --comment "default/web/tcp/80 -> 10.244.2.3:8080" -m recent --name SEP2 --rcheck --seconds 10800 --reap -j SEP2`,
		`-A EXT -m comment --comment "default/web/tcp/80 -> 10.244.2.3:8080" -m recent --name SEP2 --rcheck --seconds 10800 --reap -j SEP2`,
	},
	avoidIPT: []string{"SEP1", "10.244.1.2:8080"},
}, {
	name:  "Cluster policies: as before, endpoints on any node",
	tweak: []func(*corev1.Service){nodePortType, func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"192.0.2.7"} }},
	nodes: [2]string{"n2", "n2"},
	want: []string{
		"add element ip minik8s-proxy service-ips { 192.0.2.7 . tcp . 80 : goto SVC }",
		"add element ip minik8s-proxy service-nodeports { tcp . 30080 : goto NP }",
		"add rule ip minik8s-proxy NP goto SVC",
		"add rule ip minik8s-proxy SVC numgen random mod 2 vmap { 0 : goto EP1 , 1 : goto EP2 }",
	},
	avoid: []string{"EXT", "SVC drop"},
	wantIPT: []string{
		`-A MINIK8S-SERVICES -d 192.0.2.7/32 -p tcp -m tcp --dport 80 -m comment --comment "default/web/tcp/80" -j SVC`,
		`-A MINIK8S-NODEPORTS -p tcp -m tcp --dport 30080 -m comment --comment "default/web/tcp/80" -j SVC`,
	},
	avoidIPT: []string{"EXT-", "-j MINIK8S-MARK-DROP"},
}}

func (tc policyCase) objects() ([]*corev1.Service, []*discoveryv1.EndpointSlice) {
	svc := service("web", "10.96.0.10", []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 30080)}, tc.tweak...)
	eps := onNodes(slice("web", []string{"10.244.1.2", "10.244.2.3"}, epPort("http", corev1.ProtocolTCP, 8080)), tc.nodes[:]...)
	return []*corev1.Service{svc}, []*discoveryv1.EndpointSlice{eps}
}

func TestRenderTrafficPolicies(t *testing.T) {
	const id = "default/web/tcp/80"
	names := strings.NewReplacer(
		"SVC", chainName("svc", id), "EXT", chainName("ext", id), "NP", chainName("nodeport", id),
		"EP1", chainName("ep", id+"/10.244.1.2/8080"), "EP2", chainName("ep", id+"/10.244.2.3/8080"))
	for _, tc := range policyCases {
		t.Run(tc.name, func(t *testing.T) {
			nft := newFakeNFT()
			p, err := New(Config{Client: fake.NewClientset(), NFT: nft, ClusterCIDR: "10.244.0.0/16", NodeName: "n1"})
			if err != nil {
				t.Fatal(err)
			}
			svcs, eps := tc.objects()
			if err := p.Sync(context.Background(), svcs, eps); err != nil {
				t.Fatal(err)
			}
			checkRules(t, nft.Dump(), replaceAll(names, tc.want), nil, replaceAll(names, tc.avoid))
		})
	}
}

func TestRenderIPTablesTrafficPolicies(t *testing.T) {
	const id = "default/web/tcp/80"
	names := strings.NewReplacer(
		"SVC", iptChainName(iptSvcPrefix, id), "EXT-", iptExtPrefix, "EXT", iptChainName(iptExtPrefix, id),
		"SEP1", iptChainName(iptSepPrefix, id+"/10.244.1.2/8080"), "SEP2", iptChainName(iptSepPrefix, id+"/10.244.2.3/8080"))
	for _, tc := range policyCases {
		t.Run(tc.name, func(t *testing.T) {
			run := &fakeRunner{}
			p, err := New(Config{Client: fake.NewClientset(), Mode: ModeIPTables, Runner: run, ClusterCIDR: "10.244.0.0/16", NodeName: "n1"})
			if err != nil {
				t.Fatal(err)
			}
			svcs, eps := tc.objects()
			if err := p.Sync(context.Background(), svcs, eps); err != nil {
				t.Fatal(err)
			}
			checkRules(t, run.restores[0], replaceAll(names, tc.wantIPT), nil, replaceAll(names, tc.avoidIPT))
		})
	}
}

// TestTrafficPolicyIncremental: a change of policy alone, or of the
// node an endpoint is on, rewrites the service port's chains: after
// each, the incremental sync leaves what a first sync of the same
// objects leaves.
func TestTrafficPolicyIncremental(t *testing.T) {
	ctx := context.Background()
	svc := service("web", "10.96.0.10", []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 30080)}, nodePortType)
	eps := onNodes(slice("web", []string{"10.244.1.2", "10.244.2.3"}, epPort("http", corev1.ProtocolTCP, 8080)), "n1", "n2")
	steps := []struct {
		name   string
		change func()
	}{
		{"Cluster", func() {}},
		{"internal Local", func() { internalLocal(svc) }},
		{"external Local too", func() { externalLocal(svc) }},
		{"the local endpoint moves away", func() { eps.Endpoints[0].NodeName = ptr.To("n3") }},
		{"and comes back", func() { eps.Endpoints[0].NodeName = ptr.To("n1") }},
		{"Cluster again", func() {
			svc.Spec.InternalTrafficPolicy = nil
			svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		}},
	}
	nft := newFakeNFT()
	p, err := New(Config{Client: fake.NewClientset(), NFT: nft, ClusterCIDR: "10.244.0.0/16", NodeName: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	run := &fakeRunner{}
	pi, err := New(Config{Client: fake.NewClientset(), Mode: ModeIPTables, Runner: run, ClusterCIDR: "10.244.0.0/16", NodeName: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		s.change()
		svcs, slices := []*corev1.Service{svc}, []*discoveryv1.EndpointSlice{eps}
		if err := p.Sync(ctx, svcs, slices); err != nil {
			t.Fatal(err)
		}
		fresh := newFakeNFT()
		pf, err := New(Config{Client: fake.NewClientset(), NFT: fresh, ClusterCIDR: "10.244.0.0/16", NodeName: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		if err := pf.Sync(ctx, svcs, slices); err != nil {
			t.Fatal(err)
		}
		if got, want := nft.Dump(), fresh.Dump(); got != want {
			t.Errorf("%s: nftables incremental sync left\n%s\nwhere a first sync leaves\n%s", s.name, got, want)
		}

		// iptables: the per-service chains this sync declares are those
		// whose rules differ from the last sync's.
		prev := maps.Clone(pi.backend.(*iptablesBackend).written)
		if err := pi.Sync(ctx, svcs, slices); err != nil {
			t.Fatal(err)
		}
		next := pi.backend.(*iptablesBackend).written
		in := run.restores[len(run.restores)-1]
		for c, rules := range next {
			declared := strings.Contains(in, ":"+c+" - [0:0]\n")
			if changed := prev == nil || prev[c] != rules; changed != declared {
				t.Errorf("%s: chain %s changed %v, declared %v:\n%s", s.name, c, changed, declared, in)
			}
		}
	}
}
