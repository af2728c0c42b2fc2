package network

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sort"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// RouteProtocol tags the routes Routes installs (the rtm_protocol field,
// shown by `ip route` as "proto 77"), so Sync can tell its own routes
// from everyone else's and remove the stale ones.
const RouteProtocol = netlink.RouteProtocol(77)

// NodeRoute is what Routes needs to know about a node.
type NodeRoute struct {
	Name       string
	InternalIP string // the next hop for PodCIDR
	PodCIDR    string
}

// NodeRoutes picks each node's InternalIP and spec.podCIDR.
func NodeRoutes(nodes []*corev1.Node) []NodeRoute {
	out := make([]NodeRoute, 0, len(nodes))
	for _, n := range nodes {
		r := NodeRoute{Name: n.Name, PodCIDR: n.Spec.PodCIDR}
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Is4() {
					r.InternalIP = a.Address
					break
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// RoutesConfig configures Routes.
type RoutesConfig struct {
	// NodeName is this node; its own entry in Sync's list gets no route
	// but puts the pods' gateway address on the bridge (see Sync).
	NodeName string
	// BridgeName is the node's pod bridge (default DefaultBridgeName).
	BridgeName string
	// HostNetNS is the path of the node's network namespace (empty: the
	// process's own), as in Config.
	HostNetNS string
	Logger    *slog.Logger
}

// Routes keeps, in a node's main routing table, one route per other
// node's PodCIDR via that node's InternalIP (host-gw), and blackholes for
// the cluster's address ranges.
type Routes struct {
	cfg RoutesConfig
	log *slog.Logger
}

// NewRoutes validates cfg. It changes nothing on the node.
func NewRoutes(cfg RoutesConfig) (*Routes, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("routes: a node name is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.BridgeName == "" {
		cfg.BridgeName = DefaultBridgeName
	}
	return &Routes{cfg: cfg, log: cfg.Logger.With("component", "routes", "node", cfg.NodeName)}, nil
}

// Sync makes this node's routes to other nodes' pods match nodes: it adds
// or corrects a route for every other node with a PodCIDR and an
// InternalIP, and removes the routes it installed earlier for nodes that
// are gone or changed. It also turns on IPv4 forwarding, which a node
// routing for its pods needs. A node whose IP is not directly reachable
// (host-gw needs one L2 segment) is reported in the error; the others
// are still synced.
//
// This node's own entry puts the pods' gateway (the first address of its
// PodCIDR) on the pod bridge at once, not when the first pod starts (the
// CNI bridge plugin would do it then, and finds it done): programs on the
// host published at that address (pkg/hostservice: the cluster DNS, the
// gateway, the apiserver) must answer other nodes' pods from the moment
// the node has a PodCIDR, even while it runs no pod of its own.
func (r *Routes) Sync(nodes []NodeRoute) error {
	want := map[netip.Prefix]netip.Addr{}
	var errs []error
	for _, n := range nodes {
		if n.Name == r.cfg.NodeName && n.PodCIDR != "" {
			if err := r.ensureGateway(n.PodCIDR); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if n.Name == r.cfg.NodeName || n.PodCIDR == "" || n.InternalIP == "" {
			continue
		}
		dst, err := netip.ParsePrefix(n.PodCIDR)
		if err != nil || !dst.Addr().Is4() {
			errs = append(errs, fmt.Errorf("node %s: pod CIDR %q is not IPv4", n.Name, n.PodCIDR))
			continue
		}
		gw, err := netip.ParseAddr(n.InternalIP)
		if err != nil || !gw.Is4() {
			errs = append(errs, fmt.Errorf("node %s: internal IP %q is not IPv4", n.Name, n.InternalIP))
			continue
		}
		want[dst.Masked()] = gw
	}
	err := InNetNS(r.cfg.HostNetNS, func() error {
		var errs []error
		if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("enable forwarding: %w", err))
		}
		have, err := listOurRoutes(unix.RTN_UNICAST)
		if err != nil {
			return err
		}
		for _, rt := range have {
			if rt.Gw == nil {
				continue // a service route (EnsureServiceRoute), not a node's
			}
			dst := prefixOf(rt.Dst)
			if gw, ok := want[dst]; ok && rt.Gw != nil && gw == addrOf(rt.Gw) {
				delete(want, dst) // already right
				continue
			}
			if err := netlink.RouteDel(&rt); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("delete route %s: %w", dst, err))
				continue
			}
			r.log.Info("removed pod route", "dst", dst, "via", rt.Gw)
		}
		for _, dst := range sortedPrefixes(want) {
			gw := want[dst]
			rt := &netlink.Route{
				Dst: ipNet(dst), Gw: net.IP(gw.AsSlice()),
				Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN, Type: unix.RTN_UNICAST,
			}
			if err := netlink.RouteReplace(rt); err != nil {
				errs = append(errs, fmt.Errorf("route %s via %s: %w", dst, gw, err))
				continue
			}
			r.log.Info("added pod route", "dst", dst, "via", gw)
		}
		return errors.Join(errs...)
	})
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sync pod routes: %w", err)
	}
	return nil
}

// EnsureBlackholes adds a blackhole route per CIDR (the cluster and
// service CIDRs) to the node's main table, so a packet for a pod or
// service address that nothing more specific claims (a local bridge, a
// route to another node) is dropped here instead of following the
// default route off the machine. It is idempotent.
func (r *Routes) EnsureBlackholes(cidrs ...string) error {
	var dsts []netip.Prefix
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil || !p.Addr().Is4() {
			return fmt.Errorf("blackhole %q: not an IPv4 CIDR", c)
		}
		dsts = append(dsts, p.Masked())
	}
	return InNetNS(r.cfg.HostNetNS, func() error {
		var errs []error
		for _, dst := range dsts {
			rt := &netlink.Route{Dst: ipNet(dst), Type: unix.RTN_BLACKHOLE, Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN}
			if err := netlink.RouteReplace(rt); err != nil {
				errs = append(errs, fmt.Errorf("blackhole %s: %w", dst, err))
			}
		}
		return errors.Join(errs...)
	})
}

// EnsureServiceRoute routes cidr (the service CIDR) onto the node's pod
// bridge dev, creating the bridge if no pod has yet. Use it instead of a
// blackhole for the service CIDR: a blackhole makes the node's own
// connect() to a ClusterIP fail (EINVAL) before the proxy's DNAT in the
// output path ever sees the packet, while this route lets the lookup
// succeed, the DNAT rewrite the destination and the kernel reroute to
// the chosen pod. An address that no Service rule claims is sent onto
// the bridge, where nobody answers for it, so it still never leaves the
// node. Pods are unaffected either way (their packets are DNATed before
// routing). It is idempotent.
func (r *Routes) EnsureServiceRoute(cidr, dev string) error {
	dst, err := netip.ParsePrefix(cidr)
	if err != nil || !dst.Addr().Is4() {
		return fmt.Errorf("service route %q: not an IPv4 CIDR", cidr)
	}
	return InNetNS(r.cfg.HostNetNS, func() error {
		link, err := ensureBridgeUp(dev)
		if err != nil {
			return fmt.Errorf("service route: %w", err)
		}
		rt := &netlink.Route{
			Dst: ipNet(dst.Masked()), LinkIndex: link.Attrs().Index, Scope: netlink.SCOPE_LINK,
			Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN, Type: unix.RTN_UNICAST,
		}
		if err := netlink.RouteReplace(rt); err != nil {
			return fmt.Errorf("service route %s dev %s: %w", dst, dev, err)
		}
		return nil
	})
}

// ensureGateway puts the first address of podCIDR, with its prefix
// length, on the node's pod bridge, as the CNI bridge plugin's isGateway
// does (the plugin then finds the same address and keeps it). Another
// IPv4 address there is left alone and reported: the plugin would refuse
// to attach pods to that bridge anyway.
func (r *Routes) ensureGateway(podCIDR string) error {
	p, err := netip.ParsePrefix(podCIDR)
	if err != nil || !p.Addr().Is4() {
		return fmt.Errorf("pod gateway: pod CIDR %q is not IPv4", podCIDR)
	}
	gw := netip.PrefixFrom(p.Masked().Addr().Next(), p.Bits())
	return InNetNS(r.cfg.HostNetNS, func() error {
		link, err := ensureBridgeUp(r.cfg.BridgeName)
		if err != nil {
			return fmt.Errorf("pod gateway: %w", err)
		}
		addrs, err := netlink.AddrList(link, netlink.FAMILY_V4)
		if err != nil {
			return fmt.Errorf("pod gateway: addresses of %s: %w", r.cfg.BridgeName, err)
		}
		for _, a := range addrs {
			if prefixOf(a.IPNet) == gw {
				return nil
			}
		}
		if len(addrs) > 0 {
			return fmt.Errorf("pod gateway: bridge %s has %s, not %s (a pod CIDR changed? delete the bridge)", r.cfg.BridgeName, addrs[0].IPNet, gw)
		}
		if err := netlink.AddrAdd(link, &netlink.Addr{IPNet: ipNet(gw)}); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("pod gateway: add %s to %s: %w", gw, r.cfg.BridgeName, err)
		}
		r.log.Info("pod gateway on bridge", "bridge", r.cfg.BridgeName, "address", gw)
		return nil
	})
}

// ensureBridgeUp finds or creates the bridge name, up, in the calling
// thread's namespace.
func ensureBridgeUp(name string) (netlink.Link, error) {
	link, err := netlink.LinkByName(name)
	if errors.As(err, new(netlink.LinkNotFoundError)) {
		if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("create bridge %s: %w", name, err)
		}
		link, err = netlink.LinkByName(name)
	}
	if err != nil {
		return nil, fmt.Errorf("bridge %s: %w", name, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return nil, fmt.Errorf("set %s up: %w", name, err)
	}
	return link, nil
}

// RemoveAll deletes every route Routes installed (pod routes, service
// routes and blackholes), for node removal and tests.
func (r *Routes) RemoveAll() error {
	return InNetNS(r.cfg.HostNetNS, func() error {
		have, err := listOurRoutes(-1)
		if err != nil {
			return err
		}
		var errs []error
		for _, rt := range have {
			if err := netlink.RouteDel(&rt); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("delete route %s: %w", rt.Dst, err))
			}
		}
		return errors.Join(errs...)
	})
}

// listOurRoutes lists the main table's IPv4 routes with RouteProtocol,
// of type typ (-1: any), in the calling thread's namespace.
func listOurRoutes(typ int) ([]netlink.Route, error) {
	filter := &netlink.Route{Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN}
	mask := netlink.RT_FILTER_PROTOCOL | netlink.RT_FILTER_TABLE
	if typ >= 0 {
		filter.Type = typ
		mask |= netlink.RT_FILTER_TYPE
	}
	var err error
	for range 3 {
		var rts []netlink.Route
		rts, err = netlink.RouteListFiltered(netlink.FAMILY_V4, filter, mask)
		if err == nil {
			return rts, nil
		}
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			break
		}
	}
	return nil, fmt.Errorf("list routes: %w", err)
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func prefixOf(n *net.IPNet) netip.Prefix {
	if n == nil {
		return netip.Prefix{}
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(addrOf(n.IP), ones)
}

func addrOf(ip net.IP) netip.Addr {
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	a, _ := netip.AddrFromSlice(ip)
	return a
}

func sortedPrefixes(m map[netip.Prefix]netip.Addr) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
