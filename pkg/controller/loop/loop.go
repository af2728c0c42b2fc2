package loop

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Loop is a work queue and the workers that drain it into a Reconcile.
// Set Queue and one of Reconcile and ReconcileAfter; the rest is optional.
type Loop[K comparable] struct {
	// Queue holds the keys to reconcile. Run shuts it down when it
	// returns; Work leaves that to its caller.
	Queue workqueue.TypedRateLimitingInterface[K]
	// Reconcile moves what key names one step toward its desired state.
	// An error requeues key with back-off; success forgets its back-off.
	Reconcile func(ctx context.Context, key K) error
	// ReconcileAfter is used instead of Reconcile when set: it may also
	// return a delay (when positive) after which key is looked at again.
	ReconcileAfter func(ctx context.Context, key K) (time.Duration, error)
	// Workers is how many keys are reconciled at once (default 1).
	Workers int

	// Synced are the informers Run waits for before anything starts.
	Synced []cache.InformerSynced
	// Ready, when set, runs once the caches have synced and before the
	// workers start (to rebuild state from the caches, say); an error
	// ends Run with it.
	Ready func(ctx context.Context) error
	// Also run beside the workers, each in its own goroutine, until ctx
	// ends: another queue's workers (that Loop's Work) or a periodic scan.
	// Each must return once ctx ends; Run waits for them. Run may return
	// before starting them, so what they hold (another queue) is the
	// controller's to shut down.
	Also []func(ctx context.Context)

	// Logger logs the start and the keys that failed (default
	// slog.Default()).
	Logger *slog.Logger
	// KeyAttr is the log attribute that holds a key (default "key").
	KeyAttr string
	// Quiet picks the errors that are only a reason to look again, logged
	// at debug rather than warn level: apierrors.IsConflict, when the
	// cache was behind a write (often the controller's own).
	Quiet func(error) bool
}

// NewQueue is a work queue with the controllers' usual rate limit (per
// key back-off from 5ms to 1000s, 10 adds a second overall) and delays
// measured on clk (nil: the real clock).
func NewQueue[K comparable](name string, clk clock.WithTicker) workqueue.TypedRateLimitingInterface[K] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[K](),
		workqueue.TypedRateLimitingQueueConfig[K]{Name: name, Clock: clk})
}

// Run waits for the caches, runs Ready, then
// runs the workers and Also until ctx ends. It returns ctx's error when
// ctx ends before the caches have synced.
func (l *Loop[K]) Run(ctx context.Context) error {
	defer l.Queue.ShutDown()
	if l.Reconcile == nil && l.ReconcileAfter == nil {
		return errors.New("loop: no Reconcile")
	}
	if !cache.WaitForCacheSync(ctx.Done(), l.Synced...) {
		return ctx.Err()
	}
	if l.Ready != nil {
		if err := l.Ready(ctx); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	l.logger().Info("started", "workers", l.workers())
	var wg sync.WaitGroup
	for _, f := range l.Also {
		wg.Go(func() { f(ctx) })
	}
	l.Work(ctx)
	wg.Wait()
	return nil
}

// Work runs only the workers, until ctx ends: for a queue a controller
// drains beside its main Loop (see Also). The workers stop once the
// caller shuts the queue down.
func (l *Loop[K]) Work(ctx context.Context) {
	for range l.workers() {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for l.processNext(ctx) {
			}
		}, time.Second)
	}
	<-ctx.Done()
}

// processNext reconciles the next key; false means the queue shut down.
func (l *Loop[K]) processNext(ctx context.Context) bool {
	key, quit := l.Queue.Get()
	if quit {
		return false
	}
	defer l.Queue.Done(key)
	var after time.Duration
	var err error
	if l.ReconcileAfter != nil {
		after, err = l.ReconcileAfter(ctx, key)
	} else {
		err = l.Reconcile(ctx, key)
	}
	switch {
	case err != nil:
		if l.Quiet != nil && l.Quiet(err) {
			l.logger().Debug("sync retrying", l.keyAttr(), key, "err", err)
		} else {
			l.logger().Warn("sync failed", l.keyAttr(), key, "err", err)
		}
		l.Queue.AddRateLimited(key)
	case after > 0:
		l.Queue.Forget(key)
		l.Queue.AddAfter(key, after)
	default:
		l.Queue.Forget(key)
	}
	return true
}

func (l *Loop[K]) workers() int {
	if l.Workers > 0 {
		return l.Workers
	}
	return 1
}

func (l *Loop[K]) logger() *slog.Logger {
	if l.Logger != nil {
		return l.Logger
	}
	return slog.Default()
}

func (l *Loop[K]) keyAttr() string {
	if l.KeyAttr != "" {
		return l.KeyAttr
	}
	return "key"
}
