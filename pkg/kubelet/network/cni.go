package network

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/vishvananda/netlink"
)

// Network is what the kubelet needs from pod networking; tests use fakes.
// Its methods may be called concurrently for different pods.
type Network interface {
	// NewNetNS creates (or adopts) the named network namespace of a pod
	// sandbox and returns its path.
	NewNetNS(name string) (string, error)
	// DeleteNetNS removes a namespace made by NewNetNS; a missing one is
	// not an error.
	DeleteNetNS(name string) error
	// Setup attaches the namespace to the node's pod network.
	Setup(ctx context.Context, podID, netnsPath string, ports []PortMapping) (*Result, error)
	// Teardown detaches it again; it is idempotent.
	Teardown(ctx context.Context, podID, netnsPath string, ports []PortMapping) error
	// Status reports what Setup returned, from the on-disk cache (after a
	// kubelet restart too); nil when the pod is not set up.
	Status(ctx context.Context, podID, netnsPath string) (*Result, error)
}

var _ Network = (*CNI)(nil)

// PortMapping is a pod's hostPort: HostIP:HostPort on the node forwards
// to ContainerPort in the pod.
type PortMapping struct {
	HostPort      int32
	ContainerPort int32
	Protocol      string // TCP (default), UDP or SCTP; any case
	HostIP        string // empty: every address of the node
}

// Result is a pod's place on the pod network.
type Result struct {
	IP        netip.Addr   // the pod's address, for status.podIP
	Prefix    netip.Prefix // IP with the pod network's mask, e.g. 10.244.1.5/24
	Gateway   netip.Addr   // the bridge's address: the pod's default route
	Interface string       // the interface in the pod, eth0
	MAC       string
}

// NetworkName is the CNI network name; host-local keeps its allocations
// and libcni its cache under it.
const NetworkName = "minik8s"

// podIfName is the pod's interface.
const podIfName = "eth0"

// cniVersion is the spec version of the configuration we hand to
// Debian's plugins (containernetworking-plugins 1.1 speak up to 1.0.0).
const cniVersion = "1.0.0"

// requiredPlugins must be found in Config.PluginDirs.
var requiredPlugins = []string{"bridge", "host-local", "loopback", "portmap"}

// Config describes one node's pod network.
type Config struct {
	// NodeName names the default StateDir (default: the host name).
	NodeName string
	// PluginDirs are searched for CNI plugins (default /usr/lib/cni,
	// where Debian installs them, then /opt/cni/bin).
	PluginDirs []string
	// PodCIDR is the node's spec.podCIDR, e.g. 10.244.1.0/24 (required).
	// The bridge gets its first address, pods the rest.
	PodCIDR string
	// ClusterCIDR holds every node's PodCIDR (e.g. 10.244.0.0/16): pod
	// traffic to it keeps its source address, traffic elsewhere is
	// masqueraded behind the node. Default: PodCIDR.
	ClusterCIDR string
	// BridgeName is the node's pod bridge (default DefaultBridgeName).
	BridgeName string
	// MTU of the bridge and veths (0: the plugin's default, 1500).
	MTU int
	// StateDir holds host-local's allocations and libcni's cache
	// (default /var/lib/minik8s/cni/<node>).
	StateDir string
	// NetNSDir is where NewNetNS bind-mounts pod namespaces (default
	// /var/run/netns).
	NetNSDir string
	// HostNetNS is the path of the node's network namespace, where the
	// bridge, routes and iptables rules go and the plugins run. Empty:
	// the namespace the process runs in. Set it to run a kubelet for a
	// node that lives in its own namespace (multi-node on one machine)
	// while the process stays in the host's mount namespace, so
	// containerd sees the pod namespaces it mounts.
	HostNetNS string
	Logger    *slog.Logger
}

func (c *Config) complete() error {
	if c.PodCIDR == "" {
		return errors.New("network: a pod CIDR is required (the node's spec.podCIDR)")
	}
	pod, err := netip.ParsePrefix(c.PodCIDR)
	if err != nil || !pod.Addr().Is4() || pod.Bits() > 30 {
		return fmt.Errorf("network: pod CIDR %q: want an IPv4 prefix of /30 or wider", c.PodCIDR)
	}
	if pod != pod.Masked() {
		return fmt.Errorf("network: pod CIDR %q has host bits set", c.PodCIDR)
	}
	if c.ClusterCIDR == "" {
		c.ClusterCIDR = c.PodCIDR
	}
	cluster, err := netip.ParsePrefix(c.ClusterCIDR)
	if err != nil || !cluster.Addr().Is4() {
		return fmt.Errorf("network: cluster CIDR %q: want an IPv4 prefix", c.ClusterCIDR)
	}
	if cluster.Bits() > pod.Bits() || !cluster.Contains(pod.Addr()) {
		return fmt.Errorf("network: pod CIDR %s is not inside cluster CIDR %s", pod, cluster)
	}
	c.PodCIDR, c.ClusterCIDR = pod.String(), cluster.Masked().String()
	if c.NodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("network: node name: %w", err)
		}
		c.NodeName = h
	}
	if len(c.PluginDirs) == 0 {
		c.PluginDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}
	}
	if c.BridgeName == "" {
		c.BridgeName = DefaultBridgeName
	}
	if len(c.BridgeName) > 15 {
		return fmt.Errorf("network: bridge name %q is longer than 15 characters", c.BridgeName)
	}
	if c.MTU < 0 {
		return fmt.Errorf("network: MTU %d", c.MTU)
	}
	if c.StateDir == "" {
		c.StateDir = filepath.Join("/var/lib/minik8s/cni", c.NodeName)
	}
	if c.NetNSDir == "" {
		c.NetNSDir = DefaultNetNSDir
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// CNI attaches pod network namespaces to a node's bridge through libcni
// and Debian's plugins, chained as one configuration list:
// bridge (host-local IPAM) -> loopback -> portmap.
//
// Pods are set up and torn down in parallel: host-local takes a file lock
// around its store, bridge tolerates a concurrent creation of the bridge
// and its address, loopback works in the pod's namespace only, and
// portmap does nothing for a pod without hostPorts. Pods with hostPorts
// go one at a time, as portmap creates its shared iptables chains without
// a lock.
type CNI struct {
	cfg  Config
	lib  *libcni.CNIConfig
	list *libcni.NetworkConfigList
	log  *slog.Logger

	// hostPorts is held exclusively by operations on pods with hostPorts
	// (portmap's iptables chains), shared by the others.
	hostPorts sync.RWMutex

	mu   sync.Mutex // guards masq
	masq bool       // the masquerade rule is in place
}

// New validates cfg, fills its defaults and checks that the plugins and
// iptables are installed. It changes nothing on the node.
func New(cfg Config) (*CNI, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	for _, p := range requiredPlugins {
		if _, err := invoke.FindInPath(p, cfg.PluginDirs); err != nil {
			return nil, fmt.Errorf("network: CNI plugin %q not found in %v (apt-get install containernetworking-plugins): %w", p, cfg.PluginDirs, err)
		}
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		return nil, fmt.Errorf("network: iptables (used by portmap and for masquerading): %w", err)
	}
	conf, err := confList(cfg)
	if err != nil {
		return nil, err
	}
	list, err := libcni.NetworkConfFromBytes(conf)
	if err != nil {
		return nil, fmt.Errorf("network: conflist: %w", err)
	}
	// An executor of our own: libcni would otherwise create its default
	// one lazily, without a lock, on first use.
	executor := &invoke.DefaultExec{RawExec: &invoke.RawExec{Stderr: os.Stderr}, PluginDecoder: version.PluginDecoder{}}
	return &CNI{
		cfg:  cfg,
		lib:  libcni.NewCNIConfigWithCacheDir(cfg.PluginDirs, filepath.Join(cfg.StateDir, "cache"), executor),
		list: list,
		log:  cfg.Logger.With("component", "cni", "podCIDR", cfg.PodCIDR),
	}, nil
}

// Config returns the completed configuration.
func (c *CNI) Config() Config { return c.cfg }

// ipamDir is host-local's dataDir; it keeps one file per allocated IP
// under ipamDir/<NetworkName>.
func (c *CNI) ipamDir() string { return filepath.Join(c.cfg.StateDir, "ipam") }

// confList renders the chained configuration for cfg.
func confList(cfg Config) ([]byte, error) {
	pod := netip.MustParsePrefix(cfg.PodCIDR)
	bridge := map[string]any{
		"type":   "bridge",
		"bridge": cfg.BridgeName,
		// The bridge is the pods' gateway; their default route points at it.
		"isGateway":        true,
		"isDefaultGateway": true,
		// The plugin would masquerade everything outside this node's
		// PodCIDR, which hides pod IPs from pods on other nodes; we add
		// our own rule that exempts the whole cluster CIDR instead.
		"ipMasq":      false,
		"hairpinMode": true,
		"ipam": map[string]any{
			"type":    "host-local",
			"dataDir": filepath.Join(cfg.StateDir, "ipam"),
			"ranges": [][]map[string]string{{{
				"subnet":  pod.String(),
				"gateway": pod.Addr().Next().String(),
			}}},
		},
	}
	if cfg.MTU > 0 {
		bridge["mtu"] = cfg.MTU
	}
	list := map[string]any{
		"cniVersion": cniVersion,
		"name":       NetworkName,
		"plugins": []any{
			bridge,
			// After bridge, so its result passes through untouched.
			map[string]any{"type": "loopback"},
			map[string]any{
				"type":         "portmap",
				"capabilities": map[string]bool{"portMappings": true},
				// SNAT hairpin and localhost traffic to hostPorts.
				"snat": true,
			},
		},
	}
	b, err := json.Marshal(list)
	if err != nil {
		return nil, fmt.Errorf("network: render conflist: %w", err)
	}
	return b, nil
}

func (c *CNI) runtimeConf(podID, netnsPath string, ports []PortMapping) *libcni.RuntimeConf {
	rt := &libcni.RuntimeConf{ContainerID: podID, NetNS: netnsPath, IfName: podIfName}
	if len(ports) > 0 {
		pm := make([]map[string]any, 0, len(ports))
		for _, p := range ports {
			proto := strings.ToLower(p.Protocol)
			if proto == "" {
				proto = "tcp"
			}
			m := map[string]any{"hostPort": p.HostPort, "containerPort": p.ContainerPort, "protocol": proto}
			if p.HostIP != "" {
				m["hostIP"] = p.HostIP
			}
			pm = append(pm, m)
		}
		rt.CapabilityArgs = map[string]any{"portMappings": pm}
	}
	return rt
}

// NewNetNS creates the named network namespace under Config.NetNSDir.
func (c *CNI) NewNetNS(name string) (string, error) {
	return CreateNamedNetNS(c.cfg.NetNSDir, name)
}

// DeleteNetNS removes a namespace made by NewNetNS.
func (c *CNI) DeleteNetNS(name string) error {
	return RemoveNamedNetNS(c.cfg.NetNSDir, name)
}

// Setup gives the pod in netnsPath an address from the node's PodCIDR on
// the node's bridge, its loopback, and its hostPorts. Calling it again
// for a pod that is still set up returns the same result; a half-done
// attempt is undone before it fails.
func (c *CNI) Setup(ctx context.Context, podID, netnsPath string, ports []PortMapping) (*Result, error) {
	if podID == "" || netnsPath == "" {
		return nil, errors.New("network setup: pod ID and netns path are required")
	}
	rt := c.runtimeConf(podID, netnsPath, ports)
	unlock := c.lockPorts(ports)
	defer unlock()
	var res *Result
	err := InNetNS(c.cfg.HostNetNS, func() error {
		if err := c.ensureMasquerade(ctx); err != nil {
			return err
		}
		if cached, err := c.lib.GetNetworkListCachedResult(c.list, rt); err == nil && cached != nil {
			if err := c.lib.CheckNetworkList(ctx, c.list, rt); err == nil {
				r, err := toResult(cached)
				res = r
				return err
			}
			c.log.Info("pod network check failed, setting it up again", "pod", podID)
			if err := c.del(ctx, rt); err != nil {
				return err
			}
		}
		out, err := c.lib.AddNetworkList(ctx, c.list, rt)
		if err != nil {
			if derr := c.del(ctx, rt); derr != nil {
				c.log.Warn("undo failed pod network setup", "pod", podID, "err", derr)
			}
			return err
		}
		res, err = toResult(out)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("network setup for pod %s: %w", podID, err)
	}
	return res, nil
}

// Teardown removes the pod's veth, hostPort rules and address. It
// succeeds when there is nothing left to remove, and frees the address
// even when the namespace is already gone.
func (c *CNI) Teardown(ctx context.Context, podID, netnsPath string, ports []PortMapping) error {
	if podID == "" {
		return errors.New("network teardown: pod ID is required")
	}
	if netnsPath != "" && !isNetNS(netnsPath) {
		// Gone (or never mounted): the kernel has already destroyed the
		// veth with it, and the plugins skip namespace work.
		netnsPath = ""
	}
	rt := c.runtimeConf(podID, netnsPath, ports)
	unlock := c.lockPorts(ports)
	defer unlock()
	err := InNetNS(c.cfg.HostNetNS, func() error { return c.del(ctx, rt) })
	if err != nil {
		return fmt.Errorf("network teardown for pod %s: %w", podID, err)
	}
	return nil
}

// lockPorts serialises the operations of pods with hostPorts.
func (c *CNI) lockPorts(ports []PortMapping) (unlock func()) {
	if len(ports) > 0 {
		c.hostPorts.Lock()
		return c.hostPorts.Unlock
	}
	c.hostPorts.RLock()
	return c.hostPorts.RUnlock
}

// del runs DEL through the chain, then makes sure host-local holds
// nothing for the pod.
func (c *CNI) del(ctx context.Context, rt *libcni.RuntimeConf) error {
	if err := c.lib.DelNetworkList(ctx, c.list, rt); err != nil {
		return err
	}
	return c.releaseAddresses(rt.ContainerID)
}

// releaseAddresses removes host-local reservations owned by podID. The
// bridge plugin's DEL already releases them; this catches a DEL that an
// older plugin or a lost cache made incomplete.
func (c *CNI) releaseAddresses(podID string) error {
	dir := filepath.Join(c.ipamDir(), NetworkName)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read IPAM state: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if _, err := netip.ParseAddr(e.Name()); err != nil {
			continue // lock, last_reserved_ip.N
		}
		p := filepath.Join(dir, e.Name())
		owner, err := firstLine(p)
		if err != nil || owner != podID {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Allocations lists the addresses host-local holds and the pod each is
// held for.
func (c *CNI) Allocations() (map[netip.Addr]string, error) {
	dir := filepath.Join(c.ipamDir(), NetworkName)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[netip.Addr]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read IPAM state: %w", err)
	}
	out := map[netip.Addr]string{}
	for _, e := range entries {
		ip, err := netip.ParseAddr(e.Name())
		if err != nil {
			continue
		}
		owner, err := firstLine(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[ip] = owner
	}
	return out, nil
}

func firstLine(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Scan()
	return strings.TrimSpace(s.Text()), s.Err()
}

// Status returns the cached result of the pod's Setup, or nil when the
// pod has none.
func (c *CNI) Status(_ context.Context, podID, netnsPath string) (*Result, error) {
	cached, err := c.lib.GetNetworkListCachedResult(c.list, c.runtimeConf(podID, netnsPath, nil))
	if err != nil {
		return nil, fmt.Errorf("network status for pod %s: %w", podID, err)
	}
	if cached == nil {
		return nil, nil
	}
	return toResult(cached)
}

func toResult(r types.Result) (*Result, error) {
	res, err := types100.NewResultFromResult(r)
	if err != nil {
		return nil, fmt.Errorf("CNI result: %w", err)
	}
	out := &Result{}
	for _, ipc := range res.IPs {
		if ipc.Address.IP.To4() == nil {
			continue
		}
		ip, _ := netip.AddrFromSlice(ipc.Address.IP.To4())
		ones, _ := ipc.Address.Mask.Size()
		out.IP, out.Prefix = ip, netip.PrefixFrom(ip, ones)
		if gw, ok := netip.AddrFromSlice(ipc.Gateway.To4()); ok {
			out.Gateway = gw
		}
		if ipc.Interface != nil && *ipc.Interface >= 0 && *ipc.Interface < len(res.Interfaces) {
			iface := res.Interfaces[*ipc.Interface]
			out.Interface, out.MAC = iface.Name, iface.Mac
		}
		break
	}
	if !out.IP.IsValid() {
		return nil, errors.New("CNI result has no IPv4 address")
	}
	return out, nil
}

// masqComment marks our rule; iptables matches it with -C and -D.
const masqComment = "minik8s: masquerade pod traffic leaving the cluster"

func (c *CNI) masqRule() []string {
	return []string{"-t", "nat", "POSTROUTING", "-s", c.cfg.PodCIDR, "!", "-d", c.cfg.ClusterCIDR,
		"-m", "comment", "--comment", masqComment, "-j", "MASQUERADE"}
}

// ensureMasquerade installs, once, the rule that hides pod addresses
// behind the node for traffic leaving the cluster CIDR. It runs in the
// node's namespace (the caller's thread).
func (c *CNI) ensureMasquerade(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.masq {
		return nil
	}
	if err := ensureIPTablesRule(ctx, c.masqRule()); err != nil {
		return fmt.Errorf("masquerade rule: %w", err)
	}
	c.masq = true
	return nil
}

// Uninstall removes what the node's pod network added beyond the pods:
// the masquerade rule, the bridge and the IPAM and cache state. Call it
// only once every pod is torn down (node removal, tests). Portmap's
// shared CNI-HOSTPORT-* chains, empty by then, stay.
func (c *CNI) Uninstall(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := InNetNS(c.cfg.HostNetNS, func() error {
		var errs []error
		if err := deleteIPTablesRule(ctx, c.masqRule()); err != nil {
			errs = append(errs, err)
		}
		if br, err := netlink.LinkByName(c.cfg.BridgeName); err == nil {
			if err := netlink.LinkDel(br); err != nil {
				errs = append(errs, fmt.Errorf("delete bridge %s: %w", c.cfg.BridgeName, err))
			}
		} else if !errors.As(err, new(netlink.LinkNotFoundError)) {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	})
	c.masq = false
	if err != nil {
		return fmt.Errorf("network uninstall: %w", err)
	}
	if err := os.RemoveAll(c.cfg.StateDir); err != nil {
		return fmt.Errorf("network uninstall: %w", err)
	}
	return nil
}

// ensureIPTablesRule appends rule (table, chain, match...) unless an
// identical one is there.
func ensureIPTablesRule(ctx context.Context, rule []string) error {
	table, chain, spec := rule[:2], rule[2], rule[3:]
	check := append(append(append([]string{"-w"}, table...), "-C", chain), spec...)
	if err := exec.CommandContext(ctx, "iptables", check...).Run(); err == nil {
		return nil
	}
	add := append(append(append([]string{"-w"}, table...), "-A", chain), spec...)
	if out, err := exec.CommandContext(ctx, "iptables", add...).CombinedOutput(); err != nil {
		return fmt.Errorf("iptables %s: %w: %s", strings.Join(add, " "), err, bytesTrim(out))
	}
	return nil
}

// deleteIPTablesRule deletes every copy of rule.
func deleteIPTablesRule(ctx context.Context, rule []string) error {
	table, chain, spec := rule[:2], rule[2], rule[3:]
	check := append(append(append([]string{"-w"}, table...), "-C", chain), spec...)
	del := append(append(append([]string{"-w"}, table...), "-D", chain), spec...)
	for range 100 {
		if exec.CommandContext(ctx, "iptables", check...).Run() != nil {
			return nil
		}
		if out, err := exec.CommandContext(ctx, "iptables", del...).CombinedOutput(); err != nil {
			return fmt.Errorf("iptables %s: %w: %s", strings.Join(del, " "), err, bytesTrim(out))
		}
	}
	return fmt.Errorf("iptables: rule %v keeps coming back", rule)
}

func bytesTrim(b []byte) string { return strings.TrimSpace(string(b)) }

// DefaultBridgeName is the pod bridge of every node.
const DefaultBridgeName = "minik8s0"
