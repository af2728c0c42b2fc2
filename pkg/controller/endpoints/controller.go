package endpoints

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// DefaultWorkers is kube-controller-manager's --concurrent-endpoint-syncs.
const DefaultWorkers = 5

// Config configures the controller.
type Config struct {
	// Workers is how many Services are synced at once (default 5).
	Workers int
	Logger  *slog.Logger
	// Clock stamps the last-change-trigger-time annotation; nil means the
	// real clock.
	Clock clock.PassiveClock
}

func (c *Config) complete() error {
	if c.Workers < 0 {
		return fmt.Errorf("endpoints: workers (%d) must not be negative", c.Workers)
	}
	c.Workers = cmp.Or(c.Workers, DefaultWorkers)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	c.Clock = cmp.Or[clock.PassiveClock](c.Clock, clock.RealClock{})
	return nil
}

// Controller keeps the Endpoints of every Service with a selector.
type Controller struct {
	client     kubernetes.Interface
	svcLister  corelisters.ServiceLister
	podLister  corelisters.PodLister
	epLister   corelisters.EndpointsLister
	queue      workqueue.TypedRateLimitingInterface[string]
	loop       *loop.Loop[string]
	clock      clock.PassiveClock
	log        *slog.Logger
	triggersMu sync.Mutex
	// triggers holds, per Service key, when the oldest change not yet
	// written to its Endpoints was seen.
	triggers map[string]time.Time
}

// New validates cfg and wires the controller to factory's Service, Pod
// and Endpoints informers. Nothing runs until Start (the caller starts
// factory).
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, cfg Config) (*Controller, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	svcInf, podInf, epInf := factory.Core().V1().Services(), factory.Core().V1().Pods(), factory.Core().V1().Endpoints()
	c := &Controller{
		client: client, svcLister: svcInf.Lister(), podLister: podInf.Lister(), epLister: epInf.Lister(),
		queue:    loop.NewQueue[string]("endpoint", nil),
		clock:    cfg.Clock,
		log:      cfg.Logger.With("controller", "endpoint"),
		triggers: map[string]time.Time{},
	}
	c.loop = &loop.Loop[string]{
		Queue: c.queue, Reconcile: c.Reconcile, Workers: cfg.Workers,
		Synced: []cache.InformerSynced{svcInf.Informer().HasSynced, podInf.Informer().HasSynced, epInf.Informer().HasSynced},
		Logger: c.log, KeyAttr: "service", Quiet: func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) },
	}
	if _, err := svcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.changed,
		UpdateFunc: func(_, cur any) { c.changed(cur) },
		DeleteFunc: c.changed,
	}); err != nil {
		return nil, fmt.Errorf("endpoints: service handler: %w", err)
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.podChanged(nil, obj) },
		UpdateFunc: func(old, cur any) {
			if old.(*corev1.Pod).ResourceVersion != cur.(*corev1.Pod).ResourceVersion {
				c.podChanged(old, cur)
			}
		},
		DeleteFunc: func(obj any) { c.podChanged(nil, obj) },
	}); err != nil {
		return nil, fmt.Errorf("endpoints: pod handler: %w", err)
	}
	// An Endpoints object deleted or changed behind the controller's back
	// is put right by syncing its Service again.
	if _, err := epInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, cur any) { loop.Enqueue(c.queue, cur) },
		DeleteFunc: func(obj any) { loop.Enqueue(c.queue, obj) },
	}); err != nil {
		return nil, fmt.Errorf("endpoints: endpoints handler: %w", err)
	}
	return c, nil
}

// Start syncs Endpoints with Config.Workers workers until ctx ends.
func (c *Controller) Start(ctx context.Context) error { return c.loop.Run(ctx) }

// changed queues a Service (or its key, on deletion) and notes when.
func (c *Controller) changed(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.noteTrigger(key)
	c.queue.Add(key)
}

func (c *Controller) noteTrigger(key string) {
	c.triggersMu.Lock()
	defer c.triggersMu.Unlock()
	if _, ok := c.triggers[key]; !ok {
		c.triggers[key] = c.clock.Now()
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

// podChanged queues the Services whose selector matches the pod's old or
// new labels.
func (c *Controller) podChanged(old, cur any) {
	pod, ok := loop.As[*corev1.Pod](cur)
	if !ok {
		return
	}
	var oldLabels labels.Set
	if o, ok := old.(*corev1.Pod); ok {
		oldLabels = o.Labels
	}
	svcs, err := c.svcLister.Services(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, svc := range svcs {
		if len(svc.Spec.Selector) == 0 {
			continue
		}
		sel := labels.SelectorFromValidatedSet(svc.Spec.Selector)
		if sel.Matches(labels.Set(pod.Labels)) || (oldLabels != nil && sel.Matches(oldLabels)) {
			c.changed(svc)
		}
	}
}
