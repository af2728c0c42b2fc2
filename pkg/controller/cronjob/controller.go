package cronjob

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// DefaultWorkers is kube-controller-manager's --concurrent-cron-job-syncs.
const DefaultWorkers = 5

// Config configures the controller.
type Config struct {
	// Workers is how many CronJobs are synced at once (default 5).
	Workers int
	// Clock says when schedules are due and drives the queue's delays,
	// so a fake clock moves the controller through time (default the
	// real clock).
	Clock  clock.WithTicker
	Logger *slog.Logger
}

func (c *Config) complete() error {
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Workers < 0 {
		return fmt.Errorf("cronjob controller: workers %d: want at least 1", c.Workers)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

var cronJobKind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// Controller creates the Jobs of CronJobs on schedule.
type Controller struct {
	cfg         Config
	client      kubernetes.Interface
	cronJobs    batchlisters.CronJobLister
	jobs        batchlisters.JobLister
	synced      []cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	clock       clock.WithTicker
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	log         *slog.Logger
}

// New validates cfg and wires the controller to factory's CronJob and Job
// informers. Nothing runs until Start (the caller starts factory).
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, cfg Config) (*Controller, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	cjInf, jobInf := factory.Batch().V1().CronJobs(), factory.Batch().V1().Jobs()
	broadcaster := record.NewBroadcaster()
	c := &Controller{
		cfg: cfg, client: client,
		cronJobs: cjInf.Lister(), jobs: jobInf.Lister(),
		synced: []cache.InformerSynced{cjInf.Informer().HasSynced, jobInf.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "cronjob", Clock: cfg.Clock}),
		clock:       cfg.Clock,
		broadcaster: broadcaster,
		recorder:    broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "cronjob-controller"}),
		log:         cfg.Logger.With("controller", "cronjob"),
	}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := cjInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return nil, fmt.Errorf("cronjob controller: cronjob handler: %w", err)
	}
	if _, err := jobInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueOwner,
		UpdateFunc: func(oldObj, curObj any) {
			c.enqueueOwner(curObj)
			if old, cur := oldObj.(*batchv1.Job), curObj.(*batchv1.Job); !sameController(old, cur) {
				c.enqueueOwner(old)
			}
		},
		DeleteFunc: c.enqueueOwner,
	}); err != nil {
		return nil, fmt.Errorf("cronjob controller: job handler: %w", err)
	}
	return c, nil
}

func sameController(a, b *batchv1.Job) bool {
	ra, rb := metav1.GetControllerOf(a), metav1.GetControllerOf(b)
	if ra == nil || rb == nil {
		return ra == rb
	}
	return ra.UID == rb.UID
}

// enqueueOwner enqueues the CronJob that controls a Job.
func (c *Controller) enqueueOwner(obj any) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		tomb, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			return
		}
		if job, ok = tomb.Obj.(*batchv1.Job); !ok {
			return
		}
	}
	ref := metav1.GetControllerOf(job)
	if ref == nil || ref.Kind != cronJobKind.Kind {
		return
	}
	cj, err := c.cronJobs.CronJobs(job.Namespace).Get(ref.Name)
	if err != nil || cj.UID != ref.UID {
		return
	}
	c.queue.Add(job.Namespace + "/" + cj.Name)
}

// Start runs the workers until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	defer c.queue.ShutDown()
	c.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.client.CoreV1().Events("")})
	defer c.broadcaster.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return ctx.Err()
	}
	c.log.Info("starting", "workers", c.cfg.Workers)
	for range c.cfg.Workers {
		go wait.UntilWithContext(ctx, c.work, time.Second)
	}
	<-ctx.Done()
	return nil
}

func (c *Controller) work(ctx context.Context) {
	for {
		key, quit := c.queue.Get()
		if quit {
			return
		}
		requeue, err := c.Reconcile(ctx, key)
		switch {
		case err != nil:
			if apierrors.IsConflict(err) || errors.Is(err, errStaleCache) {
				c.log.Debug("retrying", "cronjob", key, "err", err)
			} else {
				c.log.Warn("sync failed", "cronjob", key, "err", err)
			}
			c.queue.AddRateLimited(key)
		case requeue > 0:
			c.queue.Forget(key)
			c.queue.AddAfter(key, requeue)
		default:
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}
