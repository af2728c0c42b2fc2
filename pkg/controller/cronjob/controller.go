package cronjob

import (
	"errors"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/controller/controllerref"
	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// DefaultWorkers is kube-controller-manager's --concurrent-cron-job-syncs.
const DefaultWorkers = 5

// Config configures the controller; the rest comes from the kit.Context
// (its Clock says when schedules are due and drives the queue's delays,
// so a fake clock moves the controller through time).
type Config struct {
	// Workers is how many CronJobs are synced at once (default 5).
	Workers int
}

var cronJobKind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// Controller creates the Jobs of CronJobs on schedule.
type Controller struct {
	kit.Base
	cronJobs batchlisters.CronJobLister
	jobs     batchlisters.JobLister
}

// New validates cfg and wires the controller to kc's CronJob and Job
// informers. Nothing runs until Start (kit.Run starts the informers).
func New(kc *kit.Context, cfg Config) (*Controller, error) {
	workers, err := kit.Workers("cronjob controller", cfg.Workers, DefaultWorkers)
	if err != nil {
		return nil, err
	}
	cjInf, jobInf := kc.Factory.Batch().V1().CronJobs(), kc.Factory.Batch().V1().Jobs()
	b := kc.NewBase("cronjob", "cronjob", workers, "cronjob-controller")
	l := b.Loop
	c := &Controller{
		cronJobs: cjInf.Lister(), jobs: jobInf.Lister(),
		Base: b,
	}
	l.ReconcileAfter = c.Reconcile
	l.Quiet = func(err error) bool { return apierrors.IsConflict(err) || errors.Is(err, errStaleCache) }
	// A deleted CronJob leaves nothing to do: its Jobs go with it.
	cjHandler := loop.KeyHandler(c.Queue)
	cjHandler.DeleteFunc = nil
	return c, errors.Join(
		l.Watch(cjInf.Informer(), cjHandler),
		l.Watch(jobInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.enqueueOwner,
			UpdateFunc: func(oldObj, curObj any) {
				c.enqueueOwner(curObj)
				if old, cur := oldObj.(*batchv1.Job), curObj.(*batchv1.Job); !sameController(old, cur) {
					c.enqueueOwner(old)
				}
			},
			DeleteFunc: c.enqueueOwner,
		}))
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
		c.Queue.Add(job.Namespace + "/" + cj.Name)
	}
}
