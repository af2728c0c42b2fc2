// Package proxy is the service proxy (kube-proxy's job): it watches
// Services and EndpointSlices and programs the node's kernel so that a
// Service's ClusterIP, externalIPs and NodePort reach its ready
// endpoints: with nftables, through sigs.k8s.io/knftables, falling back
// to iptables.
//
// # Modes
//
// Config.Mode picks how: "nftables", "iptables", or "auto" (the
// default): nftables when nft works in the node's namespace, else
// iptables when iptables does; New fails when the chosen mode does not
// work (auto: when neither does). Both modes render the same model (servicePorts)
// and behave alike. Start removes what the other mode left, whose rules
// would catch the same traffic, so a node can change modes; Cleanup
// removes what either left.
//
// # What it owns
//
// In nftables mode, one table, "ip minik8s-proxy", and nothing else: it
// never touches another table (the CNI plugins' iptables rules,
// kube-proxy's tables, a user's firewall) but to remove the iptables
// mode's MINIK8S- chains when it starts. Every sync is one nft
// transaction, so the kernel never sees half a sync: it rewrites the
// fixed chains, the maps and sets, and the chains of the service ports
// whose rules changed since the last sync; the first sync, one after a
// failure and the periodic one recreate the whole table.
//
// In iptables mode, the chains named MINIK8S-* in the nat and filter
// tables, and one jump rule into them at the top of each of the built-in
// chains nat PREROUTING, OUTPUT, POSTROUTING and filter INPUT, FORWARD,
// OUTPUT (inserted where iptables -C does not find it). Every sync is one
// iptables-restore --noflush: a declared chain (":CHAIN - [0:0]") is
// created or flushed and written again, chains no longer wanted are
// declared and then deleted (-X), and no other chain is touched; each
// table commits atomically. A sync writes the fixed chains and the
// per-service chains whose rules changed since the last one; the first
// sync, one after a failure and the periodic one write every chain,
// delete any MINIK8S- chain that is not wanted (found with
// iptables-save), whoever left it, and check the jump rules.
//
// Syncs are coalesced (at most one per MinSyncPeriod) and repeated every
// SyncPeriod to repair outside damage. Cleanup deletes the nftables
// table, the jump rules and the MINIK8S- chains.
//
// Beyond rules, Start turns on net.ipv4.conf.all.route_localnet in the
// node's namespace for localhost NodePorts (unless
// Config.LocalhostNodePorts is false), and Cleanup turns it off.
//
// # Rules (nftables)
//
//	nat-prerouting, nat-output   jump services (traffic from pods and
//	                             from the node itself)
//	services                     daddr . proto . port  vmap @service-ips
//	                             fib daddr type local but 127.0.0.0/8,
//	                             and 127.0.0.0/8 from a local source:
//	                             proto . port vmap @service-nodeports
//	svc-...                      one per service port, the ClusterIP's:
//	                             mark from outside ClusterCIDR, affinity
//	                             lookups, then numgen random mod N vmap
//	                             over ep-...; drop with no endpoint left
//	                             by internalTrafficPolicy Local
//	ext-...                      when a traffic policy is Local, where
//	                             the NodePort and externalIPs lead (see
//	                             Traffic policies)
//	nodeport-...                 mark for masquerade, goto svc-... (or
//	                             ext-...); not with externalTrafficPolicy
//	                             Local
//	ep-...                       mark hairpin traffic (a pod reaching
//	                             itself), record affinity, dnat
//	nat-postrouting              masquerade what was marked
//	filter-prerouting/-output    reject new connections to service
//	                             ports without endpoints (goto refuse:
//	                             tcp reset, icmp port-unreachable
//	                             otherwise) so they fail at once
//	                             instead of timing out
//	filter-forward,              after DNAT (priority dstnat+10 in
//	filter-output-post-dnat      output), new connections jump to
//	                             cluster-ips-check: still addressed to
//	                             one of @cluster-ips (a port its Service
//	                             does not define) or to ServiceCIDR (no
//	                             Service's address): goto refuse
//	filter-input                 the localnet guard: drop what comes for
//	                             127.0.0.0/8 from another interface than
//	                             lo, but replies and what was DNATed
//
// # Rules (iptables)
//
//	nat MINIK8S-SERVICES         from PREROUTING and OUTPUT: one rule per
//	                             ClusterIP/externalIP and port, -j the
//	                             service port's MINIK8S-SVC-<hash>; last,
//	                             ! -d 127.0.0.0/8 -m addrtype --dst-type
//	                             LOCAL, and -d 127.0.0.0/8 -m addrtype
//	                             --src-type LOCAL, -j MINIK8S-NODEPORTS
//	nat MINIK8S-NODEPORTS        per NodePort: -j MINIK8S-MARK-MASQ, then
//	                             -j MINIK8S-SVC-<hash> (or -EXT-); only the
//	                             latter with externalTrafficPolicy Local
//	nat MINIK8S-SVC-<hash>       mark from outside ClusterCIDR; for
//	                             ClientIP affinity, per endpoint -m recent
//	                             --name <its SEP chain> --rcheck --seconds
//	                             <timeout> --reap; then endpoint i of n
//	                             with -m statistic --mode random
//	                             --probability 1/(n-i), the last one
//	                             unconditionally; -j MINIK8S-MARK-DROP
//	                             with no endpoint left by
//	                             internalTrafficPolicy Local
//	nat MINIK8S-EXT-<hash>       as ext-... above, -g for goto
//	nat MINIK8S-SEP-<hash>       one per endpoint: mark hairpin traffic,
//	                             (-m recent --set for affinity) DNAT
//	nat MINIK8S-MARK-MASQ        MARK --or-mark 0x4000
//	nat MINIK8S-MARK-DROP        MARK --or-mark 0x8000 (nat cannot DROP)
//	nat MINIK8S-POSTROUTING      from POSTROUTING: MASQUERADE what is
//	                             marked 0x4000
//	filter MINIK8S-SERVICES      from INPUT, FORWARD and OUTPUT for
//	                             conntrack state NEW: DROP what is marked
//	                             0x8000 (left untranslated); REJECT (tcp-reset,
//	                             icmp-port-unreachable otherwise) service
//	                             ports without endpoints; -j
//	                             MINIK8S-REFUSE what is still addressed to
//	                             a ClusterIP (after DNAT: a port it does
//	                             not define), one rule per ClusterIP
//	                             outside ServiceCIDR and one for
//	                             ServiceCIDR; NodePort destinations (as
//	                             in nat) go on to MINIK8S-EXTERNAL
//	filter MINIK8S-EXTERNAL      REJECT NodePorts without endpoints
//	filter MINIK8S-REFUSE        REJECT: tcp-reset, else
//	                             icmp-port-unreachable
//	filter MINIK8S-FIREWALL      from INPUT: the localnet guard, ! -i lo
//	                             -d 127.0.0.0/8 -m conntrack ! --ctstate
//	                             RELATED,ESTABLISHED,DNAT -j DROP
//
// Hashes are of the service port ("namespace/name/proto/port") and of
// the endpoint, so a chain's name is stable across syncs and restarts.
// The nftables mode rejects in a prerouting hook before DNAT; iptables
// has no filter prerouting, so the rejects sit where the unanswered
// packet goes next: FORWARD (the service CIDR is routed onto the pod
// bridge), INPUT (a NodePort) and OUTPUT (from the node). Refusals of
// TCP are resets in both modes: a pod's packet for the service CIDR is
// routed back onto the pod bridge, the kernel sends the pod a redirect,
// and may then rate-limit an ICMP error to it.
//
// # Behaviour
//
// Traffic is masqueraded when it reaches a NodePort or a ClusterIP from
// outside ClusterCIDR (every NodePort connection when ClusterCIDR is
// unset), so replies come back through this node, and when a pod reaches
// itself through its Service. Session affinity ClientIP keeps, per
// endpoint, the client addresses with the Service's timeout (an
// nftables dynamic set, an xt_recent list); a client found there goes to
// that endpoint again.
//
// Endpoints are the ready ones; when none is ready, serving and
// terminating ones are used, as Kubernetes does. Only IPv4 is
// programmed.
//
// A new connection to a ClusterIP on a port its Service does not define,
// or to an address of Config.ServiceCIDR that is no Service's, is
// refused at once, from pods and from the node, as kube-proxy's nftables
// mode does (it drops the latter); without the proxy it would go onto the
// pod bridge and fail after seconds of ARP.
//
// NodePorts answer the node itself on 127.0.0.0/8 (Config.LocalhostNodePorts,
// default true), as kube-proxy's iptables mode does: the NodePort
// dispatch takes 127.0.0.0/8 from a local source only, the connection is
// masqueraded (127.0.0.1 cannot leave the node), and route_localnet lets
// it leave and its replies back in. With route_localnet on, another host
// could reach what listens on the node's loopback; the localnet guard
// drops what comes for 127.0.0.0/8 from anywhere but lo, unless it is a
// reply or was DNATed there. Unlike kube-proxy's iptables mode, a packet
// from another host for 127.0.0.1:<nodePort> is not DNATed either: the
// guard drops it.
//
// # Traffic policies
//
// An endpoint is local when its EndpointSlice nodeName is
// Config.NodeName (with no NodeName, none is).
//
// internalTrafficPolicy Local: traffic to the ClusterIP, from pods and
// from the node itself, goes to local endpoints only; when the Service
// has endpoints but none here, it is dropped (not refused: refusing is
// for a Service without any endpoint).
//
// externalTrafficPolicy Local (ports with a NodePort or externalIPs):
// traffic to the NodePort or an externalIP from anywhere else goes to
// local endpoints only and is not masqueraded, so the endpoint sees the
// client's address; when none is here, it is dropped. Traffic from pods
// (ClusterCIDR) and from the node itself (a local source address) takes
// a short circuit: it goes where the ClusterIP's would (svc-..., so
// internalTrafficPolicy applies), the node's marked for masquerade. A
// NodePort reached from another node's pod is "anywhere else". With
// ClusterCIDR unset only the node's own traffic takes the short circuit.
//
// Either policy Local gives the external traffic a chain of its own,
// ext-... (MINIK8S-EXT-<hash>): under externalTrafficPolicy Local the
// short circuit, then a spread over the local endpoints, or drop; under
// Cluster (with internalTrafficPolicy Local) mark from outside
// ClusterCIDR and spread over every endpoint, as the NodePort and
// externalIPs do without policies. nftables drops in the nat chains;
// iptables cannot, so it marks 0x8000 there, leaves the packet
// untranslated, and MINIK8S-SERVICES in filter drops it. Not done:
// healthCheckNodePort, and the fallback to this node's terminating
// endpoints while other nodes still have ready ones (the local ones are
// taken from the endpoints chosen cluster-wide).
//
// # Namespaces
//
// Config.HostNetNS names the node's network namespace when it is not the
// process's own: every nft, iptables, iptables-save and iptables-restore
// command then runs from a thread that joined it (network.InNetNS), so
// the rules live in the node's namespace. iptables is whichever the
// system's "iptables" is (iptables-nft on Debian, or iptables-legacy).
package proxy
