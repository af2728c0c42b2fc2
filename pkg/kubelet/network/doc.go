// Package network is the kubelet's pod networking: it creates pod
// network namespaces, attaches them to the node's bridge through libcni
// and Debian's CNI plugins, and routes between nodes.
//
// # Pods on a node (CNI)
//
// CNI runs one chained configuration list, network "minik8s":
//
//	bridge    (minik8s0, the pods' gateway at PodCIDR's first address,
//	          hairpin on) with host-local IPAM over the node's PodCIDR
//	loopback  (lo up in the pod)
//	portmap   (hostPorts: DNAT from the node's addresses, SNAT for
//	          hairpin and localhost)
//
// The bridge plugin's own ipMasq would masquerade every packet leaving
// the node's PodCIDR, which would hide pod addresses from pods on other
// nodes; instead one iptables rule (nat POSTROUTING, -s PodCIDR
// ! -d ClusterCIDR -j MASQUERADE) hides pods behind their node only for
// traffic leaving the cluster CIDR. host-local keeps its reservations and
// libcni its result cache under Config.StateDir, so each node (even
// several on one machine) has its own.
//
// # One machine, many nodes
//
// libcni executes plugins in the network namespace of the calling
// thread. Config.HostNetNS names the node's namespace: every operation
// that touches the node (plugins, iptables, routes, sysctls) runs on a
// goroutine locked to an OS thread that has joined it (InNetNS); that
// thread is discarded afterwards, never reused in the wrong namespace.
// The process itself stays in the host's mount namespace, so the pod
// namespaces it bind-mounts under NetNSDir are visible to containerd.
// (Running a kubelet under `ip netns exec` would not do: that also
// unshares the mount namespace, hiding those mounts from containerd;
// `nsenter --net=...` with HostNetNS empty works.)
//
// # Between nodes: host-gw routes
//
// Routes.Sync installs, in each node's main table, a route to every other
// node's PodCIDR via that node's InternalIP, tagged with RouteProtocol so
// stale ones can be found and removed. We chose host-gw over VXLAN
// because:
//   - the nodes we run share one L2 segment (node namespaces on one
//     bridge or veth on one machine, or one LAN), which is all host-gw
//     needs;
//   - it adds no encapsulation: no MTU to shrink by 50 bytes, no VTEP,
//     no fdb or neighbour entries to keep in step with the node list,
//     and nothing to learn beyond `ip route`;
//   - packets keep pod source addresses end to end, so NetworkPolicy-like
//     filtering and the proxy's rules see real pod IPs.
//
// The cost: nodes on different L2 segments (routed networks, clouds that
// filter foreign source addresses) cannot reach each other's pods; Sync
// reports such a node (its next hop is unreachable) in its error. A
// VXLAN backend could be added behind the same Sync(nodes) call.
//
// EnsureBlackholes adds blackhole routes for the cluster (and, if asked,
// service) CIDRs, so a pod or service address that no bridge or node
// route claims is dropped on the node instead of leaking out through a
// default route. For the service CIDR prefer EnsureServiceRoute (a route
// onto the pod bridge): a blackhole there makes the node's own connect()
// to a ClusterIP fail with EINVAL before the proxy's output DNAT runs;
// the bridge route keeps that working and still lets nothing out.
//
// This package owns the node's pod bridge, its veths, the masquerade
// rule, the routes tagged RouteProtocol and the state under StateDir. It
// does not touch the API: the kubelet feeds it the node's PodCIDR and the
// node list, and Service rules belong to the proxy.
package network
