package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/minik8s/minik8s/pkg/kubelet/network"
)

// The addresses of the namespaces kernelPeer plugs into a node.
const (
	podIP      = "10.244.1.2" // a pod, behind the node's 10.244.1.1
	outsiderIP = "198.51.100.2"
	nodeLANIP  = "198.51.100.1" // the node's address facing the outsider
)

// kernelPeer makes a namespace name-<pid> and plugs it into the node's
// namespace at node with a veth, the node's end called link at nodeAddr
// and the peer's eth0 at addr (both /24), and runs setup in it. It
// returns the peer's path. Cleanup removes it, with the veth.
func kernelPeer(t *testing.T, node, name, link, nodeAddr, addr string, setup func(eth0 netlink.Link) error) string {
	t.Helper()
	nsName := fmt.Sprintf("mk8s-proxytest-%d-%s", os.Getpid(), name)
	path, err := network.CreateNamedNetNS(network.DefaultNetNSDir, nsName)
	if err != nil {
		t.Fatalf("create netns: %v", err)
	}
	t.Cleanup(func() { _ = network.RemoveNamedNetNS(network.DefaultNetNSDir, nsName) })
	err = network.InNetNS(node, func() error {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: link}, PeerName: "eth0", PeerNamespace: netlink.NsFd(fd)}
		if err := netlink.LinkAdd(veth); err != nil {
			return fmt.Errorf("add veth: %w", err)
		}
		return addrUp(link, nodeAddr)
	})
	if err != nil {
		t.Fatalf("node's end of %s: %v", name, err)
	}
	err = network.InNetNS(path, func() error {
		if err := addrUp("eth0", addr); err != nil {
			return err
		}
		eth0, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		return setup(eth0)
	})
	if err != nil {
		t.Fatalf("set up %s: %v", name, err)
	}
	return path
}

// addrUp gives the link addr/24 and sets it up.
func addrUp(link, addr string) error {
	l, err := netlink.LinkByName(link)
	if err != nil {
		return err
	}
	if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: ipNet(addr + "/24")}); err != nil {
		return fmt.Errorf("address %s: %w", link, err)
	}
	return netlink.LinkSetUp(l)
}

func ipNet(cidr string) *net.IPNet {
	p := netip.MustParsePrefix(cidr)
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)}
}

// kernelPod plugs a pod into the node's namespace as the node's bridge
// would: podIP behind 10.244.1.1, the node routing the service CIDR onto
// it (EnsureServiceRoute) and forwarding (Routes.Sync). The pod serves
// "pod" on TCP port 8080.
func kernelPod(t *testing.T, node string) string {
	t.Helper()
	path := kernelPeer(t, node, "pod", "pod0", "10.244.1.1", podIP, func(eth0 netlink.Link) error {
		return netlink.RouteAdd(&netlink.Route{Gw: net.ParseIP("10.244.1.1")})
	})
	err := network.InNetNS(node, func() error {
		l, err := netlink.LinkByName("pod0")
		if err != nil {
			return err
		}
		if err := netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: ipNet("10.96.0.0/12")}); err != nil {
			return fmt.Errorf("service route: %w", err)
		}
		return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, path, ":8080", "pod")
	return path
}

// kernelOutsider plugs another host into the node's namespace: at
// outsiderIP, facing the node's nodeLANIP, without 127.0.0.1 of its own,
// so what it sends to 127.0.0.0/8 goes to the node, and with
// route_localnet on, so it takes answers from there.
func kernelOutsider(t *testing.T, node string) string {
	t.Helper()
	return kernelPeer(t, node, "out", "out0", nodeLANIP, outsiderIP, func(eth0 netlink.Link) error {
		if err := os.WriteFile("/proc/sys/net/ipv4/conf/all/route_localnet", []byte("1"), 0o644); err != nil {
			return err
		}
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		if err := netlink.AddrDel(lo, &netlink.Addr{IPNet: ipNet("127.0.0.1/8")}); err != nil {
			return fmt.Errorf("remove 127.0.0.1: %w", err)
		}
		return netlink.RouteAdd(&netlink.Route{Dst: ipNet("127.0.0.0/8"), Gw: net.ParseIP(nodeLANIP)})
	})
}

// serve answers every TCP connection to addr, in the namespace at
// netns, with answer, until the test ends.
func serve(t *testing.T, netns, addr, answer string) {
	t.Helper()
	var ln net.Listener
	err := network.InNetNS(netns, func() (err error) {
		ln, err = net.Listen("tcp4", addr)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() }) // before the namespace goes: the socket holds it
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(answer))
			_ = c.Close()
		}
	}()
}

// dial connects from the namespace at netns to addr, giving up after a
// second, and says what came of it: the answer, "refused", "host
// unreachable", "timed out" (dropped, or an address nobody has), or the
// error.
func dial(netns, addr string) string {
	var out string
	err := network.InNetNS(netns, func() error {
		c, err := net.DialTimeout("tcp4", addr, time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		b, err := io.ReadAll(c)
		out = string(b)
		return err
	})
	var ne net.Error
	switch {
	case err == nil:
		return out
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "host unreachable"
	case errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	}
	return err.Error()
}

// webNodePort is Service web: ClusterIP 10.96.0.10, port 80 and NodePort
// 30080 to the pod's port 8080.
func webNodePort() ([]*corev1.Service, []*discoveryv1.EndpointSlice) {
	return []*corev1.Service{service("web", "10.96.0.10", []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 30080)}, nodePortType)},
		[]*discoveryv1.EndpointSlice{slice("web", []string{podIP}, epPort("http", corev1.ProtocolTCP, 8080))}
}

// TestKernelClusterIPOtherPorts: in both modes, a port a ClusterIP does
// not define, and an address of the service CIDR that is no Service's,
// are refused at once, from the node and from a pod, instead of going
// onto the pod network to fail after seconds.
func TestKernelClusterIPOtherPorts(t *testing.T) {
	for _, mode := range []Mode{ModeNFTables, ModeIPTables} {
		t.Run(string(mode), func(t *testing.T) {
			p, node := kernelProxier(t, mode)
			pod := kernelPod(t, node)
			p.prepareNode(context.Background())
			svcs, eps := webNodePort()
			if err := p.Sync(context.Background(), svcs, eps); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct{ from, netns, addr, want string }{
				{"node", node, "10.96.0.10:80", "pod"},
				{"node", node, "10.96.0.10:81", "refused"},
				{"node", node, "10.96.0.99:80", "refused"},
				{"pod", pod, "10.96.0.10:81", "refused"},
				{"pod", pod, "10.96.0.99:80", "refused"},
			} {
				if got := dial(tc.netns, tc.addr); got != tc.want {
					t.Errorf("%s -> %s: %s, want %s", tc.from, tc.addr, got, tc.want)
				}
			}
		})
	}
}

// TestKernelLocalhostNodePorts: in both modes, the node reaches a
// NodePort on 127.0.0.1 (route_localnet, masquerade), another host
// sending to 127.0.0.1 reaches neither the NodePort nor what listens on
// the node's loopback (the localnet guard drops it: without the guard it
// would get in), and Cleanup turns route_localnet off again.
func TestKernelLocalhostNodePorts(t *testing.T) {
	for _, mode := range []Mode{ModeNFTables, ModeIPTables} {
		t.Run(string(mode), func(t *testing.T) {
			ctx := context.Background()
			p, node := kernelProxier(t, mode)
			kernelPod(t, node)
			outsider := kernelOutsider(t, node)
			serve(t, node, "127.0.0.1:9999", "node's loopback")
			p.prepareNode(ctx)
			svcs, eps := webNodePort()
			if err := p.Sync(ctx, svcs, eps); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct{ from, netns, addr, want string }{
				{"node", node, "127.0.0.1:30080", "pod"},
				{"node", node, "127.0.0.1:9999", "node's loopback"},
				{"outsider", outsider, nodeLANIP + ":30080", "pod"},
				{"outsider", outsider, "127.0.0.1:30080", "timed out"},
				{"outsider", outsider, "127.0.0.1:9999", "timed out"},
			} {
				if got := dial(tc.netns, tc.addr); got != tc.want {
					t.Errorf("%s -> %s: %s, want %s", tc.from, tc.addr, got, tc.want)
				}
			}

			// Without the guard, the outsider gets in: the guard is what
			// dropped it.
			flush := []string{"nft", "flush", "chain", "ip", TableName, chainFilterInput}
			if mode == ModeIPTables {
				flush = []string{"iptables", "-F", iptFirewall}
			}
			err := network.InNetNS(node, func() error {
				if out, err := exec.Command(flush[0], flush[1:]...).CombinedOutput(); err != nil {
					return fmt.Errorf("%v: %s", err, out)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := dial(outsider, "127.0.0.1:9999"); got != "node's loopback" {
				t.Errorf("outsider -> 127.0.0.1:9999 without the guard: %s, want the node's loopback (the test's routes are wrong)", got)
			}

			if err := Cleanup(ctx, node); err != nil {
				t.Fatal(err)
			}
			var v []byte
			err = network.InNetNS(node, func() (err error) {
				v, err = os.ReadFile("/proc/sys/net/ipv4/conf/all/route_localnet")
				return err
			})
			if err != nil || strings.TrimSpace(string(v)) != "0" {
				t.Errorf("route_localnet after Cleanup: %q, %v; want 0", v, err)
			}
		})
	}
}
