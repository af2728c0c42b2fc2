package endpoints

import (
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// DefaultWorkers is kube-controller-manager's --concurrent-endpoint-syncs.
const DefaultWorkers = 5

// Config configures the controller; the rest comes from the kit.Context
// (its Clock stamps the last-change-trigger-time annotation).
type Config struct {
	// Workers is how many Services are synced at once (default 5).
	Workers int
}

// Controller keeps the Endpoints of every Service with a selector.
type Controller struct {
	kit.Base
	svcLister  corelisters.ServiceLister
	podLister  corelisters.PodLister
	epLister   corelisters.EndpointsLister
	triggersMu sync.Mutex
	// triggers holds, per Service key, when the oldest change not yet
	// written to its Endpoints was seen.
	triggers map[string]time.Time
}

// New validates cfg and wires the controller to kc's Service, Pod and
// Endpoints informers. Nothing runs until Start (kit.Run starts the
// informers).
func New(kc *kit.Context, cfg Config) (*Controller, error) {
	workers, err := kit.Workers("endpoints", cfg.Workers, DefaultWorkers)
	if err != nil {
		return nil, err
	}
	svcInf, podInf, epInf := kc.Factory.Core().V1().Services(), kc.Factory.Core().V1().Pods(), kc.Factory.Core().V1().Endpoints()
	b := kc.NewBase("endpoint", "service", workers, "")
	l := b.Loop
	c := &Controller{
		svcLister: svcInf.Lister(), podLister: podInf.Lister(), epLister: epInf.Lister(),
		Base:     b,
		triggers: map[string]time.Time{},
	}
	l.Reconcile = c.Reconcile
	l.Quiet = func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	return c, errors.Join(
		l.Watch(svcInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.changed,
			UpdateFunc: func(_, cur any) { c.changed(cur) },
			DeleteFunc: c.changed,
		}),
		l.Watch(podInf.Informer(), kit.PodServicesHandler(c.svcLister, func(svc *corev1.Service) { c.changed(svc) })),
		// An Endpoints object deleted or changed behind the controller's
		// back is put right by syncing its Service again. One without a
		// Service is the user's: as in Kubernetes, only the Service's
		// deletion removes Endpoints, never a change to them.
		l.Watch(epInf.Informer(), cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, cur any) { c.endpointsChanged(cur) },
			DeleteFunc: func(obj any) { loop.Enqueue(c.Queue, obj) },
		}))
}

// endpointsChanged queues the Service of changed Endpoints, if there is
// one.
func (c *Controller) endpointsChanged(obj any) {
	ep, ok := obj.(*corev1.Endpoints)
	if !ok {
		return
	}
	if _, err := c.svcLister.Services(ep.Namespace).Get(ep.Name); err == nil {
		loop.Enqueue(c.Queue, ep)
	}
}

// changed queues a Service (or its key, on deletion) and notes when.
func (c *Controller) changed(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.noteTrigger(key)
	c.Queue.Add(key)
}

func (c *Controller) noteTrigger(key string) {
	c.triggersMu.Lock()
	defer c.triggersMu.Unlock()
	if _, ok := c.triggers[key]; !ok {
		c.triggers[key] = c.Clock.Now()
	}
}

// takeTrigger is the time of the oldest change to key not yet written,
// and forgets it; zero when none is known (a resync).
func (c *Controller) takeTrigger(key string) time.Time {
	c.triggersMu.Lock()
	defer c.triggersMu.Unlock()
	t := c.triggers[key]
	delete(c.triggers, key)
	return t
}

// putTrigger gives back a trigger time a failed sync took, unless a
// newer change has noted an older one meanwhile.
func (c *Controller) putTrigger(key string, t time.Time) {
	if t.IsZero() {
		return
	}
	c.triggersMu.Lock()
	defer c.triggersMu.Unlock()
	if cur, ok := c.triggers[key]; !ok || t.Before(cur) {
		c.triggers[key] = t
	}
}
