package proxy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/minik8s/minik8s/pkg/kubelet/network"
)

// iptablesSave is iptables-save of the namespace at netns.
func iptablesSave(t *testing.T, netns string) string {
	t.Helper()
	var out []byte
	err := network.InNetNS(netns, func() (err error) {
		out, err = exec.Command("iptables-save").CombinedOutput()
		return err
	})
	if err != nil {
		t.Fatalf("iptables-save: %v: %s", err, out)
	}
	return string(out)
}

// TestKernelSyncIPTables programs the real kernel in iptables mode: the
// restore input is accepted, the jump rules go in once, a deleted
// Service leaves none of its chains, a restarted proxy deletes what the
// last one left, and Cleanup removes everything of ours.
func TestKernelSyncIPTables(t *testing.T) {
	p, netns := kernelProxier(t, ModeIPTables)
	ctx := context.Background()
	svcs, eps := services(5, 3)
	svcs[0].Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	svcs = append(svcs,
		service("empty", "10.96.9.9", []corev1.ServicePort{port("dns", corev1.ProtocolUDP, 53, 0)}),
		service("emptynp", "10.96.9.10", []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 31000)},
			func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }))
	for range 2 {
		if err := p.Sync(ctx, svcs, eps); err != nil {
			t.Fatal(err)
		}
	}
	got := iptablesSave(t, netns)
	lines := strings.Split(got, "\n")
	for _, w := range []string{
		`-A PREROUTING -m comment --comment "minik8s service proxy" -j MINIK8S-SERVICES`,
		`-A OUTPUT -m comment --comment "minik8s service proxy" -j MINIK8S-SERVICES`,
		`-A POSTROUTING -m comment --comment "minik8s service proxy" -j MINIK8S-POSTROUTING`,
		`-A INPUT -m conntrack --ctstate NEW -m comment --comment "minik8s service proxy" -j MINIK8S-SERVICES`,
		`-A FORWARD -m conntrack --ctstate NEW -m comment --comment "minik8s service proxy" -j MINIK8S-SERVICES`,
	} {
		if n := strings.Count(got, w+"\n"); n != 1 {
			t.Errorf("jump %q is there %d times, want once:\n%s", w, n, got)
		}
	}
	for _, w := range []string{
		"-j DNAT --to-destination 10.244.0.1:8080",
		"--probability 0.33333333349", // the kernel's fixed-point 1/3
		"--rcheck --seconds 10800 --reap",
		"-A MINIK8S-NODEPORTS -p tcp -m tcp --dport 30000 ",
		"-A MINIK8S-SERVICES -d 10.96.9.9/32 -p udp -m udp --dport 53 -m comment --comment \"default/empty/udp/53\" -j REJECT --reject-with icmp-port-unreachable",
		"-A MINIK8S-EXTERNAL -p tcp -m tcp --dport 31000 -m comment --comment \"default/emptynp/tcp/80\" -j REJECT --reject-with tcp-reset",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("iptables-save lacks %q:\n%s", w, got)
		}
	}
	chainsOf := func(i int) []string {
		id := fmt.Sprintf("default/svc%d/tcp/80", i)
		out := []string{iptChainName(iptSvcPrefix, id)}
		for j := range 3 {
			out = append(out, iptChainName(iptSepPrefix, fmt.Sprintf("%s/%s/8080", id, eps[i].Endpoints[j].Addresses[0])))
		}
		return out
	}
	for _, c := range chainsOf(0) {
		if !slices.Contains(lines, ":"+c+" - [0:0]") {
			t.Fatalf("chain %s of svc0 missing:\n%s", c, got)
		}
	}

	// svc0 deleted.
	if err := p.Sync(ctx, svcs[1:], eps); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	got = iptablesSave(t, netns)
	for _, c := range chainsOf(0) {
		if strings.Contains(got, c) {
			t.Errorf("chain %s of the deleted svc0 left:\n%s", c, got)
		}
	}
	if strings.Contains(got, "10.96.0.1/32") || !strings.Contains(got, "10.96.0.2/32") {
		t.Errorf("after deleting svc0:\n%s", got)
	}

	// A new proxy (a restart) finds svc1's chains and deletes them.
	p2, err := New(Config{Client: fake.NewClientset(), HostNetNS: netns, Mode: ModeIPTables})
	if err != nil {
		t.Fatal(err)
	}
	if err := p2.Sync(ctx, svcs[2:], eps); err != nil {
		t.Fatalf("sync after restart: %v", err)
	}
	got = iptablesSave(t, netns)
	for _, c := range chainsOf(1) {
		if strings.Contains(got, c) {
			t.Errorf("chain %s from before the restart left:\n%s", c, got)
		}
	}
	if !slices.Contains(strings.Split(got, "\n"), ":"+chainsOf(2)[0]+" - [0:0]") {
		t.Errorf("svc2 missing after the restart:\n%s", got)
	}

	if err := Cleanup(ctx, netns); err != nil {
		t.Fatal(err)
	}
	if got := iptablesSave(t, netns); strings.Contains(got, "MINIK8S") || strings.Contains(got, "minik8s") {
		t.Errorf("left after Cleanup:\n%s", got)
	}
	if err := Cleanup(ctx, netns); err != nil {
		t.Errorf("Cleanup with nothing there: %v", err)
	}
}

// TestKernelIPTablesPartialSync: after syncs that rewrote only what
// changed, the kernel holds what one full sync writes; a full sync
// repairs a chain flushed behind the proxy's back.
func TestKernelIPTablesPartialSync(t *testing.T) {
	p, netns := kernelProxier(t, ModeIPTables)
	ctx := context.Background()
	svcs, eps := services(20, 3)
	svcs[3].Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	if err := p.Sync(ctx, svcs, eps); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		eps[i].Endpoints[0].Addresses[0] = fmt.Sprintf("10.245.0.%d", i+1)
		if err := p.Sync(ctx, svcs[i:], eps); err != nil {
			t.Fatal(err)
		}
	}
	// The rules, without iptables-save's dates and counters, sorted.
	rules := func() string {
		var out []string
		for _, l := range strings.Split(iptablesSave(t, netns), "\n") {
			if strings.HasPrefix(l, "-A") || strings.HasPrefix(l, ":") {
				out = append(out, l)
			}
		}
		slices.Sort(out)
		return strings.Join(out, "\n")
	}
	partial := rules()
	if err := p.sync(ctx, svcs[9:], eps, true); err != nil {
		t.Fatal(err)
	}
	if full := rules(); full != partial {
		t.Errorf("partial syncs left\n%s\n\na full sync writes\n%s", partial, full)
	}

	sep := iptChainName(iptSepPrefix, "default/svc12/tcp/80/"+eps[12].Endpoints[0].Addresses[0]+"/8080")
	err := network.InNetNS(netns, func() error {
		out, err := exec.Command("iptables", "-t", "nat", "-F", sep).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.sync(ctx, svcs[9:], eps, true); err != nil {
		t.Fatal(err)
	}
	if got := iptablesSave(t, netns); !strings.Contains(got, "-A "+sep+" ") {
		t.Errorf("full sync did not repair the flushed %s:\n%s", sep, got)
	}
}

// TestKernelAutoFallsBack: on a machine without a usable nft, auto mode
// programs iptables, nftables mode fails, and without iptables either
// New says so.
func TestKernelAutoFallsBack(t *testing.T) {
	_, netns := kernelProxier(t, ModeIPTables)
	// A PATH with iptables and no nft.
	dir := t.TempDir()
	for _, c := range []string{"iptables", "iptables-save", "iptables-restore"} {
		path, err := exec.LookPath(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(path, filepath.Join(dir, c)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	cfg := Config{Client: fake.NewClientset(), HostNetNS: netns}
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("auto without nft: %v", err)
	}
	if p.Mode() != ModeIPTables {
		t.Errorf("auto without nft picked %q, want iptables", p.Mode())
	}
	svcs, eps := services(1, 1)
	if err := p.Sync(context.Background(), svcs, eps); err != nil {
		t.Fatal(err)
	}
	cfg.Mode = ModeNFTables
	if _, err := New(cfg); err == nil {
		t.Error("nftables mode without nft: no error")
	}
	t.Setenv("PATH", t.TempDir())
	cfg.Mode = ModeAuto
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("auto with neither nft nor iptables: %v", err)
	}
}

// TestKernelChangeModes: a node that changes modes loses the other
// mode's rules when its proxy starts, and Cleanup removes both modes'
// rules when both are there.
func TestKernelChangeModes(t *testing.T) {
	pi, netns := kernelProxier(t, ModeIPTables)
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("needs nft (apt-get install nftables)")
	}
	pn, err := New(Config{Client: fake.NewClientset(), HostNetNS: netns, Mode: ModeNFTables})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	svcs, eps := services(2, 2)
	ruleset := func() string {
		var out []byte
		err := network.InNetNS(netns, func() (err error) {
			out, err = exec.Command("nft", "list", "ruleset").CombinedOutput()
			return err
		})
		if err != nil {
			t.Fatalf("nft list ruleset: %v: %s", err, out)
		}
		return string(out)
	}
	ours := func(s string) (iptables, nftables bool) {
		return strings.Contains(s, "MINIK8S"), strings.Contains(s, "table ip "+TableName)
	}
	sync := func(p *Proxier) {
		t.Helper()
		if err := p.Sync(ctx, svcs, eps); err != nil {
			t.Fatal(err)
		}
	}

	sync(pn)
	if err := pi.cleanupOtherMode(ctx); err != nil {
		t.Fatal(err)
	}
	sync(pi)
	if ipt, nft := ours(ruleset()); !ipt || nft {
		t.Errorf("nftables -> iptables: iptables rules %v, nftables table %v; want only iptables", ipt, nft)
	}
	if err := pn.cleanupOtherMode(ctx); err != nil {
		t.Fatal(err)
	}
	pn.backend.(*nftBackend).state = nil // its table was deleted under it
	sync(pn)
	if ipt, nft := ours(ruleset()); ipt || !nft {
		t.Errorf("iptables -> nftables: iptables rules %v, nftables table %v; want only nftables", ipt, nft)
	}

	pi.backend.(*iptablesBackend).written = nil // it no longer knows what is there
	sync(pi)
	if ipt, nft := ours(ruleset()); !ipt || !nft {
		t.Fatalf("both modes' rules wanted for Cleanup: iptables %v, nftables %v", ipt, nft)
	}
	if err := Cleanup(ctx, netns); err != nil {
		t.Fatal(err)
	}
	if got := ruleset(); strings.Contains(got, TableName) || strings.Contains(got, "MINIK8S") || strings.Contains(got, "minik8s") {
		t.Errorf("left after Cleanup:\n%s", got)
	}
}

// BenchmarkSyncIPTables1000x10 is BenchmarkSync1000x10 in iptables
// mode: each sync, after one endpoint changed, is one iptables-restore
// of the fixed chains and the changed service's chains, and the checks
// of the jump rules.
func BenchmarkSyncIPTables1000x10(b *testing.B) { benchmarkSync(b, ModeIPTables, false) }

// BenchmarkSyncIPTablesFull1000x10 is the periodic full sync: every
// chain rewritten, after iptables-save looked for strays.
func BenchmarkSyncIPTablesFull1000x10(b *testing.B) { benchmarkSync(b, ModeIPTables, true) }
