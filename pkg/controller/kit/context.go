package kit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Context is what a controller's constructor builds it from: shared by
// all the controllers of one controller-manager term.
type Context struct {
	// Client writes to the apiserver (and records Events).
	Client kubernetes.Interface
	// Factory is the shared informer factory the controllers read from;
	// Run starts it.
	Factory informers.SharedInformerFactory
	// Dynamic, Metadata and REST are for the controllers that need them
	// (namespace, garbage collector, autoscaler); nil elsewhere.
	Dynamic  dynamic.Interface
	Metadata metadata.Interface
	REST     *rest.Config
	// Clock is every controller's time source and its queues' (default
	// the real clock).
	Clock clock.WithTicker
	// Logger is the controllers' logger (default slog.Default()).
	Logger *slog.Logger
	// Broadcaster hands each controller a recorder of its own component;
	// Run records its Events to the API while the controllers run.
	Broadcaster record.EventBroadcaster
	// Recorder, when set, receives every controller's Events instead of
	// Broadcaster (tests).
	Recorder record.EventRecorder
}

// NewContext is a Context on client with a fresh informer factory and
// event broadcaster, the real clock and slog.Default(); set the rest
// before building controllers from it.
func NewContext(client kubernetes.Interface) *Context {
	return &Context{
		Client:      client,
		Factory:     informers.NewSharedInformerFactory(client, 0),
		Clock:       clock.RealClock{},
		Logger:      slog.Default(),
		Broadcaster: record.NewBroadcaster(),
	}
}

// complete fills the defaults of the fields left zero.
func (c *Context) complete() {
	c.Clock = cmp.Or[clock.WithTicker](c.Clock, clock.RealClock{})
	c.Logger = cmp.Or(c.Logger, slog.Default())
	if c.Factory == nil {
		c.Factory = informers.NewSharedInformerFactory(c.Client, 0)
	}
	if c.Broadcaster == nil && c.Recorder == nil {
		c.Broadcaster = record.NewBroadcaster()
	}
}

// EventRecorder records Events from component ("replicaset-controller").
func (c *Context) EventRecorder(component string) record.EventRecorder {
	c.complete()
	if c.Recorder != nil {
		return c.Recorder
	}
	return c.Broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
}

// A Part is one controller as Run runs it.
type Part struct {
	Name  string
	Start func(ctx context.Context) error
}

// Run records Events to the API, starts the informers and runs every
// part until ctx ends. When one part fails (while ctx has not ended),
// Run stops the others and, once all have returned, returns that error
// as "controller <name>: ...".
func Run(ctx context.Context, c *Context, parts ...Part) error {
	c.complete()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if c.Broadcaster != nil {
		c.Broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.Client.CoreV1().Events("")})
		defer c.Broadcaster.Shutdown()
	}
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for _, p := range parts {
		wg.Go(func() {
			if err := p.Start(ctx); err != nil && ctx.Err() == nil {
				once.Do(func() { first = fmt.Errorf("controller %s: %w", p.Name, err) })
				cancel()
			}
		})
	}
	c.Factory.Start(ctx.Done())
	wg.Wait()
	cancel()
	c.Factory.Shutdown()
	return first
}

// ErrNegative is returned for a negative worker count.
var ErrNegative = errors.New("must not be negative")

// Workers is n, or def when n is zero; a negative n is an error that
// names the controller.
func Workers(name string, n, def int) (int, error) {
	if n < 0 {
		return 0, fmt.Errorf("%s: workers (%d) %w", name, n, ErrNegative)
	}
	return cmp.Or(n, def), nil
}
