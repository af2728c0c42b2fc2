package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/minik8s/minik8s/pkg/kubelet/network"
)

// Runner runs one command to its end, feeding it stdin when that is not
// nil, and returns its standard output. A command that ran and failed
// returns an error with an ExitCode() int method in its chain (as
// *exec.ExitError has).
type Runner interface {
	Run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error)
}

// execRunner runs commands in the network namespace netns (the
// process's own when empty).
type execRunner struct{ netns string }

var _ Runner = execRunner{}

func (r execRunner) Run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	var out []byte
	err := network.InNetNS(r.netns, func() error {
		cmd := exec.CommandContext(ctx, name, args...)
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		var err error
		if out, err = cmd.Output(); err != nil {
			return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return nil
	})
	return out, err
}

// exitCode is the exit status of the command that err reports, or -1.
func exitCode(err error) int {
	var e interface{ ExitCode() int }
	if errors.As(err, &e) {
		return e.ExitCode()
	}
	return -1
}

// The chains the iptables mode owns. The per-service ones are
// MINIK8S-SVC-<hash> (one per service port) and MINIK8S-SEP-<hash> (one
// per endpoint of a service port), in the nat table.
const (
	iptPrefix      = "MINIK8S-"
	iptServices    = "MINIK8S-SERVICES"    // nat and filter
	iptNodePorts   = "MINIK8S-NODEPORTS"   // nat
	iptPostrouting = "MINIK8S-POSTROUTING" // nat
	iptMarkMasq    = "MINIK8S-MARK-MASQ"   // nat
	iptMarkDrop    = "MINIK8S-MARK-DROP"   // nat: filter drops what it marks
	iptExternal    = "MINIK8S-EXTERNAL"    // filter: NodePorts without endpoints
	iptFirewall    = "MINIK8S-FIREWALL"    // filter: the localnet guard
	iptRefuse      = "MINIK8S-REFUSE"      // filter: tcp reset, else icmp port unreachable
	iptSvcPrefix   = "MINIK8S-SVC-"
	iptSepPrefix   = "MINIK8S-SEP-"
	iptExtPrefix   = "MINIK8S-EXT-"
	iptComment     = "minik8s service proxy"
	xtablesWait    = "5" // seconds to wait for the xtables lock (legacy iptables)
)

// iptFixed are the chains every sync declares, by table, in order.
var iptFixed = map[string][]string{
	"filter": {iptServices, iptExternal, iptFirewall, iptRefuse},
	"nat":    {iptServices, iptNodePorts, iptPostrouting, iptMarkMasq, iptMarkDrop},
}

// iptTables are the tables written, in the order of the restore input.
var iptTables = []string{"filter", "nat"}

// iptJump is a rule in a built-in chain that leads into ours; each is
// inserted once, at the top.
type iptJump struct {
	table, chain string
	rule         []string
}

var iptJumps = func() []iptJump {
	comment := []string{"-m", "comment", "--comment", iptComment}
	nat := slices.Concat(comment, []string{"-j", iptServices})
	post := slices.Concat(comment, []string{"-j", iptPostrouting})
	// Only new connections are refused; what conntrack already knows
	// was translated when its Service had endpoints.
	filter := slices.Concat([]string{"-m", "conntrack", "--ctstate", "NEW"}, comment, []string{"-j", iptServices})
	// The guard sees every packet, whatever its state.
	firewall := slices.Concat(comment, []string{"-j", iptFirewall})
	return []iptJump{
		{"nat", "PREROUTING", nat},
		{"nat", "OUTPUT", nat},
		{"nat", "POSTROUTING", post},
		{"filter", "INPUT", filter},
		{"filter", "FORWARD", filter},
		{"filter", "OUTPUT", filter},
		{"filter", "INPUT", firewall},
	}
}()

// iptChains is a set of chains by table.
type iptChains map[string]map[string]bool

func (c iptChains) add(table, chain string) {
	if c[table] == nil {
		c[table] = map[string]bool{}
	}
	c[table][chain] = true
}

// iptablesBackend writes the MINIK8S- chains of the nat and filter
// tables with one iptables-restore --noflush per sync.
type iptablesBackend struct {
	run                     Runner
	iptables, save, restore string // the commands
	rules                   ruleConfig
	// written holds the rules of each per-service chain as the last
	// sync left them; nil: unknown.
	written map[string]string
	buf     bytes.Buffer
}

var _ backend = (*iptablesBackend)(nil)

// newIPTables finds iptables, iptables-save and iptables-restore (run
// may replace them) and checks that iptables works in netns.
func newIPTables(netns string, run Runner, rules ruleConfig) (*iptablesBackend, error) {
	b := &iptablesBackend{run: run, iptables: "iptables", save: "iptables-save", restore: "iptables-restore", rules: rules}
	if run == nil {
		for _, cmd := range []*string{&b.iptables, &b.save, &b.restore} {
			path, err := exec.LookPath(*cmd)
			if err != nil {
				return nil, fmt.Errorf("iptables: %w", err)
			}
			*cmd = path
		}
		b.run = execRunner{netns: netns}
	}
	if _, err := b.run.Run(context.Background(), nil, b.iptables, "-w", xtablesWait, "-t", "nat", "-S", "POSTROUTING"); err != nil {
		return nil, fmt.Errorf("iptables: %w", err)
	}
	return b, nil
}

// sync writes the fixed chains and the per-service chains whose rules
// changed since the last sync. A full one (and a first sync, or one
// after a failure) writes every chain, deletes every MINIK8S- chain that
// is not wanted, whoever left it, and puts back missing jump rules.
func (b *iptablesBackend) sync(ctx context.Context, ports []servicePort, full bool) error {
	prev, existing := b.written, iptChains(nil)
	full = full || prev == nil
	if full {
		var err error
		if existing, err = b.ourChains(ctx); err != nil {
			return err
		}
		prev = nil
	}
	b.buf.Reset()
	next := renderIPTables(&b.buf, ports, b.rules, prev, existing)
	if _, err := b.run.Run(ctx, b.buf.Bytes(), b.restore, "-w", xtablesWait, "--noflush"); err != nil {
		b.written = nil // start over next time
		return fmt.Errorf("iptables-restore (%d bytes): %w", b.buf.Len(), err)
	}
	b.written = next
	if !full {
		return nil
	}
	if err := b.ensureJumps(ctx); err != nil {
		b.written = nil // check them again next time
		return err
	}
	return nil
}

// ensureJumps inserts each jump rule that is missing.
func (b *iptablesBackend) ensureJumps(ctx context.Context) error {
	for _, j := range iptJumps {
		_, err := b.run.Run(ctx, nil, b.iptables, append([]string{"-w", xtablesWait, "-t", j.table, "-C", j.chain}, j.rule...)...)
		if err == nil {
			continue
		}
		if exitCode(err) != 1 { // 1: no such rule
			return fmt.Errorf("check jump from %s %s: %w", j.table, j.chain, err)
		}
		if _, err := b.run.Run(ctx, nil, b.iptables, append([]string{"-w", xtablesWait, "-t", j.table, "-I", j.chain, "1"}, j.rule...)...); err != nil {
			return fmt.Errorf("insert jump from %s %s: %w", j.table, j.chain, err)
		}
	}
	return nil
}

// ourChains lists the MINIK8S- chains of the nat and filter tables.
func (b *iptablesBackend) ourChains(ctx context.Context) (iptChains, error) {
	chains := iptChains{}
	for _, table := range iptTables {
		out, err := b.run.Run(ctx, nil, b.save, "-t", table)
		if err != nil {
			return nil, fmt.Errorf("list %s chains: %w", table, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if name, ok := strings.CutPrefix(line, ":"+iptPrefix); ok {
				name, _, _ = strings.Cut(name, " ")
				chains.add(table, iptPrefix+name)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("list %s chains: %w", table, err)
		}
	}
	return chains, nil
}

// cleanup deletes the jump rules (every copy) and then every MINIK8S-
// chain; what is already gone is skipped.
func (b *iptablesBackend) cleanup(ctx context.Context) error {
	for _, j := range iptJumps {
		// -C fails when the rule is missing and when its target chain
		// is: either way there is nothing to delete.
		for range 10 {
			if _, err := b.run.Run(ctx, nil, b.iptables, append([]string{"-w", xtablesWait, "-t", j.table, "-C", j.chain}, j.rule...)...); err != nil {
				break
			}
			if _, err := b.run.Run(ctx, nil, b.iptables, append([]string{"-w", xtablesWait, "-t", j.table, "-D", j.chain}, j.rule...)...); err != nil {
				return fmt.Errorf("delete jump from %s %s: %w", j.table, j.chain, err)
			}
		}
	}
	chains, err := b.ourChains(ctx)
	if err != nil {
		return err
	}
	b.buf.Reset()
	for _, table := range iptTables {
		names := sortedKeys(chains[table])
		if len(names) == 0 {
			continue
		}
		// Flush all first: they may jump to one another.
		fmt.Fprintf(&b.buf, "*%s\n", table)
		for _, c := range names {
			fmt.Fprintf(&b.buf, ":%s - [0:0]\n", c)
		}
		for _, c := range names {
			fmt.Fprintf(&b.buf, "-X %s\n", c)
		}
		b.buf.WriteString("COMMIT\n")
	}
	b.written = nil
	if b.buf.Len() == 0 {
		return nil
	}
	if _, err := b.run.Run(ctx, b.buf.Bytes(), b.restore, "-w", xtablesWait, "--noflush"); err != nil {
		return fmt.Errorf("delete chains: %w", err)
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// iptChainName is prefix and a hash of key, within iptables' 28
// characters.
func iptChainName(prefix, key string) string {
	h := sha256.Sum256([]byte(key))
	return prefix + base32.StdEncoding.EncodeToString(h[:])[:16]
}

// iptTable collects one table's part of the restore input: chain
// declarations first (a declared chain is created, or flushed), then
// rules, then deletions.
type iptTable struct {
	chains []string
	rules  bytes.Buffer
}

func (t *iptTable) rule(chain string, args ...string) { writeRule(&t.rules, chain, args...) }

// writeRule appends "-A chain args..." to w.
func writeRule(w *bytes.Buffer, chain string, args ...string) {
	w.WriteString("-A ")
	w.WriteString(chain)
	for _, a := range args {
		w.WriteByte(' ')
		w.WriteString(a)
	}
	w.WriteByte('\n')
}

// iptRenderer writes the restore input of one sync.
type iptRenderer struct {
	filter, nat iptTable
	prev        map[string]string // per-service chains in place; nil: write all
	next        map[string]string
	chain       bytes.Buffer // the per-service chain being written
}

// serviceChain ends a per-service chain whose rules are in r.chain: it
// is written unless prev holds the same rules.
func (r *iptRenderer) serviceChain(name string) {
	rules := r.chain.String()
	r.chain.Reset()
	r.next[name] = rules
	if old, ok := r.prev[name]; ok && old == rules {
		return
	}
	r.nat.chains = append(r.nat.chains, name)
	r.nat.rules.WriteString(rules)
}

// renderIPTables writes the restore input for ports to w and returns
// the per-service chains it leaves, with their rules. prev are those
// the tables hold now (nil: unknown, all are written); chains in prev
// or existing that are not wanted any more are flushed and deleted.
func renderIPTables(w *bytes.Buffer, ports []servicePort, cfg ruleConfig, prev map[string]string, existing iptChains) map[string]string {
	clusterCIDR := cfg.clusterCIDR
	r := &iptRenderer{prev: prev, next: map[string]string{}}
	r.filter.chains = slices.Clone(iptFixed["filter"])
	r.nat.chains = slices.Clone(iptFixed["nat"])
	nat, filter := &r.nat, &r.filter
	nat.rule(iptMarkMasq, "-j", "MARK", "--or-mark", masqMark)
	nat.rule(iptPostrouting, "-m", "mark", "--mark", masqMark+"/"+masqMark, "-j", "MASQUERADE")
	// The nat table cannot drop: what a service chain marks, left
	// untranslated, is dropped by filter.
	nat.rule(iptMarkDrop, "-j", "MARK", "--or-mark", dropMark)
	filter.rule(iptServices, "-m", "mark", "--mark", dropMark+"/"+dropMark, "-j", "DROP")
	// The localnet guard: with route_localnet on, a packet for
	// 127.0.0.0/8 from another host is no longer a martian; only replies
	// and what was DNATed there may come in.
	filter.rule(iptFirewall, "!", "-i", "lo", "-d", loopbackCIDR, "-m", "comment", "--comment", `"block incoming localnet connections"`,
		"-m", "conntrack", "!", "--ctstate", "RELATED,ESTABLISHED,DNAT", "-j", "DROP")
	// A reset, not an ICMP error: the kernel may rate-limit that one to a
	// pod it has just sent a redirect (a pod's packet for the service
	// CIDR is routed back onto the pod bridge).
	filter.rule(iptRefuse, "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset")
	filter.rule(iptRefuse, "-j", "REJECT", "--reject-with", "icmp-port-unreachable")
	var serviceCIDR netip.Prefix
	if cfg.serviceCIDR != "" {
		serviceCIDR = netip.MustParsePrefix(cfg.serviceCIDR)
	}
	notCluster := []string{}
	if clusterCIDR != "" {
		notCluster = []string{"!", "-s", clusterCIDR}
	}
	var nodePorts, externals, clusterIPs bytes.Buffer
	seenClusterIPs := map[string]bool{}
	for i := range ports {
		sp := &ports[i]
		if sp.clusterIP != "" && !seenClusterIPs[sp.clusterIP] && !serviceCIDR.Contains(netip.MustParseAddr(sp.clusterIP)) {
			// Left untranslated, a packet for a ClusterIP matched none
			// of its Service's ports. (The service CIDR's rule below
			// refuses those in it.)
			seenClusterIPs[sp.clusterIP] = true
			writeRule(&clusterIPs, iptServices, "-d", sp.clusterIP+"/32", "-m", "comment", "--comment",
				`"`+sp.namespace+"/"+sp.name+` has no such port"`, "-j", iptRefuse)
		}
		proto := sp.proto
		port := strconv.Itoa(int(sp.port))
		nodePort := strconv.Itoa(int(sp.nodePort))
		comment := []string{"-m", "comment", "--comment", `"` + sp.id() + `"`}
		if len(sp.endpoints) == 0 {
			// Refused at once (filter, new connections only) instead
			// of left to time out.
			reject := []string{"-j", "REJECT", "--reject-with", "icmp-port-unreachable"}
			if proto == "tcp" {
				reject = []string{"-j", "REJECT", "--reject-with", "tcp-reset"}
			}
			for _, ip := range sp.ips() {
				filter.rule(iptServices, slices.Concat([]string{"-d", ip + "/32", "-p", proto, "-m", proto, "--dport", port}, comment, reject)...)
			}
			if sp.nodePort != 0 {
				writeRule(&externals, iptExternal, slices.Concat([]string{"-p", proto, "-m", proto, "--dport", nodePort}, comment, reject)...)
			}
			continue
		}
		svc := iptChainName(iptSvcPrefix, sp.id())
		ext := svc // where externalIPs lead
		if sp.ownExternalChain() {
			ext = iptChainName(iptExtPrefix, sp.id())
		}
		if sp.clusterIP != "" {
			nat.rule(iptServices, slices.Concat([]string{"-d", sp.clusterIP + "/32", "-p", proto, "-m", proto, "--dport", port}, comment, []string{"-j", svc})...)
		}
		for _, ip := range sp.externalIPs {
			nat.rule(iptServices, slices.Concat([]string{"-d", ip + "/32", "-p", proto, "-m", proto, "--dport", port}, comment, []string{"-j", ext})...)
		}
		if sp.nodePort != 0 {
			match := []string{"-p", proto, "-m", proto, "--dport", nodePort}
			if !sp.externalLocal {
				writeRule(&nodePorts, iptNodePorts, slices.Concat(match, notCluster, comment, []string{"-j", iptMarkMasq})...)
			}
			writeRule(&nodePorts, iptNodePorts, slices.Concat(match, comment, []string{"-j", ext})...)
		}

		used := sp.usedEndpoints()
		seps := map[string]string{} // endpoint -> its chain
		for _, ep := range used {
			seps[ep.String()] = iptChainName(iptSepPrefix, sp.id()+"/"+ep.ip+"/"+strconv.Itoa(int(ep.port)))
		}
		// spread writes rules into r.chain that send a packet to one of
		// eps: the one its client has affinity to, else one at random;
		// with none, it is marked to be dropped.
		spread := func(chain string, eps []endpoint) {
			if len(eps) == 0 {
				writeRule(&r.chain, chain, "-j", iptMarkDrop)
				return
			}
			if sp.affinity > 0 {
				seconds := strconv.FormatInt(int64(sp.affinity.Seconds()), 10)
				for _, ep := range eps {
					sep := seps[ep.String()]
					writeRule(&r.chain, chain, "-m", "comment", "--comment", `"`+sp.id()+" -> "+ep.String()+`"`,
						"-m", "recent", "--name", sep, "--rcheck", "--seconds", seconds, "--reap", "-j", sep)
				}
			}
			// Endpoint j of n is taken with probability 1/(n-j) of what
			// the earlier ones left: a uniform spread.
			n := len(eps)
			for j, ep := range eps {
				args := []string{"-m", "comment", "--comment", `"` + sp.id() + " -> " + ep.String() + `"`}
				if j < n-1 {
					args = append(args, "-m", "statistic", "--mode", "random", "--probability",
						strconv.FormatFloat(1/float64(n-j), 'f', 10, 64))
				}
				writeRule(&r.chain, chain, append(args, "-j", seps[ep.String()])...)
			}
		}
		masqOutside := func(chain string) {
			if clusterCIDR != "" {
				// From outside the pod network (the node itself, a host
				// route): replies must come back through this node.
				writeRule(&r.chain, chain, "!", "-s", clusterCIDR, "-j", iptMarkMasq)
			}
		}
		if eps := sp.clusterEndpoints(); len(eps) > 0 {
			masqOutside(svc)
			spread(svc, eps)
		} else {
			spread(svc, nil) // internalTrafficPolicy Local, none here
		}
		r.serviceChain(svc)
		if ext != svc {
			if sp.externalLocal {
				// Pods and this node reach the Service as through its
				// ClusterIP; the rest stays here, unmasqueraded.
				if clusterCIDR != "" {
					writeRule(&r.chain, ext, "-s", clusterCIDR, "-g", svc)
				}
				writeRule(&r.chain, ext, "-m", "addrtype", "--src-type", "LOCAL", "-j", iptMarkMasq)
				writeRule(&r.chain, ext, "-m", "addrtype", "--src-type", "LOCAL", "-g", svc)
			} else {
				masqOutside(ext)
			}
			spread(ext, sp.externalEndpoints())
			r.serviceChain(ext)
		}
		for _, ep := range used {
			sep := seps[ep.String()]
			writeRule(&r.chain, sep, "-s", ep.ip+"/32", "-j", iptMarkMasq) // hairpin
			args := slices.Concat([]string{"-p", proto}, comment)
			if sp.affinity > 0 {
				args = append(args, "-m", "recent", "--name", sep, "--set")
			}
			writeRule(&r.chain, sep, append(args, "-j", "DNAT", "--to-destination", ep.String())...)
			r.serviceChain(sep)
		}
	}
	filter.rules.Write(clusterIPs.Bytes())
	if cfg.serviceCIDR != "" {
		filter.rule(iptServices, "-d", cfg.serviceCIDR, "-m", "comment", "--comment", `"no Service has this address and port"`, "-j", iptRefuse)
	}
	// NodePorts last: a ClusterIP or externalIP that is also a local
	// address matches above first, as in the nftables mode. On
	// 127.0.0.0/8 only for the node itself (a local source).
	nodePortMatches := [][]string{{"!", "-d", loopbackCIDR, "-m", "addrtype", "--dst-type", "LOCAL"}}
	if cfg.localhostNodePorts {
		nodePortMatches = append(nodePortMatches, []string{"-d", loopbackCIDR, "-m", "addrtype", "--src-type", "LOCAL"})
	}
	for _, m := range nodePortMatches {
		nat.rule(iptServices, slices.Concat(m, []string{"-j", iptNodePorts})...)
	}
	nat.rules.Write(nodePorts.Bytes())
	for _, m := range nodePortMatches {
		filter.rule(iptServices, slices.Concat(m, []string{"-j", iptExternal})...)
	}
	filter.rules.Write(externals.Bytes())

	for _, table := range iptTables {
		t := filter
		if table == "nat" {
			t = nat
		}
		// Per-service chains are all in nat.
		wanted := func(c string) bool {
			_, ok := r.next[c]
			return (ok && table == "nat") || slices.Contains(iptFixed[table], c)
		}
		var stale []string
		for c := range existing[table] {
			if !wanted(c) {
				stale = append(stale, c)
			}
		}
		if table == "nat" {
			for c := range prev {
				if !wanted(c) && !existing[table][c] {
					stale = append(stale, c)
				}
			}
		}
		slices.Sort(stale)
		fmt.Fprintf(w, "*%s\n", table)
		for _, c := range t.chains {
			fmt.Fprintf(w, ":%s - [0:0]\n", c)
		}
		// Declared, so flushed: once the rules above are in, nothing
		// refers to them.
		for _, c := range stale {
			fmt.Fprintf(w, ":%s - [0:0]\n", c)
		}
		w.Write(t.rules.Bytes())
		for _, c := range stale {
			fmt.Fprintf(w, "-X %s\n", c)
		}
		w.WriteString("COMMIT\n")
	}
	return r.next
}
