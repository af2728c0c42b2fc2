package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os/exec"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/knftables"

	"github.com/minik8s/minik8s/pkg/kubelet/network"
)

// Config describes the proxy of one node.
type Config struct {
	Client kubernetes.Interface
	// NodeName is this node's name: endpoints whose nodeName it is are
	// local, for the traffic policies Local. Empty: none is.
	NodeName string
	// HostNetNS is the node's network namespace when it is not the
	// process's own.
	HostNetNS string
	// ClusterCIDR is the pod network: connections from outside it to a
	// Service are masqueraded. Empty: only NodePort connections are.
	ClusterCIDR string
	// ServiceCIDR is where ClusterIPs are allocated (IPv4): a connection
	// to an address in it that is no Service's ClusterIP is refused at
	// once, as one to a port a ClusterIP does not define is. Empty: only
	// the latter.
	ServiceCIDR string
	// LocalhostNodePorts makes NodePorts answer the node itself on
	// 127.0.0.0/8, as kube-proxy's iptables mode does: Start turns on
	// net.ipv4.conf.all.route_localnet in the node's namespace. Default
	// true; false leaves the sysctl alone.
	LocalhostNodePorts *bool
	// MinSyncPeriod coalesces changes: at most one sync per period
	// (default 200ms).
	MinSyncPeriod time.Duration
	// SyncPeriod rewrites the rules even without changes (default 1m).
	SyncPeriod time.Duration
	// Mode picks the kernel interface (default ModeAuto).
	Mode Mode
	// NFT replaces the nft command (tests use knftables.NewFake).
	NFT knftables.Interface
	// Runner replaces how the iptables mode runs iptables,
	// iptables-save and iptables-restore (tests record the calls).
	Runner Runner
	Logger *slog.Logger
}

// Mode is how the proxy programs the kernel.
type Mode string

const (
	// ModeAuto is nftables when nft works in the node's namespace, else
	// iptables.
	ModeAuto     Mode = "auto"
	ModeNFTables Mode = "nftables"
	ModeIPTables Mode = "iptables"
)

// backend writes the service ports of one sync into the kernel, all or
// nothing, and remembers what it wrote so the next sync can remove what
// is gone. full asks it to rewrite what it believes is in place too
// (the periodic sync that repairs outside damage).
type backend interface {
	sync(ctx context.Context, ports []servicePort, full bool) error
}

// Proxier programs Services into the node's kernel.
type Proxier struct {
	cfg     Config
	mode    Mode
	backend backend
	log     *slog.Logger
}

// New checks cfg and picks the mode: nftables or iptables must work in
// the node's namespace.
func New(cfg Config) (*Proxier, error) {
	if cfg.Client == nil {
		return nil, errors.New("proxy: a client is required")
	}
	if cfg.MinSyncPeriod <= 0 {
		cfg.MinSyncPeriod = 200 * time.Millisecond
	}
	if cfg.SyncPeriod <= 0 {
		cfg.SyncPeriod = time.Minute
	}
	if cfg.LocalhostNodePorts == nil {
		cfg.LocalhostNodePorts = ptr.To(true)
	}
	rules := ruleConfig{clusterCIDR: cfg.ClusterCIDR, localhostNodePorts: *cfg.LocalhostNodePorts}
	if cfg.ServiceCIDR != "" {
		cidr, err := netip.ParsePrefix(cfg.ServiceCIDR)
		if err != nil || !cidr.Addr().Is4() {
			return nil, fmt.Errorf("proxy: service CIDR %q is not an IPv4 CIDR", cfg.ServiceCIDR)
		}
		rules.serviceCIDR = cidr.Masked().String()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	p := &Proxier{cfg: cfg, log: log.With("component", "proxy")}
	useNFT := func() error {
		nft := cfg.NFT
		if nft == nil {
			var err error
			if nft, err = newNFT(cfg.HostNetNS); err != nil {
				return err
			}
		}
		p.mode, p.backend = ModeNFTables, &nftBackend{nft: nft, rules: rules}
		return nil
	}
	useIPTables := func() error {
		b, err := newIPTables(cfg.HostNetNS, cfg.Runner, rules)
		if err != nil {
			return err
		}
		p.mode, p.backend = ModeIPTables, b
		return nil
	}
	switch cfg.Mode {
	case "", ModeAuto:
		nftErr := useNFT()
		if nftErr == nil {
			break
		}
		if err := useIPTables(); err != nil {
			return nil, fmt.Errorf("proxy: neither nftables nor iptables works: %w", errors.Join(nftErr, err))
		}
		p.log.Info("nftables unusable, using iptables", "err", nftErr)
	case ModeNFTables:
		if err := useNFT(); err != nil {
			return nil, err
		}
	case ModeIPTables:
		if err := useIPTables(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("proxy: unknown mode %q (want %s, %s or %s)", cfg.Mode, ModeAuto, ModeNFTables, ModeIPTables)
	}
	return p, nil
}

// Mode is the mode New picked: ModeNFTables or ModeIPTables.
func (p *Proxier) Mode() Mode { return p.mode }

// Cleanup removes what either mode leaves in the namespace at netns (the
// process's own when empty): the nftables table, and the iptables jump
// rules and chains. A missing piece, or a missing nft or iptables, is
// not an error. It turns route_localnet off too: without the proxy's
// guard, it would let other hosts reach the node's loopback services.
func Cleanup(ctx context.Context, netns string) error {
	if err := network.InNetNS(netns, func() error { return nil }); err != nil {
		return err
	}
	return errors.Join(cleanupNFT(ctx, netns), cleanupIPTables(ctx, netns), setRouteLocalnet(netns, false))
}

// cleanupNFT deletes the nftables table, if nft works and it is there.
func cleanupNFT(ctx context.Context, netns string) error {
	if _, err := exec.LookPath("nft"); err != nil {
		return nil
	}
	nft, err := newNFT(netns)
	if err != nil {
		return nil // an nft that does not work in netns has no table there
	}
	tx := nft.NewTransaction()
	tx.Add(&knftables.Table{})
	tx.Delete(&knftables.Table{})
	if err := nft.Run(ctx, tx); err != nil {
		return fmt.Errorf("delete table %s: %w", TableName, err)
	}
	return nil
}

// cleanupIPTables deletes the jump rules and chains, if iptables works.
func cleanupIPTables(ctx context.Context, netns string) error {
	b, err := newIPTables(netns, nil, ruleConfig{})
	if err != nil {
		return nil // nothing can have been written with it
	}
	return b.cleanup(ctx)
}

// Start watches Services and EndpointSlices and keeps the kernel's rules
// in step until ctx ends.
func (p *Proxier) Start(ctx context.Context) error {
	if p.cfg.NFT == nil && p.cfg.Runner == nil {
		p.prepareNode(ctx)
	}
	factory := informers.NewSharedInformerFactory(p.cfg.Client, 0)
	svcs := factory.Core().V1().Services()
	eps := factory.Discovery().V1().EndpointSlices()
	changed := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: poke, UpdateFunc: func(_, o any) { poke(o) }, DeleteFunc: poke}
	if _, err := svcs.Informer().AddEventHandler(handler); err != nil {
		return err
	}
	if _, err := eps.Informer().AddEventHandler(handler); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), svcs.Informer().HasSynced, eps.Informer().HasSynced) {
		return ctx.Err()
	}
	p.log.Info("service proxy started", "node", p.cfg.NodeName, "mode", p.mode)
	resync := time.NewTimer(0)
	defer resync.Stop()
	var full bool
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
			full = false
		case <-resync.C:
			full = true
		}
		start := time.Now()
		svcList, err := svcs.Lister().List(labels.Everything())
		if err == nil {
			var epList []*discoveryv1.EndpointSlice
			if epList, err = eps.Lister().List(labels.Everything()); err == nil {
				err = p.sync(ctx, svcList, epList, full)
			}
		}
		// The periodic full sync comes every SyncPeriod however often
		// changes come; a failure is retried, in full, after a second.
		if err != nil {
			p.log.Error("sync service rules", "err", err)
			resync.Reset(time.Second)
		} else {
			p.log.Debug("synced service rules", "services", len(svcList), "full", full, "took", time.Since(start))
			if full {
				resync.Reset(p.cfg.SyncPeriod)
			}
		}
		// Coalesce: whatever changes meanwhile is one sync.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(p.cfg.MinSyncPeriod - time.Since(start)):
		}
	}
}

// prepareNode readies the node's namespace for the rules: bridged
// traffic through conntrack, route_localnet for localhost NodePorts, and
// no rules of the other mode. What fails is logged: the rest still works.
func (p *Proxier) prepareNode(ctx context.Context) {
	if err := enableBridgeNetfilter(p.cfg.HostNetNS); err != nil {
		p.log.Warn("bridged traffic will bypass conntrack", "err", err)
	}
	if *p.cfg.LocalhostNodePorts {
		if err := setRouteLocalnet(p.cfg.HostNetNS, true); err != nil {
			p.log.Warn("NodePorts will not answer on 127.0.0.1", "err", err)
		}
	}
	if err := p.cleanupOtherMode(ctx); err != nil {
		p.log.Warn("remove the other mode's rules", "err", err)
	}
}

// cleanupOtherMode removes what the other mode left (a node that changed
// modes): those rules would catch the same traffic first.
func (p *Proxier) cleanupOtherMode(ctx context.Context) error {
	if p.mode == ModeIPTables {
		return cleanupNFT(ctx, p.cfg.HostNetNS)
	}
	return cleanupIPTables(ctx, p.cfg.HostNetNS)
}

// Sync writes the rules for svcs and eps: one nft transaction or one
// iptables-restore, of the per-service chains that changed since the last
// sync (Start rewrites them all every SyncPeriod).
func (p *Proxier) Sync(ctx context.Context, svcs []*corev1.Service, eps []*discoveryv1.EndpointSlice) error {
	return p.sync(ctx, svcs, eps, false)
}

func (p *Proxier) sync(ctx context.Context, svcs []*corev1.Service, eps []*discoveryv1.EndpointSlice, full bool) error {
	return p.backend.sync(ctx, servicePorts(svcs, eps, p.cfg.NodeName), full)
}

// nftBackend writes the table "ip minik8s-proxy" (rules.go): the chains
// of changed service ports and the maps on each sync, all of it on a full
// one.
type nftBackend struct {
	nft   knftables.Interface
	rules ruleConfig
	state *tableState // what the table holds; nil: unknown
}

var _ backend = (*nftBackend)(nil)

func (b *nftBackend) sync(ctx context.Context, ports []servicePort, full bool) error {
	tx := b.nft.NewTransaction()
	next := render(tx, ports, b.rules, b.state, full)
	if err := b.nft.Run(ctx, tx); err != nil {
		b.state = nil // start over next time
		return fmt.Errorf("nft transaction (%d operations): %w", tx.NumOperations(), err)
	}
	b.state = next
	return nil
}
