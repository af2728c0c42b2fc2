// Package resourcequota is Kubernetes' resourcequota controller: it
// keeps each ResourceQuota's status in step with its namespace, as
// status.hard (the spec's hard limits) and status.used (what the
// namespace's objects in the quota's scopes use of them, measured by
// pkg/quota). A quota is recounted when it is created or its hard limits
// change, when an object it may count is created, changes what it uses
// or is deleted (which gives back what the ResourceQuota admission
// charged for it), and every ResyncPeriod. Pods, services and persistent
// volume claims come from the shared informers; the objects of any other
// resource a quota counts (count/<resource>.<group>, configmaps,
// secrets, replicationcontrollers, ...) from a metadata informer started
// the first time a quota names them.
package resourcequota

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
	"github.com/minik8s/minik8s/pkg/quota"
)

// Kubernetes' defaults: --concurrent-resource-quota-syncs and
// --resource-quota-sync-period.
const (
	DefaultWorkers      = 5
	DefaultResyncPeriod = 5 * time.Minute
)

// Config configures the controller.
type Config struct {
	// Workers is how many quotas are recounted at once (default 5).
	Workers int
	// ResyncPeriod is how often every quota is recounted (default 5m).
	ResyncPeriod time.Duration
}

// Controller keeps ResourceQuota status.
type Controller struct {
	kit.Base
	resync time.Duration
	quotas corelisters.ResourceQuotaLister
	// typed are the listers of the resources whose usage is more than
	// a count.
	typed map[schema.GroupResource]func(ns string) ([]runtime.Object, error)

	metadata metadata.Interface
	mapper   *restmapper.DeferredDiscoveryRESTMapper

	mu sync.Mutex
	// ctx is the running controller's, for the metadata informers it
	// starts; monitors are those informers, by resource.
	ctx      context.Context
	monitors map[schema.GroupResource]cache.SharedIndexInformer
	// unserved are the resources discovery did not know, and when it
	// was last asked.
	unserved map[schema.GroupResource]time.Time
}

// rediscover is how long a resource discovery did not know counts as
// not served before discovery is asked again.
const rediscover = time.Minute

// New wires the controller to kc's informers; kc.Metadata (or kc.REST)
// lets it count resources other than pods, services and claims.
func New(kc *kit.Context, cfg Config) (*Controller, error) {
	workers, err := kit.Workers("resourcequota", cfg.Workers, DefaultWorkers)
	if err != nil {
		return nil, err
	}
	md := kc.Metadata
	if md == nil && kc.REST != nil {
		if md, err = metadata.NewForConfig(kc.REST); err != nil {
			return nil, fmt.Errorf("resourcequota: %w", err)
		}
	}
	core := kc.Factory.Core().V1()
	c := &Controller{
		Base:   kc.NewBase("resourcequota", "resourcequota", workers, "resourcequota-controller"),
		resync: cfg.ResyncPeriod, quotas: core.ResourceQuotas().Lister(),
		metadata: md, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kc.Client.Discovery())),
		monitors: map[schema.GroupResource]cache.SharedIndexInformer{},
		unserved: map[schema.GroupResource]time.Time{},
	}
	if c.resync == 0 {
		c.resync = DefaultResyncPeriod
	}
	c.Loop.ReconcileAfter = c.Reconcile
	c.Loop.Ready = func(ctx context.Context) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.ctx = ctx
		return nil
	}
	pods, services, claims := core.Pods(), core.Services(), core.PersistentVolumeClaims()
	c.typed = map[schema.GroupResource]func(string) ([]runtime.Object, error){
		{Resource: "pods"}: func(ns string) ([]runtime.Object, error) {
			return asObjects(pods.Lister().Pods(ns).List(labels.Everything()))
		},
		{Resource: "services"}: func(ns string) ([]runtime.Object, error) {
			return asObjects(services.Lister().Services(ns).List(labels.Everything()))
		},
		{Resource: "persistentvolumeclaims"}: func(ns string) ([]runtime.Object, error) {
			return asObjects(claims.Lister().PersistentVolumeClaims(ns).List(labels.Everything()))
		},
	}
	if err := c.Loop.Watch(core.ResourceQuotas().Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { loop.Enqueue(c.Queue, obj) },
		UpdateFunc: c.quotaUpdated,
	}); err != nil {
		return nil, err
	}
	for gr, inf := range map[schema.GroupResource]cache.SharedIndexInformer{
		{Resource: "pods"}: pods.Informer(), {Resource: "services"}: services.Informer(),
		{Resource: "persistentvolumeclaims"}: claims.Informer(),
	} {
		if err := c.Loop.Watch(inf, c.replenish(gr)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func asObjects[T runtime.Object](items []T, err error) ([]runtime.Object, error) {
	out := make([]runtime.Object, len(items))
	for i := range items {
		out[i] = items[i]
	}
	return out, err
}

// quotaUpdated recounts a quota whose hard limits changed, or whose
// status someone else made disagree with them; the status writes of
// the controller and of admission alone do not queue it.
func (c *Controller) quotaUpdated(old, cur any) {
	o, ok1 := old.(*corev1.ResourceQuota)
	q, ok2 := cur.(*corev1.ResourceQuota)
	if !ok1 || !ok2 {
		return
	}
	if !quota.Equals(o.Spec.Hard, q.Spec.Hard) || needsRecount(q) {
		loop.Enqueue(c.Queue, q)
	}
}

// needsRecount: q's status does not show its hard limits, or lacks the
// usage of one of them.
func needsRecount(q *corev1.ResourceQuota) bool {
	if !quota.Equals(q.Spec.Hard, q.Status.Hard) {
		return true
	}
	for name := range q.Spec.Hard {
		if _, ok := q.Status.Used[name]; !ok {
			return true
		}
	}
	return false
}

// replenish is the handler of the objects of gr: what is created or
// deleted, or changes what it uses, has the quotas of its namespace
// recounted.
func (c *Controller) replenish(gr schema.GroupResource) cache.ResourceEventHandler {
	ev := quota.For(gr)
	enqueue := func(obj any) {
		if m, ok := loop.As[metav1.Object](obj); ok {
			c.enqueueNamespace(m.GetNamespace())
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(runtime.Object)
			n, ok2 := cur.(runtime.Object)
			now := c.Clock.Now()
			if ok1 && ok2 && !quota.Equals(ev.Usage(o, now), ev.Usage(n, now)) {
				enqueue(cur)
			}
		},
		DeleteFunc: enqueue,
	}
}

// enqueueNamespace queues every quota of ns.
func (c *Controller) enqueueNamespace(ns string) {
	qs, err := c.quotas.ResourceQuotas(ns).List(labels.Everything())
	if err != nil {
		return
	}
	for _, q := range qs {
		loop.Enqueue(c.Queue, q)
	}
}

// Reconcile recounts the quota key names and writes its status when it
// changed; the quota comes back after the resync period.
func (c *Controller) Reconcile(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	q, err := c.quotas.ResourceQuotas(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	used, err := c.usage(ctx, q)
	if err != nil {
		return 0, err
	}
	if quota.Equals(q.Status.Hard, q.Spec.Hard) && quota.Equals(q.Status.Used, used) {
		return c.resync, nil
	}
	fresh := q.DeepCopy()
	fresh.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: used}
	if _, err := c.Client.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, fresh, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("update status of quota %s: %w", key, err)
	}
	return c.resync, nil
}

// usage is what q's namespace uses of each of q's hard limits (zero
// for what nothing uses or what cannot be counted).
func (c *Controller) usage(ctx context.Context, q *corev1.ResourceQuota) (corev1.ResourceList, error) {
	hard := q.Spec.Hard
	names := quota.ResourceNames(hard)
	used := corev1.ResourceList{}
	for _, name := range names {
		used[name] = quota.Zero()
	}
	now := c.Clock.Now()
	for _, gr := range quota.GroupResources(names) {
		objs, err := c.objects(ctx, gr, q.Namespace)
		if err != nil {
			return nil, err
		}
		ev := quota.For(gr)
		tracked := ev.Tracked(names)
		for _, obj := range objs {
			if ok, err := ev.MatchesScopes(q, obj); err != nil || !ok {
				continue
			}
			used = quota.Add(used, quota.Mask(ev.Usage(obj, now), tracked))
		}
	}
	return used, nil
}

// objects are the objects of gr in ns: from the shared informers, or
// from gr's metadata informer, started and synced the first time. A
// resource the apiserver does not serve has none.
func (c *Controller) objects(ctx context.Context, gr schema.GroupResource, ns string) ([]runtime.Object, error) {
	if list, ok := c.typed[gr]; ok {
		return list(ns)
	}
	inf, err := c.monitor(gr)
	if err != nil || inf == nil {
		return nil, err
	}
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("cache of %s not synced", gr)
	}
	items, err := inf.GetIndexer().ByIndex(cache.NamespaceIndex, ns)
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Object, 0, len(items))
	for _, it := range items {
		if obj, ok := it.(runtime.Object); ok {
			out = append(out, obj)
		}
	}
	return out, nil
}

// monitor is the metadata informer of gr, started on first use; nil
// when gr is not served (or there is no metadata client).
func (c *Controller) monitor(gr schema.GroupResource) (cache.SharedIndexInformer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if inf, ok := c.monitors[gr]; ok {
		return inf, nil
	}
	if c.metadata == nil || c.ctx == nil {
		return nil, nil
	}
	if at, ok := c.unserved[gr]; ok && c.Clock.Since(at) < rediscover {
		return nil, nil
	}
	gvr, err := c.mapper.ResourceFor(gr.WithVersion(""))
	if err != nil {
		// Discovery may be older than the resource: look once more.
		c.mapper.Reset()
		if gvr, err = c.mapper.ResourceFor(gr.WithVersion("")); err != nil {
			c.Log.Debug("resource not served, counted as none", "resource", gr.String(), "err", err)
			c.unserved[gr] = c.Clock.Now()
			return nil, nil
		}
	}
	delete(c.unserved, gr)
	inf := metadatainformer.NewFilteredMetadataInformer(c.metadata, gvr, metav1.NamespaceAll, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
	if _, err := inf.AddEventHandler(c.replenish(gr)); err != nil {
		return nil, err
	}
	go inf.Run(c.ctx.Done())
	c.monitors[gr] = inf
	return inf, nil
}
