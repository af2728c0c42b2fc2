package network

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// requireNetworking skips unless the test can create namespaces and run
// Debian's CNI plugins and iptables (root with the packages installed,
// as in CI).
func requireNetworking(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces, bridges and iptables rules")
	}
	for _, p := range requiredPlugins {
		if _, err := invoke.FindInPath(p, []string{"/usr/lib/cni"}); err != nil {
			t.Skipf("needs CNI plugin %s in /usr/lib/cni (apt-get install containernetworking-plugins): %v", p, err)
		}
	}
	for _, bin := range []string{"iptables", "iptables-save"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("needs %s (apt-get install iptables)", bin)
		}
	}
}

// uniq is a short random tag for names that must not collide with other
// tests or sessions on the machine.
func uniq(t *testing.T) string {
	t.Helper()
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// testNetNS is a named network namespace the test created.
type testNetNS struct {
	name, path string
}

func newTestNetNS(t *testing.T, name string) testNetNS {
	t.Helper()
	path, err := CreateNamedNetNS(DefaultNetNSDir, name)
	if err != nil {
		t.Fatalf("create netns %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := RemoveNamedNetNS(DefaultNetNSDir, name); err != nil {
			t.Errorf("remove netns %s: %v", name, err)
		}
	})
	return testNetNS{name: name, path: path}
}

// do runs fn inside the namespace.
func (n testNetNS) do(t *testing.T, fn func() error) {
	t.Helper()
	if err := InNetNS(n.path, fn); err != nil {
		t.Fatalf("in netns %s: %v", n.name, err)
	}
}

// lan is an L2 segment: a bridge inside its own namespace that nodes and
// clients plug into, so nothing touches the host's namespace.
type lan struct {
	testNetNS
	prefix netip.Prefix
	ports  int
}

func newLAN(t *testing.T, tag string) *lan {
	t.Helper()
	l := &lan{testNetNS: newTestNetNS(t, "mk8st-"+tag+"-lan"), prefix: netip.MustParsePrefix("198.51.100.0/24")}
	l.do(t, func() error {
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "lan0"}}
		if err := netlink.LinkAdd(br); err != nil {
			return err
		}
		return netlink.LinkSetUp(br)
	})
	return l
}

// attach plugs ns into the LAN as eth0 with address ip (host part of the
// LAN's prefix).
func (l *lan) attach(t *testing.T, ns testNetNS, host int) netip.Addr {
	t.Helper()
	ip := l.prefix.Addr()
	for range host {
		ip = ip.Next()
	}
	l.ports++
	port := fmt.Sprintf("p%d", l.ports)
	fd, err := unix.Open(ns.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	l.do(t, func() error {
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: port}, PeerName: "eth0", PeerNamespace: netlink.NsFd(fd)}
		if err := netlink.LinkAdd(veth); err != nil {
			return fmt.Errorf("add veth: %w", err)
		}
		br, err := netlink.LinkByName("lan0")
		if err != nil {
			return err
		}
		link, err := netlink.LinkByName(port)
		if err != nil {
			return err
		}
		if err := netlink.LinkSetMaster(link, br); err != nil {
			return err
		}
		return netlink.LinkSetUp(link)
	})
	ns.do(t, func() error {
		link, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		addr := &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(ip, l.prefix.Bits()))}
		if err := netlink.AddrAdd(link, addr); err != nil {
			return err
		}
		return netlink.LinkSetUp(link)
	})
	return ip
}

// newTestCNI configures pod networking for a node living in ns.
func newTestCNI(t *testing.T, ns testNetNS, podCIDR string) *CNI {
	t.Helper()
	c, err := New(Config{
		NodeName: ns.name, PodCIDR: podCIDR, ClusterCIDR: "10.244.0.0/16",
		StateDir: t.TempDir(), HostNetNS: ns.path,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testPod is a pod sandbox's network namespace attached by a CNI.
type testPod struct {
	id, netns string
	path      string
	res       *Result
	ports     []PortMapping
}

func setupPod(t *testing.T, c *CNI, id string, ports ...PortMapping) *testPod {
	t.Helper()
	name := "mk8st-" + id
	path, err := c.NewNetNS(name)
	if err != nil {
		t.Fatal(err)
	}
	p := &testPod{id: id, netns: name, path: path, ports: ports}
	t.Cleanup(func() {
		_ = c.Teardown(context.Background(), id, path, ports)
		_ = c.DeleteNetNS(name)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p.res, err = c.Setup(ctx, id, path, ports)
	if err != nil {
		t.Fatalf("setup pod %s: %v", id, err)
	}
	return p
}

func (p *testPod) teardown(t *testing.T, c *CNI) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Teardown(ctx, p.id, p.path, p.ports); err != nil {
		t.Fatalf("teardown pod %s: %v", p.id, err)
	}
	if err := c.DeleteNetNS(p.netns); err != nil {
		t.Fatal(err)
	}
}

// serve listens on port inside ns and answers each connection with
// "<name> <remote address>".
func serve(t *testing.T, nsPath, name string, port int) {
	t.Helper()
	var ln net.Listener
	if err := InNetNS(nsPath, func() (err error) {
		ln, err = net.Listen("tcp4", fmt.Sprintf(":%d", port))
		return err
	}); err != nil {
		t.Fatalf("listen in %s: %v", name, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(conn, "%s %s\n", name, conn.RemoteAddr())
			conn.Close()
		}
	}()
}

// dial connects from inside nsPath to addr and returns the answer line
// (the server's name and the source address it saw).
func dial(nsPath, addr string) (server, seenFrom string, err error) {
	err = InNetNS(nsPath, func() error {
		conn, err := net.DialTimeout("tcp4", addr, 3*time.Second)
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			return err
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return fmt.Errorf("answer %q", line)
		}
		host, _, err := net.SplitHostPort(f[1])
		server, seenFrom = f[0], host
		return err
	})
	return server, seenFrom, err
}

func mustDial(t *testing.T, nsPath, addr, wantServer string) string {
	t.Helper()
	server, from, err := dial(nsPath, addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, nsPath, err)
	}
	if server != wantServer {
		t.Fatalf("dial %s: answered by %q, want %q", addr, server, wantServer)
	}
	return from
}

// assertClean checks that nothing of the pods is left on the node: no
// veth on its bridge, no address held by host-local, no libcni cache, no
// iptables rule naming a pod.
func assertClean(t *testing.T, node testNetNS, c *CNI, podIDs ...string) {
	t.Helper()
	// The kernel destroys a deleted namespace's veth asynchronously.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var veths []string
		node.do(t, func() error {
			links, err := netlink.LinkList()
			for _, l := range links {
				if l.Type() == "veth" && l.Attrs().Name != "eth0" {
					veths = append(veths, l.Attrs().Name)
				}
			}
			return err
		})
		if len(veths) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("veths left on node %s: %v", node.name, veths)
		}
		time.Sleep(100 * time.Millisecond)
	}
	allocs, err := c.Allocations()
	if err != nil {
		t.Fatal(err)
	}
	if len(allocs) != 0 {
		t.Errorf("host-local still holds %v", allocs)
	}
	results, _ := filepath.Glob(filepath.Join(c.cfg.StateDir, "cache", "results", "*"))
	if len(results) != 0 {
		t.Errorf("libcni cache still holds %v", results)
	}
	var rules []byte
	node.do(t, func() (err error) {
		rules, err = exec.Command("iptables-save").CombinedOutput()
		return err
	})
	for _, id := range podIDs {
		if strings.Contains(string(rules), id) {
			t.Errorf("iptables rules still name pod %s:\n%s", id, rules)
		}
	}
	for _, line := range strings.Split(string(rules), "\n") {
		if strings.HasPrefix(line, ":CNI-DN-") || strings.HasPrefix(line, "-A CNI-DN-") {
			t.Errorf("portmap chain left: %s", line)
		}
	}
}
