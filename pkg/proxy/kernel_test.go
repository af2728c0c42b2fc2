package proxy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet/network"
)

// kernelProxier returns a Proxier in mode on the real kernel, in a
// fresh network namespace, or skips.
func kernelProxier(tb testing.TB, mode Mode) (*Proxier, string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root to create a network namespace and run nft or iptables")
	}
	cmds := []string{"nft"}
	if mode == ModeIPTables {
		cmds = []string{"iptables", "iptables-save", "iptables-restore"}
	}
	for _, c := range cmds {
		if _, err := exec.LookPath(c); err != nil {
			tb.Skipf("needs %s (apt-get install nftables iptables)", c)
		}
	}
	name := fmt.Sprintf("mk8s-proxytest-%d", os.Getpid())
	path, err := network.CreateNamedNetNS(network.DefaultNetNSDir, name)
	if err != nil {
		tb.Fatalf("create netns: %v", err)
	}
	tb.Cleanup(func() { _ = network.RemoveNamedNetNS(network.DefaultNetNSDir, name) })
	p, err := New(Config{Client: fake.NewClientset(), HostNetNS: path, ClusterCIDR: "10.244.0.0/16", ServiceCIDR: "10.96.0.0/12", Mode: mode})
	if err != nil {
		tb.Fatal(err)
	}
	if p.Mode() != mode {
		tb.Fatalf("mode %q, want %q", p.Mode(), mode)
	}
	return p, path
}

// services makes n NodePort Services with eps ready endpoints each.
func services(n, eps int) ([]*corev1.Service, []*discoveryv1.EndpointSlice) {
	var svcs []*corev1.Service
	var slices []*discoveryv1.EndpointSlice
	for i := range n {
		name := fmt.Sprintf("svc%d", i)
		svcs = append(svcs, service(name, fmt.Sprintf("10.96.%d.%d", i/250, i%250+1),
			[]corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, int32(30000+i))},
			func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }))
		var ips []string
		for j := range eps {
			ips = append(ips, fmt.Sprintf("10.244.%d.%d", i%200, j+1+(i/200)*eps))
		}
		slices = append(slices, slice(name, ips, epPort("http", corev1.ProtocolTCP, 8080)))
	}
	return svcs, slices
}

// TestKernelSync programs the real kernel: the rules are accepted, a
// second sync updates in place, a deleted Service leaves nothing, and
// Cleanup removes the table.
func TestKernelSync(t *testing.T) {
	p, netns := kernelProxier(t, ModeNFTables)
	ctx := context.Background()
	svcs, eps := services(5, 3)
	svcs[0].Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	svcs = append(svcs, service("empty", "10.96.9.9", []corev1.ServicePort{port("dns", corev1.ProtocolUDP, 53, 0)}))
	if err := p.Sync(ctx, svcs, eps); err != nil {
		t.Fatal(err)
	}
	list := func() string {
		var out []byte
		err := network.InNetNS(netns, func() (err error) {
			out, err = exec.Command("nft", "list", "table", "ip", TableName).CombinedOutput()
			return err
		})
		if err != nil {
			return "error: " + err.Error() + ": " + string(out)
		}
		return string(out)
	}
	got := list()
	for _, w := range []string{"dnat to 10.244.0.1:8080", "10.96.9.9 . udp . 53", "30000", "update @affinity-"} {
		if !strings.Contains(got, w) {
			t.Errorf("table lacks %q:\n%s", w, got)
		}
	}
	if err := p.Sync(ctx, svcs[1:], eps); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	if got := list(); strings.Contains(got, "10.96.0.1 ") || strings.Contains(got, "affinity-") || !strings.Contains(got, "10.96.0.2 ") {
		t.Errorf("after deleting svc0:\n%s", got)
	}
	if err := Cleanup(ctx, netns); err != nil {
		t.Fatal(err)
	}
	if got := list(); !strings.HasPrefix(got, "error:") {
		t.Errorf("table still there after Cleanup:\n%s", got)
	}
	if err := Cleanup(ctx, netns); err != nil {
		t.Errorf("Cleanup without a table: %v", err)
	}
}

// BenchmarkSync1000x10 programs 1000 Services with 10 endpoints each
// into the kernel, one endpoint changing per sync: one transaction that
// rewrites the changed service's chains and the maps.
func BenchmarkSync1000x10(b *testing.B) { benchmarkSync(b, ModeNFTables, false) }

// BenchmarkSyncFull1000x10 is the periodic full sync: every chain.
func BenchmarkSyncFull1000x10(b *testing.B) { benchmarkSync(b, ModeNFTables, true) }

// benchmarkSync programs 1000 Services x 10 endpoints in mode, then
// times syncs (full or not) that each follow one changed endpoint.
func benchmarkSync(b *testing.B, mode Mode, full bool) {
	p, _ := kernelProxier(b, mode)
	svcs, eps := services(1000, 10)
	ctx := context.Background()
	if err := p.sync(ctx, svcs, eps, true); err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		// Alternate endpoints so every sync changes something.
		eps[i%len(eps)].Endpoints[0].Addresses[0] = fmt.Sprintf("10.245.%d.%d", i%250, i%200+1)
		if err := p.sync(ctx, svcs, eps, full); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/sync")
}

// BenchmarkRender1000x10 is the rendering alone (into knftables' Fake).
func BenchmarkRender1000x10(b *testing.B) {
	p, _ := newFakeProxier(b, "10.244.0.0/16")
	svcs, eps := services(1000, 10)
	start := time.Now()
	for b.Loop() {
		if err := p.Sync(context.Background(), svcs, eps); err != nil {
			b.Fatal(err)
		}
	}
	_ = start
}

// TestKernelIncrementalSync: syncs that write only what changed leave the
// kernel exactly as one full sync of the same Services does, and write far
// less.
func TestKernelIncrementalSync(t *testing.T) {
	p, netns := kernelProxier(t, ModeNFTables)
	ctx := context.Background()
	svcs, eps := services(50, 3)
	svcs[3].Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	list := func() string {
		var out []byte
		err := network.InNetNS(netns, func() (err error) {
			out, err = exec.Command("nft", "list", "table", "ip", TableName).CombinedOutput()
			return err
		})
		if err != nil {
			t.Fatalf("nft list: %v: %s", err, out)
		}
		return string(out)
	}
	if err := p.sync(ctx, svcs, eps, true); err != nil {
		t.Fatal(err)
	}
	// Endpoints move, one Service goes, one loses its endpoints, the
	// affinity one changes timeout.
	eps[0].Endpoints[1].Addresses[0] = "10.245.0.9"
	eps[3].Endpoints = eps[3].Endpoints[:2]
	svcs[3].Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}}
	eps[7].Endpoints = nil
	svcs = append(svcs[:10], svcs[11:]...)
	if err := p.sync(ctx, svcs, eps, false); err != nil {
		t.Fatal(err)
	}
	incremental := list()
	if err := p.sync(ctx, svcs, eps, true); err != nil {
		t.Fatal(err)
	}
	if full := list(); full != incremental {
		t.Errorf("incremental sync left\n%s\nwhere a full sync leaves\n%s", incremental, full)
	}
	for _, gone := range []string{"svc10/", "10.244.0.2:8080" /* svc0's old endpoint */} {
		if strings.Contains(incremental, gone) {
			t.Errorf("table still has %q:\n%s", gone, incremental)
		}
	}
}
