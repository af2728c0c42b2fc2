package certificates

import (
	"context"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Config is what both controllers share.
type Config struct {
	Logger *slog.Logger
	// Now is the clock for condition timestamps; nil means time.Now.
	Now func() time.Time
}

func (c *Config) complete() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// loop is the informer, queue and workers around a Reconcile.
type loop struct {
	client    kubernetes.Interface
	lister    certlisters.CertificateSigningRequestLister
	synced    cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	log       *slog.Logger
	now       func() time.Time
	reconcile func(ctx context.Context, name string) error
}

func newLoop(name string, client kubernetes.Interface, factory informers.SharedInformerFactory, cfg Config) (*loop, error) {
	cfg.complete()
	inf := factory.Certificates().V1().CertificateSigningRequests()
	l := &loop{
		client: client, lister: inf.Lister(), synced: inf.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
		log: cfg.Logger.With("controller", name),
		now: cfg.Now,
	}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			l.queue.Add(key)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return nil, err
	}
	return l, nil
}

// start runs the workers until ctx ends.
func (l *loop) start(ctx context.Context) error {
	defer l.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), l.synced) {
		return ctx.Err()
	}
	for range 2 {
		go wait.UntilWithContext(ctx, l.work, time.Second)
	}
	<-ctx.Done()
	return nil
}

func (l *loop) work(ctx context.Context) {
	for {
		key, quit := l.queue.Get()
		if quit {
			return
		}
		if err := l.reconcile(ctx, key); err != nil {
			l.log.Warn("reconcile failed", "csr", key, "err", err)
			l.queue.AddRateLimited(key)
		} else {
			l.queue.Forget(key)
		}
		l.queue.Done(key)
	}
}
