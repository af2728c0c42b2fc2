package proxy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/knftables"
)

// fakeRunner stands in for iptables, iptables-save and iptables-restore:
// it keeps the jump rules that iptables -I/-D/-C work on, answers
// iptables-save from save, and records every restore input.
type fakeRunner struct {
	save     map[string]string // table -> iptables-save -t table
	jumps    []string          // "table chain rule..."
	restores []string
	calls    []string
}

type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
func (e exitError) ExitCode() int { return int(e) }

func (f *fakeRunner) Run(_ context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	f.calls = append(f.calls, name+" "+strings.Join(args, " "))
	switch name {
	case "iptables-save":
		return []byte(f.save[args[1]]), nil
	case "iptables-restore":
		if !slices.Contains(args, "--noflush") {
			return nil, fmt.Errorf("restore without --noflush: %v", args)
		}
		f.restores = append(f.restores, string(stdin))
		return nil, nil
	case "iptables":
		// -w 5 -t table OP chain [1] rule...
		if len(args) < 6 || args[2] != "-t" {
			return nil, fmt.Errorf("unexpected iptables %v", args)
		}
		table, op, chain, rule := args[3], args[4], args[5], args[6:]
		if op == "-I" {
			rule = rule[1:] // the position
		}
		key := table + " " + chain + " " + strings.Join(rule, " ")
		i := slices.Index(f.jumps, key)
		switch op {
		case "-S":
			return nil, nil
		case "-C":
			if i < 0 {
				return nil, exitError(1)
			}
		case "-I":
			f.jumps = append(f.jumps, key)
		case "-D":
			if i < 0 {
				return nil, exitError(1)
			}
			f.jumps = slices.Delete(f.jumps, i, i+1)
		default:
			return nil, fmt.Errorf("unexpected iptables %v", args)
		}
		return nil, nil
	}
	return nil, fmt.Errorf("unexpected command %s", name)
}

func newFakeNFT() *knftables.Fake { return knftables.NewFake(knftables.IPv4Family, TableName) }

func newIPTablesProxier(t testing.TB, clusterCIDR string) (*Proxier, *fakeRunner) {
	t.Helper()
	run := &fakeRunner{}
	p, err := New(Config{Client: fake.NewClientset(), Mode: ModeIPTables, Runner: run, ClusterCIDR: clusterCIDR})
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode() != ModeIPTables {
		t.Fatalf("mode %q, want iptables", p.Mode())
	}
	return p, run
}

func TestRenderIPTables(t *testing.T) {
	const id = "default/web/tcp/80"
	svc := iptChainName(iptSvcPrefix, id)
	sep1 := iptChainName(iptSepPrefix, id+"/10.244.1.2/8080")
	sep2 := iptChainName(iptSepPrefix, id+"/10.244.2.3/8080")
	nodePort := func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }
	web := []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 30080)}
	webEPs := slice("web", []string{"10.244.1.2", "10.244.2.3"}, epPort("http", corev1.ProtocolTCP, 8080))
	tests := []struct {
		name        string
		svcs        []*corev1.Service
		eps         []*discoveryv1.EndpointSlice
		want, avoid []string // whole lines of the restore input
		has, hasNot []string // parts of it
	}{{
		name: "clusterIP spreads over two endpoints",
		svcs: []*corev1.Service{service("web", "10.96.0.10", web)},
		eps:  []*discoveryv1.EndpointSlice{webEPs},
		want: []string{
			":" + svc + " - [0:0]",
			":" + sep1 + " - [0:0]",
			`-A MINIK8S-SERVICES -d 10.96.0.10/32 -p tcp -m tcp --dport 80 -m comment --comment "` + id + `" -j ` + svc,
			"-A " + svc + " ! -s 10.244.0.0/16 -j MINIK8S-MARK-MASQ",
			`-A ` + svc + ` -m comment --comment "` + id + ` -> 10.244.1.2:8080" -m statistic --mode random --probability 0.5000000000 -j ` + sep1,
			`-A ` + svc + ` -m comment --comment "` + id + ` -> 10.244.2.3:8080" -j ` + sep2,
			`-A ` + sep1 + ` -p tcp -m comment --comment "` + id + `" -j DNAT --to-destination 10.244.1.2:8080`,
			`-A ` + sep2 + ` -p tcp -m comment --comment "` + id + `" -j DNAT --to-destination 10.244.2.3:8080`,
			"-A MINIK8S-POSTROUTING -m mark --mark 0x4000/0x4000 -j MASQUERADE",
			"-A MINIK8S-MARK-MASQ -j MARK --or-mark 0x4000",
		},
		hasNot: []string{"-A MINIK8S-NODEPORTS -p", id + `" -j REJECT`, "-m recent"},
	}, {
		name: "three endpoints: 1/3, then 1/2 of the rest, then the rest",
		svcs: []*corev1.Service{service("web", "10.96.0.10", web)},
		eps:  []*discoveryv1.EndpointSlice{slice("web", []string{"10.244.1.2", "10.244.2.3", "10.244.3.4"}, epPort("http", corev1.ProtocolTCP, 8080))},
		has: []string{
			"10.244.1.2:8080\" -m statistic --mode random --probability 0.3333333333 -j ",
			"10.244.2.3:8080\" -m statistic --mode random --probability 0.5000000000 -j ",
			"10.244.3.4:8080\" -j MINIK8S-SEP-",
		},
	}, {
		name: "hairpin: an endpoint reaching itself is masqueraded",
		svcs: []*corev1.Service{service("web", "10.96.0.10", web)},
		eps:  []*discoveryv1.EndpointSlice{webEPs},
		want: []string{
			"-A " + sep1 + " -s 10.244.1.2/32 -j MINIK8S-MARK-MASQ",
			"-A " + sep2 + " -s 10.244.2.3/32 -j MINIK8S-MARK-MASQ",
		},
	}, {
		name: "nodePort on local addresses",
		svcs: []*corev1.Service{service("web", "10.96.0.10", web, nodePort)},
		eps:  []*discoveryv1.EndpointSlice{webEPs},
		want: []string{
			"-A MINIK8S-SERVICES ! -d 127.0.0.0/8 -m addrtype --dst-type LOCAL -j MINIK8S-NODEPORTS",
			// Localhost NodePorts, for the node itself only.
			"-A MINIK8S-SERVICES -d 127.0.0.0/8 -m addrtype --src-type LOCAL -j MINIK8S-NODEPORTS",
			`-A MINIK8S-NODEPORTS -p tcp -m tcp --dport 30080 ! -s 10.244.0.0/16 -m comment --comment "` + id + `" -j MINIK8S-MARK-MASQ`,
			`-A MINIK8S-NODEPORTS -p tcp -m tcp --dport 30080 -m comment --comment "` + id + `" -j ` + svc,
		},
	}, {
		name: "no endpoints are rejected in filter",
		svcs: []*corev1.Service{service("web", "10.96.0.10", web, nodePort), service("dns", "10.96.0.53",
			[]corev1.ServicePort{port("dns", corev1.ProtocolUDP, 53, 0)})},
		want: []string{
			`-A MINIK8S-SERVICES -d 10.96.0.10/32 -p tcp -m tcp --dport 80 -m comment --comment "` + id + `" -j REJECT --reject-with tcp-reset`,
			`-A MINIK8S-SERVICES -d 10.96.0.53/32 -p udp -m udp --dport 53 -m comment --comment "default/dns/udp/53" -j REJECT --reject-with icmp-port-unreachable`,
			"-A MINIK8S-SERVICES ! -d 127.0.0.0/8 -m addrtype --dst-type LOCAL -j MINIK8S-EXTERNAL",
			"-A MINIK8S-SERVICES -d 127.0.0.0/8 -m addrtype --src-type LOCAL -j MINIK8S-EXTERNAL",
			`-A MINIK8S-EXTERNAL -p tcp -m tcp --dport 30080 -m comment --comment "` + id + `" -j REJECT --reject-with tcp-reset`,
		},
		hasNot: []string{"MINIK8S-SVC-", "-j DNAT", "--dport 30080 ! -s"},
	}, {
		name: "ports a ClusterIP does not define are refused in filter, once per ClusterIP",
		svcs: []*corev1.Service{service("web", "10.96.0.10", []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 0), port("https", corev1.ProtocolTCP, 443, 0)}),
			service("empty", "10.96.0.11", web)},
		eps: []*discoveryv1.EndpointSlice{webEPs},
		want: []string{
			`-A MINIK8S-SERVICES -d 10.96.0.10/32 -m comment --comment "default/web has no such port" -j MINIK8S-REFUSE`,
			`-A MINIK8S-SERVICES -d 10.96.0.11/32 -m comment --comment "default/empty has no such port" -j MINIK8S-REFUSE`,
			"-A MINIK8S-REFUSE -p tcp -j REJECT --reject-with tcp-reset",
			"-A MINIK8S-REFUSE -j REJECT --reject-with icmp-port-unreachable",
		},
		hasNot: []string{"no Service has this address"}, // no ServiceCIDR
	}, {
		name: "session affinity ClientIP",
		svcs: []*corev1.Service{service("web", "10.96.0.10", web, func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}}
		})},
		eps: []*discoveryv1.EndpointSlice{webEPs},
		want: []string{
			`-A ` + svc + ` -m comment --comment "` + id + ` -> 10.244.1.2:8080" -m recent --name ` + sep1 + ` --rcheck --seconds 60 --reap -j ` + sep1,
			`-A ` + svc + ` -m comment --comment "` + id + ` -> 10.244.2.3:8080" -m recent --name ` + sep2 + ` --rcheck --seconds 60 --reap -j ` + sep2,
			`-A ` + sep1 + ` -p tcp -m comment --comment "` + id + `" -m recent --name ` + sep1 + ` --set -j DNAT --to-destination 10.244.1.2:8080`,
		},
	}, {
		name: "externalIPs and no cluster CIDR check for them",
		svcs: []*corev1.Service{service("web", "10.96.0.10", web, func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"192.0.2.7"} })},
		eps:  []*discoveryv1.EndpointSlice{webEPs},
		want: []string{
			`-A MINIK8S-SERVICES -d 192.0.2.7/32 -p tcp -m tcp --dport 80 -m comment --comment "` + id + `" -j ` + svc,
		},
	}, {
		name:   "headless services are skipped",
		svcs:   []*corev1.Service{service("db", "None", web)},
		eps:    []*discoveryv1.EndpointSlice{slice("db", []string{"10.244.1.2"}, epPort("http", corev1.ProtocolTCP, 8080))},
		hasNot: []string{"-j DNAT", `" -j REJECT`, "-j MINIK8S-REFUSE"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, run := newIPTablesProxier(t, "10.244.0.0/16")
			if err := p.Sync(context.Background(), tt.svcs, tt.eps); err != nil {
				t.Fatal(err)
			}
			if len(run.restores) != 1 {
				t.Fatalf("%d restores, want 1", len(run.restores))
			}
			checkRules(t, run.restores[0], tt.want, tt.has, tt.hasNot)
			if n := strings.Count(run.restores[0], "-d 10.96.0.10/32 -m comment"); n > 1 {
				t.Errorf("10.96.0.10 refused by %d rules, want one:\n%s", n, run.restores[0])
			}
		})
	}
}

// TestIPTablesRestoreShape: one restore writes filter then nat, each
// declaring its fixed chains and ending in COMMIT; the jump rules go in
// once, at the top of the built-in chains, and full syncs repair them.
func TestIPTablesRestoreShape(t *testing.T) {
	p, run := newIPTablesProxier(t, "")
	ctx := context.Background()
	for range 2 {
		if err := p.Sync(ctx, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	want := `*filter
:MINIK8S-SERVICES - [0:0]
:MINIK8S-EXTERNAL - [0:0]
:MINIK8S-FIREWALL - [0:0]
:MINIK8S-REFUSE - [0:0]
-A MINIK8S-SERVICES -m mark --mark 0x8000/0x8000 -j DROP
-A MINIK8S-FIREWALL ! -i lo -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
-A MINIK8S-REFUSE -p tcp -j REJECT --reject-with tcp-reset
-A MINIK8S-REFUSE -j REJECT --reject-with icmp-port-unreachable
-A MINIK8S-SERVICES ! -d 127.0.0.0/8 -m addrtype --dst-type LOCAL -j MINIK8S-EXTERNAL
-A MINIK8S-SERVICES -d 127.0.0.0/8 -m addrtype --src-type LOCAL -j MINIK8S-EXTERNAL
COMMIT
*nat
:MINIK8S-SERVICES - [0:0]
:MINIK8S-NODEPORTS - [0:0]
:MINIK8S-POSTROUTING - [0:0]
:MINIK8S-MARK-MASQ - [0:0]
:MINIK8S-MARK-DROP - [0:0]
-A MINIK8S-MARK-MASQ -j MARK --or-mark 0x4000
-A MINIK8S-POSTROUTING -m mark --mark 0x4000/0x4000 -j MASQUERADE
-A MINIK8S-MARK-DROP -j MARK --or-mark 0x8000
-A MINIK8S-SERVICES ! -d 127.0.0.0/8 -m addrtype --dst-type LOCAL -j MINIK8S-NODEPORTS
-A MINIK8S-SERVICES -d 127.0.0.0/8 -m addrtype --src-type LOCAL -j MINIK8S-NODEPORTS
COMMIT
`
	if len(run.restores) != 2 || run.restores[1] != want {
		t.Errorf("restore inputs %q, want twice:\n%s", run.restores, want)
	}
	wantJumps := []string{
		"nat PREROUTING -m comment --comment minik8s service proxy -j MINIK8S-SERVICES",
		"nat OUTPUT -m comment --comment minik8s service proxy -j MINIK8S-SERVICES",
		"nat POSTROUTING -m comment --comment minik8s service proxy -j MINIK8S-POSTROUTING",
		"filter INPUT -m conntrack --ctstate NEW -m comment --comment minik8s service proxy -j MINIK8S-SERVICES",
		"filter FORWARD -m conntrack --ctstate NEW -m comment --comment minik8s service proxy -j MINIK8S-SERVICES",
		"filter OUTPUT -m conntrack --ctstate NEW -m comment --comment minik8s service proxy -j MINIK8S-SERVICES",
		"filter INPUT -m comment --comment minik8s service proxy -j MINIK8S-FIREWALL",
	}
	if !slices.Equal(run.jumps, wantJumps) {
		t.Errorf("jumps:\n%s\nwant:\n%s", strings.Join(run.jumps, "\n"), strings.Join(wantJumps, "\n"))
	}
	inserts := 0
	for _, c := range run.calls {
		if f := strings.Fields(c); slices.Contains(f, "-I") {
			inserts++
			if i := slices.Index(f, "-I"); f[i+2] != "1" {
				t.Errorf("jump not inserted at the top: %s", c)
			}
		}
	}
	if inserts != len(wantJumps) {
		t.Errorf("%d inserts over two syncs, want %d", inserts, len(wantJumps))
	}

	// A jump deleted behind the proxy's back is back after the next
	// full sync.
	run.jumps = run.jumps[1:]
	if err := p.Sync(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(run.jumps) != len(wantJumps)-1 {
		t.Errorf("a partial sync checked the jumps: %v", run.jumps)
	}
	if err := p.sync(ctx, nil, nil, true); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(run.jumps, wantJumps[0]) || len(run.jumps) != len(wantJumps) {
		t.Errorf("after a full sync, jumps:\n%s", strings.Join(run.jumps, "\n"))
	}
}

// TestIPTablesServiceDeleteRemovesChains: the sync after a Service is
// deleted flushes and deletes its chains; the one after that no longer
// mentions them. Chains an earlier run left are deleted by the first.
func TestIPTablesServiceDeleteRemovesChains(t *testing.T) {
	p, run := newIPTablesProxier(t, "")
	run.save = map[string]string{
		"nat":    "*nat\n:PREROUTING ACCEPT [0:0]\n:MINIK8S-SERVICES - [0:0]\n:MINIK8S-SVC-LEFTOVER - [0:0]\n:KUBE-SERVICES - [0:0]\nCOMMIT\n",
		"filter": "*filter\n:INPUT ACCEPT [0:0]\n:MINIK8S-OLD - [0:0]\nCOMMIT\n",
	}
	svc := service("web", "10.96.0.10", []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 30080)}, func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	})
	eps := slice("web", []string{"10.244.1.2"}, epPort("http", corev1.ProtocolTCP, 8080))
	svcChain := iptChainName(iptSvcPrefix, "default/web/tcp/80")
	sepChain := iptChainName(iptSepPrefix, "default/web/tcp/80/10.244.1.2/8080")
	ctx := context.Background()
	if err := p.Sync(ctx, []*corev1.Service{svc}, []*discoveryv1.EndpointSlice{eps}); err != nil {
		t.Fatal(err)
	}
	first := strings.Split(run.restores[0], "\n")
	for _, w := range []string{":MINIK8S-SVC-LEFTOVER - [0:0]", "-X MINIK8S-SVC-LEFTOVER", ":MINIK8S-OLD - [0:0]", "-X MINIK8S-OLD"} {
		if !slices.Contains(first, w) {
			t.Errorf("first restore lacks %q:\n%s", w, run.restores[0])
		}
	}
	for _, a := range []string{"-X MINIK8S-SERVICES", ":KUBE-SERVICES - [0:0]", "-X KUBE-SERVICES"} {
		if slices.Contains(first, a) {
			t.Errorf("first restore has %q:\n%s", a, run.restores[0])
		}
	}
	if !strings.Contains(run.restores[0], "-j DNAT --to-destination 10.244.1.2:8080") {
		t.Fatalf("service not programmed:\n%s", run.restores[0])
	}

	if err := p.Sync(ctx, nil, []*discoveryv1.EndpointSlice{eps}); err != nil {
		t.Fatal(err)
	}
	second := run.restores[1]
	lines := strings.Split(second, "\n")
	for _, c := range []string{svcChain, sepChain} {
		if !slices.Contains(lines, ":"+c+" - [0:0]") || !slices.Contains(lines, "-X "+c) {
			t.Errorf("second restore does not flush and delete %s:\n%s", c, second)
		}
		if strings.Contains(second, "-A "+c) {
			t.Errorf("second restore writes rules into deleted %s:\n%s", c, second)
		}
	}
	for _, gone := range []string{"10.96.0.10", "30080", "-j DNAT", "LEFTOVER"} {
		if strings.Contains(second, gone) {
			t.Errorf("%q left after the service was deleted:\n%s", gone, second)
		}
	}

	if err := p.Sync(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if third := run.restores[2]; strings.Contains(third, svcChain) || strings.Contains(third, sepChain) {
		t.Errorf("third restore still mentions the deleted chains:\n%s", third)
	}
	if n := strings.Count(strings.Join(run.calls, "\n"), "iptables-save"); n != 2 {
		t.Errorf("iptables-save ran %d times, want once per table on the first sync", n)
	}
}

// TestIPTablesCleanup: every jump rule goes, and every MINIK8S- chain
// is flushed and deleted; other chains are left alone.
func TestIPTablesCleanup(t *testing.T) {
	p, run := newIPTablesProxier(t, "")
	ctx := context.Background()
	if err := p.Sync(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	run.save = map[string]string{
		"nat":    "*nat\n:PREROUTING ACCEPT [0:0]\n:MINIK8S-SERVICES - [0:0]\n:MINIK8S-SVC-AAAA - [0:0]\n:CNI-HOSTPORT-DNAT - [0:0]\nCOMMIT\n",
		"filter": "*filter\n:INPUT ACCEPT [0:0]\n:MINIK8S-SERVICES - [0:0]\nCOMMIT\n",
	}
	b := p.backend.(*iptablesBackend)
	if err := b.cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if len(run.jumps) != 0 {
		t.Errorf("jumps left: %v", run.jumps)
	}
	want := "*filter\n:MINIK8S-SERVICES - [0:0]\n-X MINIK8S-SERVICES\nCOMMIT\n" +
		"*nat\n:MINIK8S-SERVICES - [0:0]\n:MINIK8S-SVC-AAAA - [0:0]\n-X MINIK8S-SERVICES\n-X MINIK8S-SVC-AAAA\nCOMMIT\n"
	if got := run.restores[len(run.restores)-1]; got != want {
		t.Errorf("cleanup restore:\n%s\nwant:\n%s", got, want)
	}
	// Nothing left: no restore at all.
	run.save = nil
	n := len(run.restores)
	if err := b.cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if len(run.restores) != n {
		t.Errorf("cleanup of nothing ran iptables-restore: %q", run.restores[n:])
	}
}

func TestNewMode(t *testing.T) {
	for _, tt := range []struct {
		mode    Mode
		want    Mode
		wantErr bool
	}{
		{mode: "", want: ModeNFTables},
		{mode: ModeAuto, want: ModeNFTables},
		{mode: ModeNFTables, want: ModeNFTables},
		{mode: ModeIPTables, want: ModeIPTables},
		{mode: "ipvs", wantErr: true},
	} {
		t.Run(string(tt.mode), func(t *testing.T) {
			p, err := New(Config{Client: fake.NewClientset(), Mode: tt.mode, NFT: newFakeNFT(), Runner: &fakeRunner{}})
			if tt.wantErr {
				if err == nil {
					t.Fatalf("mode %q accepted", tt.mode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Mode() != tt.want {
				t.Errorf("mode %q picked %q, want %q", tt.mode, p.Mode(), tt.want)
			}
		})
	}
}

// BenchmarkRenderIPTables1000x10 is the rendering alone (into the fake
// runner).
func BenchmarkRenderIPTables1000x10(b *testing.B) {
	p, run := newIPTablesProxier(b, "10.244.0.0/16")
	svcs, eps := services(1000, 10)
	for b.Loop() {
		run.restores, run.calls = run.restores[:0], run.calls[:0]
		if err := p.Sync(context.Background(), svcs, eps); err != nil {
			b.Fatal(err)
		}
	}
}

// TestIPTablesPartialSync: a sync rewrites only the per-service chains
// whose rules changed; a full one rewrites them all and looks for
// strays again.
func TestIPTablesPartialSync(t *testing.T) {
	p, run := newIPTablesProxier(t, "")
	ctx := context.Background()
	svcs, eps := services(3, 2)
	declared := func(in string) (out []string) {
		for _, l := range strings.Split(in, "\n") {
			if strings.HasPrefix(l, ":"+iptSvcPrefix) || strings.HasPrefix(l, ":"+iptSepPrefix) {
				out = append(out, strings.Fields(l)[0][1:])
			}
		}
		return out
	}
	last := func() string { return run.restores[len(run.restores)-1] }
	if err := p.Sync(ctx, svcs, eps); err != nil {
		t.Fatal(err)
	}
	if got := declared(last()); len(got) != 3*3 {
		t.Errorf("first sync declares %v, want 3 svc and 6 sep chains", got)
	}
	if err := p.Sync(ctx, svcs, eps); err != nil {
		t.Fatal(err)
	}
	if got := declared(last()); len(got) != 0 {
		t.Errorf("unchanged sync declares %v, want none", got)
	}
	if !strings.Contains(last(), "-j "+iptChainName(iptSvcPrefix, "default/svc1/tcp/80")) {
		t.Errorf("MINIK8S-SERVICES lost its jumps to unchanged chains:\n%s", last())
	}

	// svc1's first endpoint moves: its svc chain and the new sep chain
	// are written, the old sep chain deleted, nothing else touched.
	oldSep := iptChainName(iptSepPrefix, "default/svc1/tcp/80/"+eps[1].Endpoints[0].Addresses[0]+"/8080")
	eps[1].Endpoints[0].Addresses[0] = "10.245.0.9"
	if err := p.Sync(ctx, svcs, eps); err != nil {
		t.Fatal(err)
	}
	want := []string{iptChainName(iptSvcPrefix, "default/svc1/tcp/80"), iptChainName(iptSepPrefix, "default/svc1/tcp/80/10.245.0.9/8080"), oldSep}
	if got := declared(last()); !slices.Equal(got, want) {
		t.Errorf("after one endpoint changed, declared %v, want %v", got, want)
	}
	if !strings.Contains(last(), "-X "+oldSep+"\n") {
		t.Errorf("old endpoint chain not deleted:\n%s", last())
	}

	saves := strings.Count(strings.Join(run.calls, "\n"), "iptables-save")
	if err := p.sync(ctx, svcs, eps, true); err != nil {
		t.Fatal(err)
	}
	if got := declared(last()); len(got) != 3*3 {
		t.Errorf("full sync declares %v, want all 9 chains", got)
	}
	if n := strings.Count(strings.Join(run.calls, "\n"), "iptables-save"); n != saves+2 {
		t.Errorf("full sync ran iptables-save %d times, want 2 (nat, filter)", n-saves)
	}
}
