package endpointslice

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// Defaults, as in kube-controller-manager (--concurrent-service-endpoint-syncs,
// --max-endpoints-per-slice).
const (
	DefaultWorkers       = 5
	MaxEndpointsPerSlice = 100
	// ControllerName is the managed-by label value of this controller's
	// slices.
	ControllerName = "endpointslice-controller.k8s.io"
)

// Config configures the controller.
type Config struct {
	// Workers is how many Services are synced at once (default 5).
	Workers int
	// MaxEndpointsPerSlice caps the endpoints in one slice (default 100).
	MaxEndpointsPerSlice int
	Logger               *slog.Logger
	// Clock bounds how long a sync waits for the cache to show the
	// controller's own writes; nil means the real clock.
	Clock clock.PassiveClock
}

func (c *Config) complete() error {
	if c.Workers < 0 || c.MaxEndpointsPerSlice < 0 || c.MaxEndpointsPerSlice > 1000 {
		return fmt.Errorf("endpointslice: workers (%d) must not be negative, max endpoints per slice (%d) must be within 1..1000",
			c.Workers, c.MaxEndpointsPerSlice)
	}
	c.Workers = cmp.Or(c.Workers, DefaultWorkers)
	c.MaxEndpointsPerSlice = cmp.Or(c.MaxEndpointsPerSlice, MaxEndpointsPerSlice)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	c.Clock = cmp.Or[clock.PassiveClock](c.Clock, clock.RealClock{})
	return nil
}

// Controller keeps the EndpointSlices of every Service with a selector.
type Controller struct {
	client      kubernetes.Interface
	svcLister   corelisters.ServiceLister
	podLister   corelisters.PodLister
	sliceLister discoverylisters.EndpointSliceLister
	queue       workqueue.TypedRateLimitingInterface[string]
	loop        *loop.Loop[string]
	maxPerSlice int
	log         *slog.Logger
	written     *writes
}

// New validates cfg and wires the controller to factory's Service, Pod
// and EndpointSlice informers. Nothing runs until Start (the caller
// starts factory).
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, cfg Config) (*Controller, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	svcInf, podInf := factory.Core().V1().Services(), factory.Core().V1().Pods()
	sliceInf := factory.Discovery().V1().EndpointSlices()
	c := &Controller{
		client: client, svcLister: svcInf.Lister(), podLister: podInf.Lister(), sliceLister: sliceInf.Lister(),
		queue:       loop.NewQueue[string]("endpointslice", nil),
		maxPerSlice: cfg.MaxEndpointsPerSlice,
		log:         cfg.Logger.With("controller", "endpointslice"),
		written:     &writes{clock: cfg.Clock, m: map[string]map[string]written{}},
	}
	c.loop = &loop.Loop[string]{
		Queue: c.queue, Reconcile: c.Reconcile, Workers: cfg.Workers,
		Synced: []cache.InformerSynced{svcInf.Informer().HasSynced, podInf.Informer().HasSynced, sliceInf.Informer().HasSynced},
		Logger: c.log, KeyAttr: "service",
		Quiet: func(err error) bool {
			return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || err == errStaleCache
		},
	}
	if _, err := svcInf.Informer().AddEventHandler(loop.KeyHandler(c.queue)); err != nil {
		return nil, fmt.Errorf("endpointslice: service handler: %w", err)
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
		return nil, fmt.Errorf("endpointslice: pod handler: %w", err)
	}
	if _, err := sliceInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.sliceChanged,
		UpdateFunc: func(_, cur any) { c.sliceChanged(cur) },
		DeleteFunc: c.sliceChanged,
	}); err != nil {
		return nil, fmt.Errorf("endpointslice: endpointslice handler: %w", err)
	}
	return c, nil
}

// Start syncs EndpointSlices with Config.Workers workers until ctx ends.
func (c *Controller) Start(ctx context.Context) error { return c.loop.Run(ctx) }

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
			loop.Enqueue(c.queue, svc)
		}
	}
}

// sliceChanged queues the Service of a slice this controller manages: a
// change by anyone else is undone, and the cache catching up with the
// controller's own writes lets a waiting sync go on.
func (c *Controller) sliceChanged(obj any) {
	s, ok := loop.As[*discoveryv1.EndpointSlice](obj)
	if !ok || s.Labels[discoveryv1.LabelManagedBy] != ControllerName {
		return
	}
	if svc := s.Labels[discoveryv1.LabelServiceName]; svc != "" {
		c.queue.Add(s.Namespace + "/" + svc)
	}
}

// writes remembers, per Service key, the resourceVersion of each slice
// the controller last wrote (or that it deleted one) until the informer
// cache shows it: a sync on an older cache could create duplicates. A
// write the cache never shows (the slice changed hands meanwhile) is
// forgotten after writeWait.
type writes struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	m     map[string]map[string]written
}

type written struct {
	rv      string
	deleted bool
	at      time.Time
}

const writeWait = 10 * time.Second

func (w *writes) record(key, slice, rv string, deleted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m[key] == nil {
		w.m[key] = map[string]written{}
	}
	w.m[key][slice] = written{rv: rv, deleted: deleted, at: w.clock.Now()}
}

func (w *writes) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}

// behind: the cached slices (by name) of key's Service do not yet show
// a write of the controller's.
func (w *writes) behind(key string, cached map[string]*discoveryv1.EndpointSlice) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	now, out := w.clock.Now(), false
	for name, wr := range w.m[key] {
		s, ok := cached[name]
		seen := (wr.deleted && !ok) || (!wr.deleted && ok && rvAtLeast(s.ResourceVersion, wr.rv))
		if seen || now.Sub(wr.at) > writeWait {
			delete(w.m[key], name)
			continue
		}
		out = true
	}
	if len(w.m[key]) == 0 {
		delete(w.m, key)
	}
	return out
}

// rvAtLeast: resourceVersion a is not older than b (both etcd revisions;
// anything else counts as caught up).
func rvAtLeast(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 != nil || err2 != nil || x >= y
}
