package proxy

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/knftables"
)

// TableName is the one nftables table (family ip) the proxy owns.
const TableName = "minik8s-proxy"

// masqMark marks packets that nat-postrouting masquerades.
const masqMark = "0x4000"

// dropMark marks packets that the iptables mode's filter chains drop
// (its nat chains cannot).
const dropMark = "0x8000"

// DefaultAffinityTimeout is sessionAffinityConfig.clientIP.timeoutSeconds'
// default.
const DefaultAffinityTimeout = 10800 * time.Second

// Fixed chains, maps and sets.
const (
	chainNATPrerouting        = "nat-prerouting"
	chainNATOutput            = "nat-output"
	chainNATPostrouting       = "nat-postrouting"
	chainFilterPrerouting     = "filter-prerouting"
	chainFilterInput          = "filter-input"
	chainFilterForward        = "filter-forward"
	chainFilterOutput         = "filter-output"
	chainFilterOutputPostDNAT = "filter-output-post-dnat"
	chainServices             = "services"
	chainRejectServices       = "reject-services"
	chainClusterIPsCheck      = "cluster-ips-check"
	chainReject               = "refuse"
	chainMarkForMasq          = "mark-for-masquerade"

	mapServiceIPs       = "service-ips"
	mapServiceNodePorts = "service-nodeports"
	setNoEndpointIPs    = "no-endpoint-services"
	setNoEndpointPorts  = "no-endpoint-nodeports"
	setClusterIPs       = "cluster-ips"
)

// loopbackCIDR is 127.0.0.0/8: NodePorts answer there to the node
// itself only, and the localnet guard drops what else comes for it.
const loopbackCIDR = "127.0.0.0/8"

// ruleConfig is what the rules of both modes depend on besides the
// service ports.
type ruleConfig struct {
	// clusterCIDR is the pod network; empty: every NodePort connection
	// is masqueraded.
	clusterCIDR string
	// serviceCIDR is where ClusterIPs are allocated: an address in it
	// that is no Service's ClusterIP is refused too. Empty: only the
	// ports ClusterIPs do not define are.
	serviceCIDR string
	// localhostNodePorts: the node's own connections to 127.0.0.0/8 reach
	// NodePorts (route_localnet is on).
	localhostNodePorts bool
}

// servicePort is one port of one Service, with what it leads to: the
// unit the rules are written for.
type servicePort struct {
	namespace, name, portName string
	proto                     string // tcp, udp or sctp
	clusterIP                 string // empty: headless (externalIPs only)
	externalIPs               []string
	port, nodePort            int32
	affinity                  time.Duration // 0: no session affinity
	// internalLocal (internalTrafficPolicy Local): ClusterIP traffic
	// goes to this node's endpoints only.
	internalLocal bool
	// externalLocal (externalTrafficPolicy Local, only on ports with a
	// NodePort or externalIPs): traffic from outside the pod network and
	// this node to those goes to this node's endpoints only, and is not
	// masqueraded.
	externalLocal bool
	endpoints     []endpoint
}

type endpoint struct {
	ip    string
	port  int32
	local bool // on this node
}

func (e endpoint) String() string { return e.ip + ":" + strconv.Itoa(int(e.port)) }

// id names the service port in chain names and comments.
func (sp *servicePort) id() string {
	return fmt.Sprintf("%s/%s/%s/%d", sp.namespace, sp.name, sp.proto, sp.port)
}

// ips are the ClusterIP and the externalIPs.
func (sp *servicePort) ips() []string {
	if sp.clusterIP == "" {
		return sp.externalIPs
	}
	return append([]string{sp.clusterIP}, sp.externalIPs...)
}

// external tells whether the port is reachable from outside the
// cluster: a NodePort or externalIPs.
func (sp *servicePort) external() bool { return sp.nodePort != 0 || len(sp.externalIPs) > 0 }

// ownExternalChain tells whether external traffic needs a chain of its
// own, not the ClusterIP's: when either policy is Local the two lead
// to different endpoints.
func (sp *servicePort) ownExternalChain() bool {
	return sp.external() && (sp.internalLocal || sp.externalLocal)
}

// clusterEndpoints are where ClusterIP traffic goes.
func (sp *servicePort) clusterEndpoints() []endpoint {
	if sp.internalLocal {
		return localEndpoints(sp.endpoints)
	}
	return sp.endpoints
}

// externalEndpoints are where traffic to the NodePort and externalIPs
// goes, but for pods' and this node's under externalTrafficPolicy Local.
func (sp *servicePort) externalEndpoints() []endpoint {
	if sp.externalLocal {
		return localEndpoints(sp.endpoints)
	}
	return sp.endpoints
}

// usedEndpoints are those some chain leads to: each has a chain.
func (sp *servicePort) usedEndpoints() []endpoint {
	if sp.internalLocal && (sp.externalLocal || !sp.external()) {
		return localEndpoints(sp.endpoints)
	}
	return sp.endpoints
}

func localEndpoints(eps []endpoint) []endpoint {
	var out []endpoint
	for _, e := range eps {
		if e.local {
			out = append(out, e)
		}
	}
	return out
}

// servicePorts turns Services and their EndpointSlices into the ports
// to program, sorted so a sync renders the same transaction each time.
// An endpoint is local when its nodeName is node.
func servicePorts(svcs []*corev1.Service, eps []*discoveryv1.EndpointSlice, node string) []servicePort {
	byService := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range eps {
		name := s.Labels[discoveryv1.LabelServiceName]
		if name == "" || s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		byService[s.Namespace+"/"+name] = append(byService[s.Namespace+"/"+name], s)
	}
	var out []servicePort
	for _, svc := range svcs {
		if svc.Spec.Type == corev1.ServiceTypeExternalName {
			continue
		}
		var clusterIP string
		if ip, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil && ip.Is4() {
			clusterIP = ip.String()
		}
		var externalIPs []string
		for _, s := range svc.Spec.ExternalIPs {
			if ip, err := netip.ParseAddr(s); err == nil && ip.Is4() {
				externalIPs = append(externalIPs, ip.String())
			}
		}
		if clusterIP == "" && len(externalIPs) == 0 {
			continue // headless, or not allocated yet
		}
		var affinity time.Duration
		if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
			affinity = DefaultAffinityTimeout
			if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil && *c.ClientIP.TimeoutSeconds > 0 {
				affinity = time.Duration(*c.ClientIP.TimeoutSeconds) * time.Second
			}
		}
		internalLocal := svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal
		for _, p := range svc.Spec.Ports {
			proto := strings.ToLower(string(p.Protocol))
			if proto == "" {
				proto = "tcp"
			}
			sp := servicePort{
				namespace: svc.Namespace, name: svc.Name, portName: p.Name, proto: proto,
				clusterIP: clusterIP, externalIPs: externalIPs, port: p.Port, affinity: affinity,
				internalLocal: internalLocal,
				endpoints:     endpointsFor(byService[svc.Namespace+"/"+svc.Name], p, node),
			}
			if svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
				sp.nodePort = p.NodePort
			}
			sp.externalLocal = sp.external() && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
			out = append(out, sp)
		}
	}
	slices.SortFunc(out, func(a, b servicePort) int { return strings.Compare(a.id(), b.id()) })
	return out
}

// endpointsFor picks the slices' endpoints for one service port: the
// ready ones, or when none is ready the serving and terminating ones.
func endpointsFor(eps []*discoveryv1.EndpointSlice, p corev1.ServicePort, node string) []endpoint {
	var ready, terminating []endpoint
	seen := map[string]bool{} // ip:port
	for _, s := range eps {
		var port int32
		found := false
		for _, sp := range s.Ports {
			proto := corev1.ProtocolTCP
			if sp.Protocol != nil {
				proto = *sp.Protocol
			}
			name := ""
			if sp.Name != nil {
				name = *sp.Name
			}
			pp := p.Protocol
			if pp == "" {
				pp = corev1.ProtocolTCP
			}
			if name == p.Name && proto == pp && sp.Port != nil {
				port, found = *sp.Port, true
				break
			}
		}
		if !found {
			continue
		}
		for _, e := range s.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			ip, err := netip.ParseAddr(e.Addresses[0])
			if err != nil || !ip.Is4() {
				continue
			}
			ep := endpoint{ip: ip.String(), port: port, local: node != "" && e.NodeName != nil && *e.NodeName == node}
			if seen[ep.String()] {
				continue
			}
			c := e.Conditions
			isReady := c.Ready == nil || *c.Ready
			serving := isReady
			if c.Serving != nil {
				serving = *c.Serving
			}
			term := c.Terminating != nil && *c.Terminating
			switch {
			case isReady && !term:
				ready = append(ready, ep)
			case serving && term:
				terminating = append(terminating, ep)
			default:
				continue
			}
			seen[ep.String()] = true
		}
	}
	out := ready
	if len(out) == 0 {
		out = terminating
	}
	slices.SortFunc(out, func(a, b endpoint) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// tableState is what the last successful sync left in the table, so the
// next one can delete what is no longer wanted.
type tableState struct {
	chains map[string]bool // per-service chains
	sets   map[string]bool // affinity sets
	// written maps a service port's id to the fingerprint of the chains
	// written for it, so an unchanged one is not written again.
	written map[string]string
}

// hashName makes a short, stable name part from a key.
func hashName(key string) string {
	h := sha256.Sum256([]byte(key))
	return base32.StdEncoding.EncodeToString(h[:])[:10]
}

func chainName(prefix, key string) string {
	name := prefix + "-" + hashName(key) + "-" + key
	if len(name) > knftables.NameLengthMax {
		name = name[:knftables.NameLengthMax]
	}
	return name
}

// renderer writes the table into one transaction.
type renderer struct {
	tx *knftables.Transaction
	ruleConfig
	// clusterIPs are those already in the cluster-ips set.
	clusterIPs map[string]bool
	// keep holds the fingerprints of service ports whose chains are in
	// the table as they should be: only their map elements are written.
	keep map[string]string
}

// render writes the table for ports into tx. prev is the state the
// table is in (nil: unknown, the table is recreated from scratch); the
// returned state is the one tx leaves it in. Unless full, the chains of
// service ports that have not changed since prev are left as they are;
// the fixed chains, maps and sets are always rewritten.
func render(tx *knftables.Transaction, ports []servicePort, cfg ruleConfig, prev *tableState, full bool) *tableState {
	r := &renderer{tx: tx, ruleConfig: cfg, clusterIPs: map[string]bool{}}
	if prev != nil && !full {
		r.keep = prev.written
	}
	table := &knftables.Table{Comment: knftables.PtrTo("minik8s service proxy")}
	tx.Add(table)
	if prev == nil {
		// Start clean: whatever an earlier run left is replaced, in the
		// same transaction.
		tx.Delete(table)
		tx.Add(table)
		prev = &tableState{}
	}
	r.base()
	next := &tableState{chains: map[string]bool{}, sets: map[string]bool{}, written: map[string]string{}}
	for i := range ports {
		r.servicePort(&ports[i], next)
	}
	// Every surviving chain was kept or rewritten above, and the maps
	// were rewritten, so nothing refers to the stale ones any more.
	var stale []string
	for c := range prev.chains {
		if !next.chains[c] {
			stale = append(stale, c)
		}
	}
	slices.Sort(stale)
	for _, c := range stale {
		tx.Flush(&knftables.Chain{Name: c})
	}
	for _, c := range stale {
		tx.Delete(&knftables.Chain{Name: c})
	}
	for s := range prev.sets {
		if !next.sets[s] {
			tx.Delete(&knftables.Set{Name: s})
		}
	}
	return next
}

func (r *renderer) chain(c *knftables.Chain, rules ...string) {
	r.tx.Add(c)
	r.tx.Flush(c)
	for _, rule := range rules {
		r.tx.Add(&knftables.Rule{Chain: c.Name, Rule: rule})
	}
}

func baseChain(name string, typ knftables.BaseChainType, hook knftables.BaseChainHook, prio knftables.BaseChainPriority) *knftables.Chain {
	return &knftables.Chain{Name: name, Type: &typ, Hook: &hook, Priority: &prio}
}

// base writes the fixed chains, maps and sets (emptied).
func (r *renderer) base() {
	tx := r.tx
	for _, m := range []*knftables.Map{
		{Name: mapServiceIPs, Type: "ipv4_addr . inet_proto . inet_service : verdict"},
		{Name: mapServiceNodePorts, Type: "inet_proto . inet_service : verdict"},
	} {
		tx.Add(m)
		tx.Flush(m)
	}
	for _, s := range []*knftables.Set{
		{Name: setNoEndpointIPs, Type: "ipv4_addr . inet_proto . inet_service"},
		{Name: setNoEndpointPorts, Type: "inet_proto . inet_service"},
		{Name: setClusterIPs, Type: "ipv4_addr"},
	} {
		tx.Add(s)
		tx.Flush(s)
	}
	r.chain(&knftables.Chain{Name: chainMarkForMasq}, "meta mark set meta mark | "+masqMark)
	r.chain(&knftables.Chain{Name: chainServices}, slices.Concat(
		[]string{"ip daddr . meta l4proto . th dport vmap @" + mapServiceIPs},
		r.nodePorts("meta l4proto . th dport vmap @"+mapServiceNodePorts))...)
	r.chain(&knftables.Chain{Name: chainReject},
		"meta l4proto tcp reject with tcp reset",
		"reject")
	r.chain(&knftables.Chain{Name: chainRejectServices}, slices.Concat(
		[]string{"ip daddr . meta l4proto . th dport @" + setNoEndpointIPs + " goto " + chainReject},
		r.nodePorts("meta l4proto . th dport @"+setNoEndpointPorts+" goto "+chainReject))...)
	// After service dispatch: what is still addressed to a ClusterIP
	// matched none of its ports; the rest of the service CIDR is no
	// Service's.
	checks := []string{"ip daddr @" + setClusterIPs + " goto " + chainReject}
	if r.serviceCIDR != "" {
		checks = append(checks, "ip daddr "+r.serviceCIDR+" goto "+chainReject)
	}
	r.chain(&knftables.Chain{Name: chainClusterIPsCheck}, checks...)
	r.chain(baseChain(chainNATPrerouting, knftables.NATType, knftables.PreroutingHook, knftables.DNATPriority), "jump "+chainServices)
	r.chain(baseChain(chainNATOutput, knftables.NATType, knftables.OutputHook, knftables.DNATPriority), "jump "+chainServices)
	r.chain(baseChain(chainNATPostrouting, knftables.NATType, knftables.PostroutingHook, knftables.SNATPriority),
		"meta mark & "+masqMark+" == "+masqMark+" masquerade")
	// Before DNAT, so a service port without endpoints is refused.
	filterPrio := knftables.BaseChainPriority("-110") // dstnat - 10
	r.chain(baseChain(chainFilterPrerouting, knftables.FilterType, knftables.PreroutingHook, filterPrio), "ct state new jump "+chainRejectServices)
	r.chain(baseChain(chainFilterOutput, knftables.FilterType, knftables.OutputHook, filterPrio), "ct state new jump "+chainRejectServices)
	// After DNAT: pods' packets are forwarded, the node's leave through
	// output.
	r.chain(baseChain(chainFilterForward, knftables.FilterType, knftables.ForwardHook, filterPrio), "ct state new jump "+chainClusterIPsCheck)
	r.chain(baseChain(chainFilterOutputPostDNAT, knftables.FilterType, knftables.OutputHook, knftables.BaseChainPriority("-90")), // dstnat + 10
		"ct state new jump "+chainClusterIPsCheck)
	// The localnet guard: with route_localnet on, a packet for
	// 127.0.0.0/8 from another host is no longer a martian; only replies
	// and what was DNATed there may come in.
	r.chain(baseChain(chainFilterInput, knftables.FilterType, knftables.InputHook, filterPrio),
		"ip daddr "+loopbackCIDR+` iif != "lo" ct state & (established | related) == 0 ct status & dnat == 0 drop`)
}

// nodePorts are the rules that send what comes for a NodePort on to
// verdict: a local address but loopback, and loopback from the node
// itself (a local source) when localhost NodePorts are on.
func (r *renderer) nodePorts(verdict string) []string {
	rules := []string{"fib daddr type local ip daddr != " + loopbackCIDR + " " + verdict}
	if r.localhostNodePorts {
		rules = append(rules, "ip daddr "+loopbackCIDR+" fib saddr type local "+verdict)
	}
	return rules
}

// servicePort writes one service port's chains and map elements.
//
// svc-... is the ClusterIP's chain: it spreads over the cluster
// endpoints (this node's only, under internalTrafficPolicy Local), and
// drops when there are none. ext-..., when either policy is Local, is
// where the NodePort and externalIPs lead: under externalTrafficPolicy
// Local, traffic from pods and from this node goes on to svc-... (as
// ClusterIP traffic would), the rest spreads over this node's endpoints,
// unmasqueraded, or is dropped; under Cluster it spreads over all
// endpoints. Otherwise the NodePort leads to nodeport-..., which marks
// for masquerade and goes on to svc-..., and externalIPs to svc-....
func (r *renderer) servicePort(sp *servicePort, next *tableState) {
	tx := r.tx
	// The chains are a function of sp and clusterCIDR alone.
	fingerprint := fmt.Sprintf("%+v", *sp)
	unchanged := r.keep != nil && r.keep[sp.id()] == fingerprint
	next.written[sp.id()] = fingerprint
	chain := func(c *knftables.Chain, rules ...string) {
		if !unchanged {
			r.chain(c, rules...)
		}
	}
	port := strconv.Itoa(int(sp.port))
	nodePort := strconv.Itoa(int(sp.nodePort))
	if sp.clusterIP != "" && !r.clusterIPs[sp.clusterIP] {
		r.clusterIPs[sp.clusterIP] = true
		tx.Add(&knftables.Element{Set: setClusterIPs, Key: []string{sp.clusterIP}})
	}
	if len(sp.endpoints) == 0 {
		for _, ip := range sp.ips() {
			tx.Add(&knftables.Element{Set: setNoEndpointIPs, Key: []string{ip, sp.proto, port}, Comment: knftables.PtrTo(sp.id())})
		}
		if sp.nodePort != 0 {
			tx.Add(&knftables.Element{Set: setNoEndpointPorts, Key: []string{sp.proto, nodePort}, Comment: knftables.PtrTo(sp.id())})
		}
		return
	}
	// One chain per endpoint that some chain leads to, with its
	// affinity set.
	epChains := map[string]string{}
	affinitySets := map[string]string{}
	for _, ep := range sp.usedEndpoints() {
		epKey := sp.id() + "/" + ep.ip + "/" + strconv.Itoa(int(ep.port))
		epChain := chainName("ep", epKey)
		next.chains[epChain] = true
		epChains[ep.String()] = epChain
		epRules := []string{"ip saddr " + ep.ip + " jump " + chainMarkForMasq} // hairpin
		if sp.affinity > 0 {
			set := "affinity-" + hashName(fmt.Sprintf("%s/%d", epKey, int64(sp.affinity.Seconds())))
			if !next.sets[set] && !unchanged {
				tx.Add(&knftables.Set{Name: set, Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.DynamicFlag, knftables.TimeoutFlag},
					Timeout: knftables.PtrTo(sp.affinity), Comment: knftables.PtrTo(epKey)})
			}
			next.sets[set] = true
			affinitySets[ep.String()] = set
			epRules = append(epRules, "update @"+set+" { ip saddr }")
		}
		epRules = append(epRules, fmt.Sprintf("meta l4proto %s dnat to %s", sp.proto, ep))
		chain(&knftables.Chain{Name: epChain}, epRules...)
	}
	// spread picks one of eps: the one a client has affinity to, else
	// one at random; none: the packet is dropped.
	spread := func(eps []endpoint) []string {
		if len(eps) == 0 {
			return []string{"drop"}
		}
		var rules, vmap []string
		for i, ep := range eps {
			if set, ok := affinitySets[ep.String()]; ok {
				rules = append(rules, "ip saddr @"+set+" goto "+epChains[ep.String()])
			}
			vmap = append(vmap, fmt.Sprintf("%d : goto %s", i, epChains[ep.String()]))
		}
		return append(rules, fmt.Sprintf("numgen random mod %d vmap { %s }", len(eps), strings.Join(vmap, " , ")))
	}
	// From outside the pod network (the node itself, a host route):
	// replies must come back through this node.
	var masqOutside []string
	if r.clusterCIDR != "" {
		masqOutside = []string{"ip saddr != " + r.clusterCIDR + " jump " + chainMarkForMasq}
	}

	svcChain := chainName("svc", sp.id())
	next.chains[svcChain] = true
	clusterEPs := sp.clusterEndpoints()
	if len(clusterEPs) == 0 {
		chain(&knftables.Chain{Name: svcChain}, "drop") // internalTrafficPolicy Local, none here
	} else {
		chain(&knftables.Chain{Name: svcChain}, slices.Concat(masqOutside, spread(clusterEPs))...)
	}
	if sp.clusterIP != "" {
		tx.Add(&knftables.Element{Map: mapServiceIPs, Key: []string{sp.clusterIP, sp.proto, port}, Value: []string{"goto " + svcChain}})
	}

	extChain := svcChain // where externalIPs lead
	if sp.ownExternalChain() {
		extChain = chainName("ext", sp.id())
		next.chains[extChain] = true
		var rules []string
		if sp.externalLocal {
			if r.clusterCIDR != "" {
				rules = append(rules, "ip saddr "+r.clusterCIDR+" goto "+svcChain)
			}
			rules = append(rules,
				"fib saddr type local jump "+chainMarkForMasq,
				"fib saddr type local goto "+svcChain)
			rules = append(rules, spread(sp.externalEndpoints())...)
		} else {
			rules = slices.Concat(masqOutside, spread(sp.externalEndpoints()))
		}
		chain(&knftables.Chain{Name: extChain}, rules...)
	}
	for _, ip := range sp.externalIPs {
		tx.Add(&knftables.Element{Map: mapServiceIPs, Key: []string{ip, sp.proto, port}, Value: []string{"goto " + extChain}})
	}
	if sp.nodePort != 0 {
		target := extChain
		if !sp.externalLocal {
			target = chainName("nodeport", sp.id())
			next.chains[target] = true
			masq := "jump " + chainMarkForMasq
			if r.clusterCIDR != "" {
				masq = "ip saddr != " + r.clusterCIDR + " " + masq
			}
			chain(&knftables.Chain{Name: target}, masq, "goto "+extChain)
		}
		tx.Add(&knftables.Element{Map: mapServiceNodePorts, Key: []string{sp.proto, nodePort}, Value: []string{"goto " + target}})
	}
}
