package garbagecollector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// Defaults.
const (
	DefaultResyncPeriod = 30 * time.Second
	DefaultWorkers      = 2
)

// DefaultIgnoredResources are never watched: Events are many, change
// often and are never owners, as in Kubernetes.
var DefaultIgnoredResources = []schema.GroupResource{
	{Group: "", Resource: "events"},
	{Group: "events.k8s.io", Resource: "events"},
}

// Config configures the collector.
type Config struct {
	// ResyncPeriod is how often discovery is read again for new and
	// removed resources (default 30s).
	ResyncPeriod time.Duration
	// Workers is how many objects are processed at once (default 2).
	Workers int
	// IgnoredResources are not watched (default DefaultIgnoredResources).
	IgnoredResources []schema.GroupResource
}

func (c *Config) complete() error {
	if c.ResyncPeriod < 0 || c.Workers < 0 {
		return errors.New("garbagecollector: negative resync period or workers")
	}
	c.ResyncPeriod = cmp.Or(c.ResyncPeriod, DefaultResyncPeriod)
	c.Workers = cmp.Or(c.Workers, DefaultWorkers)
	if c.IgnoredResources == nil {
		c.IgnoredResources = DefaultIgnoredResources
	}
	return nil
}

// Controller is the garbage collector.
type Controller struct {
	cfg       Config
	discovery discovery.DiscoveryInterface
	metadata  metadata.Interface
	graph     *graph
	// attemptToDelete holds dependents to check against their owners and
	// owners being deleted in the foreground; attemptToOrphan owners
	// being deleted with the orphan policy.
	attemptToDelete workqueue.TypedRateLimitingInterface[types.UID]
	attemptToOrphan workqueue.TypedRateLimitingInterface[types.UID]
	loop            *loop.Loop[types.UID]
	log             *slog.Logger

	mu       sync.Mutex
	monitors map[schema.GroupVersionResource]*monitor
	kinds    *kindMap
}

// monitor is the metadata informer of one resource.
type monitor struct {
	gvk      schema.GroupVersionKind
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
}

// New validates cfg. The collector discovers and watches resources once
// started; kc.Client serves discovery, kc.Metadata everything else.
func New(kc *kit.Context, cfg Config) (*Controller, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	client, md := kc.Client, kc.Metadata
	if client == nil || md == nil {
		return nil, errors.New("garbagecollector: a client and a metadata client are required")
	}
	c := &Controller{
		cfg: cfg, discovery: client.Discovery(), metadata: md, graph: newGraph(),
		attemptToDelete: loop.NewQueue[types.UID]("garbage_collector_attempt_to_delete", nil),
		attemptToOrphan: loop.NewQueue[types.UID]("garbage_collector_attempt_to_orphan", nil),
		log:             cmp.Or(kc.Logger, slog.Default()).With("controller", "garbagecollector"),
		monitors:        map[schema.GroupVersionResource]*monitor{},
		kinds:           &kindMap{},
	}
	orphans := &loop.Loop[types.UID]{
		Queue: c.attemptToOrphan, Reconcile: c.ReconcileOrphan,
		Logger: c.log.With("attempt", "orphan"), KeyAttr: "uid",
	}
	c.loop = &loop.Loop[types.UID]{
		Queue: c.attemptToDelete, Reconcile: c.Reconcile, Workers: cfg.Workers,
		Ready:  c.firstSync,
		Also:   []func(context.Context){orphans.Work, c.resyncPeriodically},
		Logger: c.log.With("attempt", "delete"), KeyAttr: "uid",
	}
	return c, nil
}

// Start watches every deletable resource, waits until all are synced,
// then collects garbage until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	defer c.attemptToOrphan.ShutDown()
	defer c.stopMonitors()
	return c.loop.Run(ctx)
}

// firstSync watches every resource discovery lists and waits for them all
// to sync, retrying each second until it succeeds or ctx ends. The first
// sync must see every resource: an owner deleted with the orphan policy
// must not miss dependents of a kind not watched yet.
func (c *Controller) firstSync(ctx context.Context) error {
	for {
		err := c.resync(ctx, 0)
		if err == nil {
			break
		}
		c.log.Warn("discover resources", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	c.log.Info("watching resources", "resources", c.monitorCount(), "objects", c.graph.size())
	return nil
}

// resyncPeriodically follows resources that appear and go away until ctx
// ends.
func (c *Controller) resyncPeriodically(ctx context.Context) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := c.resync(ctx, c.cfg.ResyncPeriod); err != nil && ctx.Err() == nil {
			c.log.Warn("resync resources", "err", err)
		}
	}, c.cfg.ResyncPeriod)
}

func (c *Controller) enqueue(ch changes) {
	for _, uid := range ch.attemptToDelete {
		c.attemptToDelete.Add(uid)
	}
	for _, uid := range ch.attemptToOrphan {
		c.attemptToOrphan.Add(uid)
	}
}

// resync reads discovery, watches resources that appeared and stops
// watching those that went away. It waits for new informers to sync,
// at most syncTimeout when that is not zero.
func (c *Controller) resync(ctx context.Context, syncTimeout time.Duration) error {
	wanted, err := c.discover()
	if err != nil {
		return err
	}
	var synced []cache.InformerSynced
	c.mu.Lock()
	for gvr, gvk := range wanted {
		if _, ok := c.monitors[gvr]; ok {
			continue
		}
		m, err := c.newMonitor(ctx, gvr, gvk)
		if err != nil {
			c.mu.Unlock()
			return err
		}
		c.monitors[gvr] = m
		synced = append(synced, m.informer.HasSynced)
		c.log.Debug("watching resource", "resource", gvr.String())
	}
	for gvr, m := range c.monitors {
		if _, ok := wanted[gvr]; !ok {
			m.stop()
			delete(c.monitors, gvr)
			c.log.Info("resource no longer served", "resource", gvr.String())
		}
	}
	c.mu.Unlock()
	if len(synced) == 0 {
		return nil
	}
	waitCtx := ctx
	if syncTimeout > 0 {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, syncTimeout)
		defer cancel()
	}
	if !cache.WaitForCacheSync(waitCtx.Done(), synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("timed out waiting for new resources' informers to sync")
	}
	return nil
}

// discover lists the resources to watch (every one with list, watch and
// delete, in its preferred version) and refreshes the kind map.
func (c *Controller) discover() (map[schema.GroupVersionResource]schema.GroupVersionKind, error) {
	_, all, err := c.discovery.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discover resources: %w", err)
	}
	partial := err != nil
	c.kinds.set(all)
	preferred, err := c.discovery.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discover preferred resources: %w", err)
	}
	partial = partial || err != nil
	wanted := map[schema.GroupVersionResource]schema.GroupVersionKind{}
	for _, list := range preferred {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerbs(r.Verbs, "list", "watch", "delete") {
				continue
			}
			if slices.Contains(c.cfg.IgnoredResources, schema.GroupResource{Group: gv.Group, Resource: r.Name}) {
				continue
			}
			gvk := gv.WithKind(r.Kind)
			if r.Group != "" || r.Version != "" {
				gvk = schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
			}
			wanted[gv.WithResource(r.Name)] = gvk
		}
	}
	if partial {
		// Keep watching what a failed group may still serve.
		c.mu.Lock()
		for gvr, m := range c.monitors {
			if _, ok := wanted[gvr]; !ok {
				wanted[gvr] = m.gvk
			}
		}
		c.mu.Unlock()
	}
	return wanted, nil
}

// newMonitor starts a metadata informer for one resource; its events
// feed the graph.
func (c *Controller) newMonitor(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) (*monitor, error) {
	inf := metadatainformer.NewFilteredMetadataInformer(c.metadata, gvr, metav1.NamespaceAll, 0, nil, nil).Informer()
	observe := func(obj any) {
		if m, ok := obj.(metav1.Object); ok {
			c.enqueue(c.graph.observe(gvr, gvk, m))
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if m, ok := obj.(metav1.Object); ok {
				c.enqueue(c.graph.forget(m.GetUID()))
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("watch %s: %w", gvr, err)
	}
	mctx, stop := context.WithCancel(ctx)
	go inf.RunWithContext(mctx)
	return &monitor{gvk: gvk, informer: inf, stop: stop}, nil
}

func (c *Controller) stopMonitors() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for gvr, m := range c.monitors {
		m.stop()
		delete(c.monitors, gvr)
	}
}

func (c *Controller) monitorCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.monitors)
}

// kindMap resolves an ownerReference's apiVersion and kind to the
// resource to GET, from discovery.
type kindMap struct {
	mu        sync.Mutex
	exact     map[schema.GroupVersionKind]resourceInfo
	byGroup   map[schema.GroupKind]resourceInfo
	refreshed time.Time
}

type resourceInfo struct {
	resource   schema.GroupVersionResource
	namespaced bool
}

func (k *kindMap) set(lists []*metav1.APIResourceList) {
	exact := map[schema.GroupVersionKind]resourceInfo{}
	byGroup := map[schema.GroupKind]resourceInfo{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerbs(r.Verbs, "get") {
				continue
			}
			info := resourceInfo{resource: gv.WithResource(r.Name), namespaced: r.Namespaced}
			exact[gv.WithKind(r.Kind)] = info
			if _, ok := byGroup[schema.GroupKind{Group: gv.Group, Kind: r.Kind}]; !ok {
				byGroup[schema.GroupKind{Group: gv.Group, Kind: r.Kind}] = info
			}
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.exact, k.byGroup, k.refreshed = exact, byGroup, time.Now()
}

func (k *kindMap) lookup(gvk schema.GroupVersionKind) (resourceInfo, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if info, ok := k.exact[gvk]; ok {
		return info, true
	}
	info, ok := k.byGroup[gvk.GroupKind()]
	return info, ok
}

func (k *kindMap) age() time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return time.Since(k.refreshed)
}

// resourceFor maps an owner's apiVersion and kind to its resource,
// reading discovery again (at most every few seconds) on a miss.
func (c *Controller) resourceFor(apiVersion, kind string) (resourceInfo, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return resourceInfo{}, fmt.Errorf("owner apiVersion %q: %w", apiVersion, err)
	}
	gvk := gv.WithKind(kind)
	if info, ok := c.kinds.lookup(gvk); ok {
		return info, nil
	}
	if c.kinds.age() > 5*time.Second {
		if _, all, err := c.discovery.ServerGroupsAndResources(); err == nil || discovery.IsGroupDiscoveryFailedError(err) {
			c.kinds.set(all)
		}
		if info, ok := c.kinds.lookup(gvk); ok {
			return info, nil
		}
	}
	return resourceInfo{}, fmt.Errorf("no resource serves kind %s", gvk)
}

func hasVerbs(have metav1.Verbs, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
