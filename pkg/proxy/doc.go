// Package proxy is the service proxy (kube-proxy's job): it watches
// Services and EndpointSlices and programs the node's kernel with
// nftables, through sigs.k8s.io/knftables, so that a Service's ClusterIP,
// externalIPs and NodePort reach its ready endpoints.
//
// # What it owns
//
// One table, "ip minik8s-proxy", and nothing else: it never reads or
// touches another table (the CNI plugins' iptables rules, kube-proxy's
// tables, a user's firewall). Every sync rewrites the table's chains,
// maps and sets in one nft transaction, so the kernel never sees half a
// sync; syncs are coalesced (at most one per MinSyncPeriod) and repeated
// every SyncPeriod to repair outside damage. Cleanup deletes the table.
//
// # Rules
//
//	nat-prerouting, nat-output   jump services (traffic from pods and
//	                             from the node itself)
//	services                     daddr . proto . port  vmap @service-ips
//	                             fib daddr type local: proto . port vmap @service-nodeports
//	svc-...                      one per service port: affinity lookups,
//	                             then numgen random mod N vmap over ep-...
//	nodeport-...                 mark for masquerade, goto svc-...
//	ep-...                       mark hairpin traffic (a pod reaching
//	                             itself), record affinity, dnat
//	nat-postrouting              masquerade what was marked
//	filter-prerouting/-output    reject new connections to service
//	                             ports without endpoints (tcp reset,
//	                             icmp port-unreachable otherwise) so
//	                             they fail at once instead of timing out
//
// Traffic is masqueraded when it reaches a NodePort or a ClusterIP from
// outside ClusterCIDR (every NodePort connection when ClusterCIDR is
// unset), so replies come back through this node, and when a pod reaches
// itself through its Service. Session affinity ClientIP keeps one
// dynamic set per endpoint (client addresses, with the Service's
// timeout); a client found in one goes to that endpoint again.
//
// Endpoints are the ready ones; when none is ready, serving and
// terminating ones are used, as Kubernetes does. Traffic policies Local
// are treated as Cluster. Only IPv4 is programmed. There is no iptables
// fallback: without a usable nft, New fails.
//
// # Namespaces
//
// Config.HostNetNS names the node's network namespace when it is not the
// process's own: every nft command then runs from a thread that joined it
// (network.InNetNS), so the table lives in the node's namespace.
package proxy
