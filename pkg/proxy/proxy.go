package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/knftables"
)

// Config describes the proxy of one node.
type Config struct {
	Client kubernetes.Interface
	// NodeName is for logs.
	NodeName string
	// HostNetNS is the node's network namespace when it is not the
	// process's own.
	HostNetNS string
	// ClusterCIDR is the pod network: connections from outside it to a
	// Service are masqueraded. Empty: only NodePort connections are.
	ClusterCIDR string
	// MinSyncPeriod coalesces changes: at most one sync per period
	// (default 200ms).
	MinSyncPeriod time.Duration
	// SyncPeriod rewrites the table even without changes (default 1m).
	SyncPeriod time.Duration
	// NFT replaces the nft command (tests use knftables.NewFake).
	NFT    knftables.Interface
	Logger *slog.Logger
}

// Proxier programs Services into the node's kernel.
type Proxier struct {
	cfg   Config
	nft   knftables.Interface
	log   *slog.Logger
	state *tableState // what the table holds; nil: unknown
}

// New checks cfg and that nftables works in the node's namespace.
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
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	nft := cfg.NFT
	if nft == nil {
		var err error
		if nft, err = newNFT(cfg.HostNetNS); err != nil {
			return nil, err
		}
	}
	return &Proxier{cfg: cfg, nft: nft, log: log.With("component", "proxy")}, nil
}

// Cleanup deletes the proxy's table from the namespace at netns (the
// process's own when empty); a missing table is not an error.
func Cleanup(ctx context.Context, netns string) error {
	nft, err := newNFT(netns)
	if err != nil {
		return err
	}
	tx := nft.NewTransaction()
	tx.Add(&knftables.Table{})
	tx.Delete(&knftables.Table{})
	if err := nft.Run(ctx, tx); err != nil {
		return fmt.Errorf("delete table %s: %w", TableName, err)
	}
	return nil
}

// Start watches Services and EndpointSlices and keeps the table in step
// until ctx ends.
func (p *Proxier) Start(ctx context.Context) error {
	if p.cfg.NFT == nil {
		if err := enableBridgeNetfilter(p.cfg.HostNetNS); err != nil {
			p.log.Warn("bridged traffic will bypass conntrack", "err", err)
		}
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
	p.log.Info("service proxy started", "node", p.cfg.NodeName, "table", "ip "+TableName)
	resync := time.NewTimer(0)
	defer resync.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-resync.C:
		}
		start := time.Now()
		svcList, err := svcs.Lister().List(labels.Everything())
		if err == nil {
			var epList []*discoveryv1.EndpointSlice
			if epList, err = eps.Lister().List(labels.Everything()); err == nil {
				err = p.Sync(ctx, svcList, epList)
			}
		}
		next := p.cfg.SyncPeriod
		if err != nil {
			p.log.Error("sync service rules", "err", err)
			next = time.Second
		} else {
			p.log.Debug("synced service rules", "services", len(svcList), "took", time.Since(start))
		}
		resync.Reset(next)
		// Coalesce: whatever changes meanwhile is one sync.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(p.cfg.MinSyncPeriod - time.Since(start)):
		}
	}
}

// Sync writes the rules for svcs and eps in one transaction.
func (p *Proxier) Sync(ctx context.Context, svcs []*corev1.Service, eps []*discoveryv1.EndpointSlice) error {
	tx := p.nft.NewTransaction()
	next := render(tx, servicePorts(svcs, eps), p.cfg.ClusterCIDR, p.state)
	if err := p.nft.Run(ctx, tx); err != nil {
		p.state = nil // start over next time
		return fmt.Errorf("nft transaction (%d operations): %w", tx.NumOperations(), err)
	}
	p.state = next
	return nil
}
