package cronjob

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/controller/controllerref"
	"github.com/minik8s/minik8s/pkg/controller/loop"
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
	c.Workers = cmp.Or(c.Workers, DefaultWorkers)
	if c.Workers < 0 {
		return fmt.Errorf("cronjob controller: workers %d: want at least 1", c.Workers)
	}
	c.Clock = cmp.Or[clock.WithTicker](c.Clock, clock.RealClock{})
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return nil
}

var cronJobKind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// Controller creates the Jobs of CronJobs on schedule.
type Controller struct {
	cfg      Config
	client   kubernetes.Interface
	cronJobs batchlisters.CronJobLister
	jobs     batchlisters.JobLister
	queue    workqueue.TypedRateLimitingInterface[string]
	loop     *loop.Loop[string]
	clock    clock.WithTicker
	recorder record.EventRecorder
	log      *slog.Logger
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
		queue:    loop.NewQueue[string]("cronjob", cfg.Clock),
		clock:    cfg.Clock,
		recorder: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "cronjob-controller"}),
		log:      cfg.Logger.With("controller", "cronjob"),
	}
	c.loop = &loop.Loop[string]{
		Queue: c.queue, ReconcileAfter: c.Reconcile, Workers: cfg.Workers,
		Synced:      []cache.InformerSynced{cjInf.Informer().HasSynced, jobInf.Informer().HasSynced},
		Broadcaster: broadcaster, Events: client.CoreV1().Events(""),
		Logger: c.log, KeyAttr: "cronjob",
		Quiet: func(err error) bool { return apierrors.IsConflict(err) || errors.Is(err, errStaleCache) },
	}
	// A deleted CronJob leaves nothing to do: its Jobs go with it.
	cjHandler := loop.KeyHandler(c.queue)
	cjHandler.DeleteFunc = nil
	if _, err := cjInf.Informer().AddEventHandler(cjHandler); err != nil {
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
	job, ok := loop.As[*batchv1.Job](obj)
	if !ok {
		return
	}
	if cj := controllerref.Resolve(metav1.GetControllerOf(job), cronJobKind.Kind, c.cronJobs.CronJobs(job.Namespace).Get); cj != nil {
		c.queue.Add(job.Namespace + "/" + cj.Name)
	}
}

// Start runs the workers until ctx ends.
func (c *Controller) Start(ctx context.Context) error { return c.loop.Run(ctx) }
