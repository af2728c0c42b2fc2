package e2e

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/minik8s/minik8s/pkg/kubelet/network"
	"github.com/minik8s/minik8s/pkg/proxy"
)

// TestLocalhostNodePort: on a node, as on a `minik8s up` machine whose
// node is 127.0.0.1, `curl 127.0.0.1:30080` reaches the NodePort
// Service's pod, in both proxy modes (the node restarts in iptables
// mode, as a user switching modes would restart it). Another host on the
// LAN that sends to 127.0.0.1 through the node reaches the NodePort on
// the node's address, and nothing on 127.0.0.1.
func TestLocalhostNodePort(t *testing.T) {
	c := newCluster(t, 1)
	n1 := c.nodes[c.tag+"-n1"]
	c.apply(webPod("web", n1.name))
	c.apply(`apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080, nodePort: 30080}]
`)
	c.waitPod("default", "web", 2*time.Minute, "Running", running)

	localhost := func(mode string) {
		t.Helper()
		var body string
		var err error
		c.waitFor(time.Minute, "the NodePort answering on 127.0.0.1 in "+mode+" mode", func(context.Context) (bool, error) {
			body, err = httpGet(n1.netns, "127.0.0.1:30080")
			return err == nil, nil
		})
		if strings.TrimSpace(body) != "web" {
			t.Errorf("%s mode: 127.0.0.1:30080 on the node answered %q, want the pod web", mode, body)
		}
	}
	localhost(string(proxy.ModeNFTables))

	// Another host on the LAN, routing 127.0.0.0/8 to the node.
	name := "mk8s-" + c.tag + "-out"
	outsider, err := network.CreateNamedNetNS(network.DefaultNetNSDir, name)
	if err != nil {
		t.Fatalf("create netns: %v", err)
	}
	t.Cleanup(func() {
		if err := network.RemoveNamedNetNS(network.DefaultNetNSDir, name); err != nil {
			t.Errorf("remove netns %s: %v", name, err)
		}
	})
	c.lan.attach(t, outsider, 100)
	err = network.InNetNS(outsider, func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		// Without 127.0.0.1 of its own, and taking answers from there.
		if err := netlink.AddrDel(lo, &netlink.Addr{IPNet: ipNet(netip.MustParsePrefix("127.0.0.1/8"))}); err != nil {
			return err
		}
		if err := os.WriteFile("/proc/sys/net/ipv4/conf/all/route_localnet", []byte("1"), 0o644); err != nil {
			return err
		}
		return netlink.RouteAdd(&netlink.Route{Dst: ipNet(netip.MustParsePrefix("127.0.0.0/8")), Gw: n1.ip.AsSlice()})
	})
	if err != nil {
		t.Fatalf("set up the outsider: %v", err)
	}
	if body, err := httpGet(outsider, net.JoinHostPort(n1.ip.String(), "30080")); err != nil || strings.TrimSpace(body) != "web" {
		t.Errorf("the NodePort on %s from another host: %q, %v; want the pod web", n1.ip, body, err)
	}
	var ne net.Error
	if body, err := httpGet(outsider, "127.0.0.1:30080"); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("127.0.0.1:30080 through the node from another host: %q, %v; want nothing (dropped)", body, err)
	}

	c.stopNode(n1)
	c.proxyMode = string(proxy.ModeIPTables)
	c.startNode(n1)
	c.waitNodesReady(1)
	localhost(string(proxy.ModeIPTables))
	if body, err := httpGet(outsider, "127.0.0.1:30080"); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("iptables mode: 127.0.0.1:30080 through the node from another host: %q, %v; want nothing (dropped)", body, err)
	}
}
