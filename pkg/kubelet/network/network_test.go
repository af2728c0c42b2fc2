package network

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestConfigComplete(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "defaults", cfg: Config{NodeName: "n1", PodCIDR: "10.244.1.0/24"}},
		{name: "with cluster", cfg: Config{NodeName: "n1", PodCIDR: "10.244.1.0/24", ClusterCIDR: "10.244.0.0/16"}},
		{name: "no pod cidr", cfg: Config{NodeName: "n1"}, wantErr: "pod CIDR is required"},
		{name: "ipv6", cfg: Config{NodeName: "n1", PodCIDR: "fd00::/64"}, wantErr: "IPv4"},
		{name: "host bits", cfg: Config{NodeName: "n1", PodCIDR: "10.244.1.5/24"}, wantErr: "host bits"},
		{name: "outside cluster", cfg: Config{NodeName: "n1", PodCIDR: "10.245.1.0/24", ClusterCIDR: "10.244.0.0/16"}, wantErr: "not inside"},
		{name: "long bridge", cfg: Config{NodeName: "n1", PodCIDR: "10.244.1.0/24", BridgeName: "a-very-long-bridge"}, wantErr: "15 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			err := cfg.complete()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.BridgeName != "minik8s0" || cfg.StateDir != "/var/lib/minik8s/cni/n1" || cfg.NetNSDir != "/var/run/netns" || cfg.PluginDirs[0] != "/usr/lib/cni" {
				t.Errorf("defaults not filled: %+v", cfg)
			}
			if cfg.ClusterCIDR == "" {
				t.Error("cluster CIDR not defaulted")
			}
		})
	}
}

func TestConfList(t *testing.T) {
	cfg := Config{NodeName: "n1", PodCIDR: "10.244.7.0/24", ClusterCIDR: "10.244.0.0/16", MTU: 1400, StateDir: "/state"}
	if err := cfg.complete(); err != nil {
		t.Fatal(err)
	}
	b, err := confList(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		CNIVersion string `json:"cniVersion"`
		Name       string
		Plugins    []struct {
			Type        string
			Bridge      string
			IsGateway   bool
			IPMasq      bool
			HairpinMode bool
			MTU         int
			IPAM        struct {
				Type    string
				DataDir string
				Ranges  [][]struct{ Subnet, Gateway string }
			}
			Capabilities map[string]bool
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, p := range got.Plugins {
		types = append(types, p.Type)
	}
	if strings.Join(types, ",") != "bridge,loopback,portmap" || got.Name != NetworkName || got.CNIVersion != "1.0.0" {
		t.Fatalf("conflist %s", b)
	}
	br := got.Plugins[0]
	if br.Bridge != "minik8s0" || !br.IsGateway || br.IPMasq || !br.HairpinMode || br.MTU != 1400 {
		t.Errorf("bridge plugin %+v", br)
	}
	if br.IPAM.Type != "host-local" || br.IPAM.DataDir != "/state/ipam" ||
		br.IPAM.Ranges[0][0].Subnet != "10.244.7.0/24" || br.IPAM.Ranges[0][0].Gateway != "10.244.7.1" {
		t.Errorf("ipam %+v", br.IPAM)
	}
	if !got.Plugins[2].Capabilities["portMappings"] {
		t.Errorf("portmap does not ask for portMappings")
	}
}

func TestNodeRoutes(t *testing.T) {
	nodes := []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24"},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeHostName, Address: "a"},
				{Type: corev1.NodeInternalIP, Address: "fd00::1"},
				{Type: corev1.NodeInternalIP, Address: "198.51.100.1"},
			}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
	}
	got := NodeRoutes(nodes)
	want := []NodeRoute{{Name: "a", InternalIP: "198.51.100.1", PodCIDR: "10.244.1.0/24"}, {Name: "b"}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("NodeRoutes = %+v, want %+v", got, want)
	}
}

// Two pods on one node share the bridge: each gets an address from the
// node's PodCIDR, they reach each other and the node, and teardown
// leaves nothing behind.
func TestPodsOnOneNode(t *testing.T) {
	requireNetworking(t)
	tag := uniq(t)
	node := newTestNetNS(t, "mk8st-"+tag+"-node")
	c := newTestCNI(t, node, "10.244.1.0/24")
	t.Cleanup(func() { _ = c.Uninstall(context.Background()) })

	a := setupPod(t, c, tag+"-a")
	b := setupPod(t, c, tag+"-b")
	pod := netip.MustParsePrefix("10.244.1.0/24")
	for _, p := range []*testPod{a, b} {
		if !pod.Contains(p.res.IP) || p.res.IP == p.res.Gateway {
			t.Errorf("pod %s got %v, want an address in %s", p.id, p.res.IP, pod)
		}
		if p.res.Gateway != netip.MustParseAddr("10.244.1.1") || p.res.Prefix.Bits() != 24 || p.res.Interface != "eth0" {
			t.Errorf("pod %s result %+v", p.id, p.res)
		}
	}
	if a.res.IP == b.res.IP {
		t.Fatalf("both pods got %v", a.res.IP)
	}

	// Pod to pod, keeping the source address; pod to its node (the bridge).
	serve(t, b.path, "b", 8080)
	if from := mustDial(t, a.path, net.JoinHostPort(b.res.IP.String(), "8080"), "b"); from != a.res.IP.String() {
		t.Errorf("b saw a as %s, want %s", from, a.res.IP)
	}
	serve(t, node.path, "node", 8081)
	mustDial(t, a.path, "10.244.1.1:8081", "node")
	// The node reaches the pod.
	mustDial(t, node.path, net.JoinHostPort(b.res.IP.String(), "8080"), "b")
	// Loopback is up in the pod.
	serve(t, a.path, "a-local", 9090)
	mustDial(t, a.path, "127.0.0.1:9090", "a-local")

	// Setup again returns the same address (kubelet retries).
	again, err := c.Setup(context.Background(), a.id, a.path, nil)
	if err != nil || again.IP != a.res.IP {
		t.Errorf("second setup: %+v, %v; want %v", again, err, a.res.IP)
	}
	if st, err := c.Status(context.Background(), b.id, b.path); err != nil || st == nil || st.IP != b.res.IP {
		t.Errorf("status: %+v, %v", st, err)
	}

	a.teardown(t, c)
	b.teardown(t, c)
	assertClean(t, node, c, a.id, b.id)
	if st, err := c.Status(context.Background(), b.id, b.path); err != nil || st != nil {
		t.Errorf("status after teardown: %+v, %v", st, err)
	}
	if _, err := os.Stat(a.path); !os.IsNotExist(err) {
		t.Errorf("pod netns %s still there: %v", a.path, err)
	}

	// The node-level pieces go with Uninstall.
	if err := c.Uninstall(context.Background()); err != nil {
		t.Fatal(err)
	}
	node.do(t, func() error {
		if _, err := netlink.LinkByName("minik8s0"); err == nil {
			t.Error("bridge left after Uninstall")
		}
		out, err := exec.Command("iptables-save", "-t", "nat").CombinedOutput()
		if strings.Contains(string(out), masqComment) {
			t.Errorf("masquerade rule left:\n%s", out)
		}
		return err
	})
}

// Pods are set up and torn down in parallel, the node's first ones (which
// create the bridge) and ones with hostPorts included: each gets an
// address of its own, and nothing is left.
func TestConcurrentPods(t *testing.T) {
	requireNetworking(t)
	tag := uniq(t)
	node := newTestNetNS(t, "mk8st-"+tag+"-node")
	c := newTestCNI(t, node, "10.244.5.0/24")
	t.Cleanup(func() { _ = c.Uninstall(context.Background()) })

	const n = 6
	pods := make([]*testPod, n)
	paths := make([]string, n)
	for i := range n {
		path, err := c.NewNetNS(fmt.Sprintf("mk8st-%s-%d", tag, i))
		if err != nil {
			t.Fatal(err)
		}
		paths[i] = path
		t.Cleanup(func() { _ = c.DeleteNetNS(fmt.Sprintf("mk8st-%s-%d", tag, i)) })
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		p := &testPod{id: fmt.Sprintf("%s-%d", tag, i), netns: fmt.Sprintf("mk8st-%s-%d", tag, i), path: paths[i]}
		if i%3 == 0 {
			p.ports = []PortMapping{{HostPort: int32(18090 + i), ContainerPort: 80}}
		}
		pods[i] = p
		wg.Go(func() { p.res, errs[i] = c.Setup(context.Background(), p.id, p.path, p.ports) })
	}
	wg.Wait()
	seen := map[netip.Addr]string{}
	for i, p := range pods {
		if errs[i] != nil {
			t.Fatalf("setup pod %s: %v", p.id, errs[i])
		}
		if other, ok := seen[p.res.IP]; ok {
			t.Errorf("pods %s and %s both got %v", other, p.id, p.res.IP)
		}
		seen[p.res.IP] = p.id
	}
	serve(t, pods[1].path, "p1", 8080)
	mustDial(t, pods[2].path, net.JoinHostPort(pods[1].res.IP.String(), "8080"), "p1")

	ids := make([]string, n)
	for i, p := range pods {
		ids[i] = p.id
		wg.Go(func() { errs[i] = c.Teardown(context.Background(), p.id, p.path, p.ports) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("teardown pod %s: %v", pods[i].id, err)
		}
	}
	for _, p := range pods {
		if err := c.DeleteNetNS(p.netns); err != nil {
			t.Fatal(err)
		}
	}
	assertClean(t, node, c, ids...)
}

// A hostPort reaches the pod's listener from the node itself and from
// another machine on the node's network.
func TestHostPort(t *testing.T) {
	requireNetworking(t)
	tag := uniq(t)
	l := newLAN(t, tag)
	node := newTestNetNS(t, "mk8st-"+tag+"-node")
	client := newTestNetNS(t, "mk8st-"+tag+"-cli")
	nodeIP := l.attach(t, node, 1)
	l.attach(t, client, 9)
	c := newTestCNI(t, node, "10.244.3.0/24")
	t.Cleanup(func() { _ = c.Uninstall(context.Background()) })

	web := setupPod(t, c, tag+"-web", PortMapping{HostPort: 18080, ContainerPort: 8080, Protocol: "TCP"})
	serve(t, web.path, "web", 8080)
	hostPort := net.JoinHostPort(nodeIP.String(), "18080")
	mustDial(t, node.path, hostPort, "web")
	mustDial(t, client.path, hostPort, "web")

	web.teardown(t, c)
	assertClean(t, node, c, web.id)
	if _, _, err := dial(client.path, hostPort); err == nil {
		t.Error("hostPort still answers after teardown")
	}
}

// Teardown frees the address even when the pod's namespace is gone
// already, and a second teardown is a no-op.
func TestTeardownAfterNetNSGone(t *testing.T) {
	requireNetworking(t)
	tag := uniq(t)
	node := newTestNetNS(t, "mk8st-"+tag+"-node")
	c := newTestCNI(t, node, "10.244.4.0/24")
	t.Cleanup(func() { _ = c.Uninstall(context.Background()) })

	p := setupPod(t, c, tag+"-p", PortMapping{HostPort: 18081, ContainerPort: 80})
	if allocs, _ := c.Allocations(); allocs[p.res.IP] != p.id {
		t.Fatalf("allocations %v, want %v held for %s", allocs, p.res.IP, p.id)
	}
	if err := c.DeleteNetNS(p.netns); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := c.Teardown(context.Background(), p.id, p.path, p.ports); err != nil {
			t.Fatalf("teardown: %v", err)
		}
	}
	assertClean(t, node, c, p.id)
	// Teardown of a pod that was never set up.
	if err := c.Teardown(context.Background(), "never-set-up", "", nil); err != nil {
		t.Errorf("teardown of unknown pod: %v", err)
	}
}

// Two nodes, each a network namespace with its own bridge and node IP on
// one LAN: pods reach pods on the other node by pod IP through the
// host-gw routes Routes.Sync installs, without masquerading; pod traffic
// to a node outside the cluster CIDR is masqueraded; stale routes go.
func TestTwoNodes(t *testing.T) {
	requireNetworking(t)
	tag := uniq(t)
	l := newLAN(t, tag)
	nodeA := newTestNetNS(t, "mk8st-"+tag+"-na")
	nodeB := newTestNetNS(t, "mk8st-"+tag+"-nb")
	ipA, ipB := l.attach(t, nodeA, 1), l.attach(t, nodeB, 2)
	cA, cB := newTestCNI(t, nodeA, "10.244.1.0/24"), newTestCNI(t, nodeB, "10.244.2.0/24")
	t.Cleanup(func() { _ = cA.Uninstall(context.Background()); _ = cB.Uninstall(context.Background()) })

	nodes := []NodeRoute{
		{Name: "a", InternalIP: ipA.String(), PodCIDR: "10.244.1.0/24"},
		{Name: "b", InternalIP: ipB.String(), PodCIDR: "10.244.2.0/24"},
		{Name: "c-without-cidr", InternalIP: "198.51.100.3"},
	}
	routes := map[string]*Routes{}
	for name, ns := range map[string]testNetNS{"a": nodeA, "b": nodeB} {
		r, err := NewRoutes(RoutesConfig{NodeName: name, HostNetNS: ns.path})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.EnsureBlackholes("10.244.0.0/16", "10.96.0.0/12"); err != nil {
			t.Fatal(err)
		}
		if err := r.Sync(nodes); err != nil {
			t.Fatal(err)
		}
		if err := r.Sync(nodes); err != nil { // idempotent
			t.Fatal(err)
		}
		routes[name] = r
	}
	got := ourRoutes(t, nodeA)
	want := []string{"10.244.0.0/16 blackhole", "10.244.2.0/24 via " + ipB.String(), "10.96.0.0/12 blackhole"}
	if strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("node a routes %v, want %v", got, want)
	}

	// Before node a runs any pod, a program on it answers pods on node b
	// at a's pod gateway, as the host services (CoreDNS, the gateway) are
	// published (pkg/hostservice).
	pb := setupPod(t, cB, tag+"-pb")
	serve(t, nodeA.path, "na", 8082)
	if from := mustDial(t, pb.path, "10.244.1.1:8082", "na"); from != pb.res.IP.String() {
		t.Errorf("node a saw pb as %s, want its pod IP %s", from, pb.res.IP)
	}
	pa := setupPod(t, cA, tag+"-pa")
	serve(t, pa.path, "pa", 8080)
	serve(t, pb.path, "pb", 8080)
	if from := mustDial(t, pa.path, net.JoinHostPort(pb.res.IP.String(), "8080"), "pb"); from != pa.res.IP.String() {
		t.Errorf("pb saw pa as %s, want its pod IP %s", from, pa.res.IP)
	}
	if from := mustDial(t, pb.path, net.JoinHostPort(pa.res.IP.String(), "8080"), "pa"); from != pb.res.IP.String() {
		t.Errorf("pa saw pb as %s, want its pod IP %s", from, pb.res.IP)
	}
	// A node reaches pods on the other node.
	mustDial(t, nodeA.path, net.JoinHostPort(pb.res.IP.String(), "8080"), "pb")
	// Pod to the other node's IP: outside the cluster CIDR, so it arrives
	// from node a's address.
	serve(t, nodeB.path, "nb", 8081)
	if from := mustDial(t, pa.path, net.JoinHostPort(ipB.String(), "8081"), "nb"); from != ipA.String() {
		t.Errorf("node b saw pa as %s, want node a's %s (masquerade)", from, ipA)
	}

	// Node b leaves: a's route to it goes; pb is unreachable from pa.
	if err := routes["a"].Sync(nodes[:1]); err != nil {
		t.Fatal(err)
	}
	if got := ourRoutes(t, nodeA); strings.Join(got, ";") != "10.244.0.0/16 blackhole;10.96.0.0/12 blackhole" {
		t.Errorf("after b left, node a routes %v", got)
	}
	if _, _, err := dial(pa.path, net.JoinHostPort(pb.res.IP.String(), "8080")); err == nil {
		t.Error("pa still reaches pb without a route")
	}

	pa.teardown(t, cA)
	pb.teardown(t, cB)
	assertClean(t, nodeA, cA, pa.id)
	assertClean(t, nodeB, cB, pb.id)
	for name, ns := range map[string]testNetNS{"a": nodeA, "b": nodeB} {
		if err := routes[name].RemoveAll(); err != nil {
			t.Fatal(err)
		}
		if got := ourRoutes(t, ns); len(got) != 0 {
			t.Errorf("node %s routes left: %v", name, got)
		}
	}
}

// A node whose IP is not on a connected network cannot be a host-gw next
// hop: Sync says so, and still syncs the others.
func TestRoutesUnreachableNextHop(t *testing.T) {
	requireNetworking(t)
	tag := uniq(t)
	l := newLAN(t, tag)
	node := newTestNetNS(t, "mk8st-"+tag+"-node")
	l.attach(t, node, 1)
	r, err := NewRoutes(RoutesConfig{NodeName: "a", HostNetNS: node.path})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Sync([]NodeRoute{
		{Name: "far", InternalIP: "203.0.113.7", PodCIDR: "10.244.9.0/24"},
		{Name: "near", InternalIP: "198.51.100.2", PodCIDR: "10.244.2.0/24"},
	})
	if err == nil || !strings.Contains(err.Error(), "10.244.9.0/24 via 203.0.113.7") {
		t.Errorf("err = %v, want the unreachable next hop named", err)
	}
	if got := ourRoutes(t, node); strings.Join(got, ";") != "10.244.2.0/24 via 198.51.100.2" {
		t.Errorf("routes %v", got)
	}
}

// The node's own connections to a ClusterIP pass through the proxy's
// DNAT when the service CIDR is routed onto the pod bridge; a blackhole
// for it would fail them in connect(). Sync leaves the service route
// alone.
func TestServiceRoute(t *testing.T) {
	requireNetworking(t)
	tag := uniq(t)
	l := newLAN(t, tag)
	node := newTestNetNS(t, "mk8st-"+tag+"-node")
	l.attach(t, node, 1)
	r, err := NewRoutes(RoutesConfig{NodeName: "a", HostNetNS: node.path})
	if err != nil {
		t.Fatal(err)
	}
	node.do(t, func() error { // a default route, as on a real host
		return netlink.RouteAdd(&netlink.Route{Dst: ipNet(netip.MustParsePrefix("0.0.0.0/0")), Gw: net.ParseIP("198.51.100.254")})
	})
	// Before any pod: the bridge does not exist yet.
	if err := r.EnsureBlackholes("10.244.0.0/16"); err != nil {
		t.Fatal(err)
	}
	if err := r.EnsureServiceRoute("10.96.0.0/12", "minik8s0"); err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(nil); err != nil {
		t.Fatal(err)
	}
	c := newTestCNI(t, node, "10.244.1.0/24")
	t.Cleanup(func() { _ = c.Uninstall(context.Background()) })
	web := setupPod(t, c, tag+"-web")
	serve(t, web.path, "web", 8080)
	// What the proxy would program for Service 10.96.0.10:80.
	node.do(t, func() error {
		out, err := exec.Command("iptables", "-w", "-t", "nat", "-A", "OUTPUT", "-d", "10.96.0.10/32", "-p", "tcp", "--dport", "80",
			"-j", "DNAT", "--to-destination", net.JoinHostPort(web.res.IP.String(), "8080")).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	if from := mustDial(t, node.path, "10.96.0.10:80", "web"); from != "10.244.1.1" {
		t.Errorf("pod saw the node as %s, want the bridge address", from)
	}
	if got := ourRoutes(t, node); strings.Join(got, ";") != "10.244.0.0/16 blackhole;10.96.0.0/12 dev" {
		t.Errorf("routes %v", got)
	}

	// The same with a blackhole instead: connect fails on the node.
	if err := r.EnsureBlackholes("10.96.0.0/12"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := dial(node.path, "10.96.0.10:80"); !errors.Is(err, unix.EINVAL) {
		t.Errorf("dial through a blackholed service CIDR: %v, want EINVAL", err)
	}
	web.teardown(t, c)
	assertClean(t, node, c, web.id)
}

// With HostNetNS empty everything happens in the process's own network
// namespace, as for a kubelet on the host or started with
// `nsenter --net`. The test re-runs itself in a fresh namespace
// (`unshare --net`) so the host's stays untouched.
func TestProcessNetNS(t *testing.T) {
	requireNetworking(t)
	if os.Getenv("MINIK8S_NETWORK_CHILD") != "1" {
		if _, err := exec.LookPath("unshare"); err != nil {
			t.Skip("needs unshare (util-linux)")
		}
		cmd := exec.Command("unshare", "--net", "--", os.Args[0], "-test.run=^TestProcessNetNS$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "MINIK8S_NETWORK_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestProcessNetNS") {
			t.Fatalf("child in its own netns: %v\n%s", err, out)
		}
		return
	}
	// The child: this process's namespace is the node.
	if err := setLoopbackUp(); err != nil {
		t.Fatal(err)
	}
	tag := uniq(t)
	c, err := New(Config{NodeName: "self", PodCIDR: "10.244.5.0/24", ClusterCIDR: "10.244.0.0/16", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	a := setupPod(t, c, tag+"-a", PortMapping{HostPort: 18082, ContainerPort: 8080})
	b := setupPod(t, c, tag+"-b")
	serve(t, a.path, "a", 8080)
	mustDial(t, b.path, net.JoinHostPort(a.res.IP.String(), "8080"), "a")
	mustDial(t, "", net.JoinHostPort(a.res.IP.String(), "8080"), "a")
	mustDial(t, "", "10.244.5.1:18082", "a")
	a.teardown(t, c)
	b.teardown(t, c)
	self := testNetNS{name: "self", path: "/proc/self/ns/net"}
	assertClean(t, self, c, a.id, b.id)
	if err := c.Uninstall(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// ourRoutes lists the routes tagged RouteProtocol in ns, as
// "dst blackhole" or "dst via gw", sorted.
func ourRoutes(t *testing.T, ns testNetNS) []string {
	t.Helper()
	var out []string
	ns.do(t, func() error {
		rts, err := listOurRoutes(-1)
		for _, rt := range rts {
			s := prefixOf(rt.Dst).String()
			switch {
			case rt.Type == unix.RTN_BLACKHOLE:
				s += " blackhole"
			case rt.Gw == nil:
				s += " dev"
			default:
				s += " via " + rt.Gw.String()
			}
			out = append(out, s)
		}
		return err
	})
	sort.Strings(out)
	return out
}
