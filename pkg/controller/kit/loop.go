package kit

import (
	"context"
	"fmt"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// Loop is a controller's main loop.Loop, named.
type Loop struct {
	*loop.Loop[string]
	name string
}

// NewLoop is the loop of the controller called name ("replicaset"): a
// rate-limited queue of that name whose delays run on c.Clock, workers
// workers, a logger with controller=name that logs keys as keyAttr, and
// conflicts (a cache behind a write) logged at debug level. The caller
// sets Reconcile (or ReconcileAfter), and Watch adds the informers it
// waits for.
func (c *Context) NewLoop(name, keyAttr string, workers int) *Loop {
	c.complete()
	return &Loop{name: name, Loop: &loop.Loop[string]{
		Queue:   loop.NewQueue[string](name, c.Clock),
		Workers: workers,
		Logger:  c.Logger.With("controller", name),
		KeyAttr: keyAttr,
		Quiet:   apierrors.IsConflict,
	}}
}

// Watch hands inf's events to h and makes the loop wait for inf's cache
// before it starts.
func (l *Loop) Watch(inf cache.SharedIndexInformer, h cache.ResourceEventHandler) error {
	if _, err := inf.AddEventHandler(h); err != nil {
		return fmt.Errorf("%s: event handler: %w", l.name, err)
	}
	l.Synced = append(l.Synced, inf.HasSynced)
	return nil
}

// Base is what a controller holds of its kit.Context, embedded: the
// client, its main loop and that loop's queue, its Event recorder, the
// clock and its logger.
type Base struct {
	Client   kubernetes.Interface
	Loop     *Loop
	Queue    workqueue.TypedRateLimitingInterface[string]
	Recorder record.EventRecorder
	Clock    clock.WithTicker
	Log      *slog.Logger
}

// NewBase is the Base of the controller called name: its NewLoop, and
// with a component ("replicaset-controller") a recorder of its Events.
// The controller sets Loop.Reconcile and watches its informers.
func (c *Context) NewBase(name, keyAttr string, workers int, component string) Base {
	l := c.NewLoop(name, keyAttr, workers)
	b := Base{Client: c.Client, Loop: l, Queue: l.Queue, Clock: c.Clock, Log: l.Logger}
	if component != "" {
		b.Recorder = c.EventRecorder(component)
	}
	return b
}

// Start runs the loop until ctx ends.
func (b *Base) Start(ctx context.Context) error { return b.Loop.Run(ctx) }
