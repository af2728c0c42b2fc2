package endpointslice

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/controller/kit"
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

// Config configures the controller; the rest comes from the kit.Context
// (its Clock bounds how long a sync waits for the cache to show the
// controller's own writes).
type Config struct {
	// Workers is how many Services are synced at once (default 5).
	Workers int
	// MaxEndpointsPerSlice caps the endpoints in one slice (default 100).
	MaxEndpointsPerSlice int
}

// Controller keeps the EndpointSlices of every Service with a selector.
type Controller struct {
	kit.Base
	svcLister   corelisters.ServiceLister
	podLister   corelisters.PodLister
	sliceLister discoverylisters.EndpointSliceLister
	maxPerSlice int
	written     *writes
}

// New validates cfg and wires the controller to kc's Service, Pod and
// EndpointSlice informers. Nothing runs until Start (kit.Run starts the
// informers).
func New(kc *kit.Context, cfg Config) (*Controller, error) {
	if cfg.MaxEndpointsPerSlice < 0 || cfg.MaxEndpointsPerSlice > 1000 {
		return nil, fmt.Errorf("endpointslice: max endpoints per slice (%d) must be within 1..1000", cfg.MaxEndpointsPerSlice)
	}
	workers, err := kit.Workers("endpointslice", cfg.Workers, DefaultWorkers)
	if err != nil {
		return nil, err
	}
	svcInf, podInf := kc.Factory.Core().V1().Services(), kc.Factory.Core().V1().Pods()
	sliceInf := kc.Factory.Discovery().V1().EndpointSlices()
	b := kc.NewBase("endpointslice", "service", workers, "")
	l := b.Loop
	c := &Controller{
		svcLister: svcInf.Lister(), podLister: podInf.Lister(), sliceLister: sliceInf.Lister(),
		Base:        b,
		maxPerSlice: cmp.Or(cfg.MaxEndpointsPerSlice, MaxEndpointsPerSlice),
		written:     &writes{clock: kc.Clock, m: map[string]map[string]written{}},
	}
	l.Reconcile = c.Reconcile
	l.Quiet = func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || err == errStaleCache
	}
	return c, errors.Join(
		l.Watch(svcInf.Informer(), loop.KeyHandler(c.Queue)),
		l.Watch(podInf.Informer(), kit.PodServicesHandler(c.svcLister, func(svc *corev1.Service) { loop.Enqueue(c.Queue, svc) })),
		l.Watch(sliceInf.Informer(), kit.ServiceSlicesHandler(ControllerName, c.Queue)))
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
