package job

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/minik8s/minik8s/pkg/controller/controllerref"
	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// DefaultWorkers is kube-controller-manager's --concurrent-job-syncs.
const DefaultWorkers = 5

// Config configures the controller; the rest comes from the kit.Context
// (its Clock is the time source for start and completion times,
// deadlines and back-off, and the work queues' delays).
type Config struct {
	// Workers is how many Jobs are synced at once (default 5).
	Workers int
	// BackoffBase and BackoffMax bound the delay before a failed Pod is
	// replaced: BackoffBase after the first failure, doubled after each
	// further one, at most BackoffMax (defaults 10s and 6m).
	BackoffBase, BackoffMax time.Duration
}

func (c *Config) complete() (err error) {
	if c.Workers, err = kit.Workers("job controller", c.Workers, DefaultWorkers); err != nil {
		return err
	}
	c.BackoffBase = cmp.Or(c.BackoffBase, DefaultBackoffBase)
	c.BackoffMax = cmp.Or(c.BackoffMax, DefaultBackoffMax)
	if c.BackoffBase < 0 || c.BackoffMax < c.BackoffBase {
		return fmt.Errorf("job controller: back-off %v up to %v: want 0 < base <= max", c.BackoffBase, c.BackoffMax)
	}
	return nil
}

// Controller runs the Pods of Jobs and keeps their status.
type Controller struct {
	kit.Base
	cfg        Config
	jobs       batchlisters.JobLister
	pods       corelisters.PodLister
	orphans    workqueue.TypedRateLimitingInterface[string] // Pod keys
	expect     *kit.Expectations
	finalizers *finalizerExpectations
	backoff    *backoffStore
}

// New validates cfg and wires the controller to kc's Job and Pod
// informers. Nothing runs until Start (kit.Run starts the informers).
func New(kc *kit.Context, cfg Config) (*Controller, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	jobInf, podInf := kc.Factory.Batch().V1().Jobs(), kc.Factory.Core().V1().Pods()
	b := kc.NewBase("job", "job", cfg.Workers, "job-controller")
	l := b.Loop
	c := &Controller{
		cfg: cfg, jobs: jobInf.Lister(), pods: podInf.Lister(),
		Base:       b,
		orphans:    loop.NewQueue[string]("job_orphan_pod", kc.Clock),
		expect:     kit.NewExpectations(kc.Clock),
		finalizers: newFinalizerExpectations(),
		backoff:    newBackoffStore(),
	}
	// Orphan pods lose their tracking finalizer one at a time.
	orphans := &loop.Loop[string]{
		Queue: c.orphans, Reconcile: c.releaseOrphan,
		Logger: c.Log.With("queue", "job_orphan_pod"), KeyAttr: "pod",
	}
	l.Reconcile = c.Reconcile
	l.Also = []func(context.Context){orphans.Work}
	jobHandler := loop.KeyHandler(c.Queue)
	jobHandler.DeleteFunc = c.jobDeleted
	return c, errors.Join(
		l.Watch(jobInf.Informer(), jobHandler),
		l.Watch(podInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.podAdded,
			UpdateFunc: c.podUpdated,
			DeleteFunc: c.podDeleted,
		}))
}

// Start runs the workers until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	defer c.orphans.ShutDown()
	return c.Loop.Run(ctx)
}

func (c *Controller) enqueueJob(obj any) { loop.Enqueue(c.Queue, obj) }

// jobDeleted forgets the Job and lets go of its Pods' finalizers.
func (c *Controller) jobDeleted(obj any) {
	job, ok := loop.As[*batchv1.Job](obj)
	if !ok {
		return
	}
	c.enqueueJob(job)
	pods, err := c.pods.Pods(job.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range pods {
		if metav1.IsControlledBy(p, job) && hasTrackingFinalizer(p) {
			c.enqueueOrphan(p)
		}
	}
}

func (c *Controller) enqueueOrphan(p *corev1.Pod) {
	if key, err := cache.MetaNamespaceKeyFunc(p); err == nil {
		c.orphans.Add(key)
	}
}

// ownerJob is the Job that the ownerReference names, if the cache has
// that very Job.
func (c *Controller) ownerJob(ns string, ref *metav1.OwnerReference) *batchv1.Job {
	if ref != nil && ref.APIVersion != jobKind.GroupVersion().String() {
		return nil
	}
	return controllerref.Resolve(ref, jobKind.Kind, c.jobs.Jobs(ns).Get)
}

func jobKey(job *batchv1.Job) string { return job.Namespace + "/" + job.Name }

func (c *Controller) podAdded(obj any) {
	p := obj.(*corev1.Pod)
	if p.DeletionTimestamp != nil {
		// A restarted controller may first see a Pod already going away.
		c.podGone(p, false)
		return
	}
	if ref := metav1.GetControllerOf(p); ref != nil {
		job := c.ownerJob(p.Namespace, ref)
		if job == nil {
			if hasTrackingFinalizer(p) {
				c.enqueueOrphan(p)
			}
			return
		}
		c.expect.CreationObserved(jobKey(job))
		c.enqueueJob(job)
		return
	}
	if hasTrackingFinalizer(p) {
		c.enqueueOrphan(p)
	}
	c.enqueueSelecting(p)
}

func (c *Controller) podUpdated(oldObj, curObj any) {
	old, cur := oldObj.(*corev1.Pod), curObj.(*corev1.Pod)
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	if cur.DeletionTimestamp != nil {
		c.podGone(cur, false)
		return
	}
	curRef, oldRef := metav1.GetControllerOf(cur), metav1.GetControllerOf(old)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if job := c.ownerJob(old.Namespace, oldRef); job != nil {
			if !hasTrackingFinalizer(cur) {
				c.finalizers.observe(jobKey(job), string(cur.UID))
			}
			c.enqueueJob(job)
		}
	}
	if curRef != nil {
		job := c.ownerJob(cur.Namespace, curRef)
		if job == nil {
			if hasTrackingFinalizer(cur) {
				c.enqueueOrphan(cur)
			}
			return
		}
		if !hasTrackingFinalizer(cur) {
			c.finalizers.observe(jobKey(job), string(cur.UID))
		}
		c.enqueueJob(job)
		return
	}
	if hasTrackingFinalizer(cur) {
		c.enqueueOrphan(cur)
	}
	if refChanged || !reflect.DeepEqual(cur.Labels, old.Labels) {
		c.enqueueSelecting(cur)
	}
}

func (c *Controller) podDeleted(obj any) {
	if p, ok := loop.As[*corev1.Pod](obj); ok {
		c.podGone(p, true)
	}
}

// podGone handles a Pod being deleted (final: its object is gone).
func (c *Controller) podGone(p *corev1.Pod, final bool) {
	ref := metav1.GetControllerOf(p)
	job := c.ownerJob(p.Namespace, ref)
	if job == nil {
		if hasTrackingFinalizer(p) && !final {
			c.enqueueOrphan(p)
		}
		return
	}
	key := jobKey(job)
	if final || !hasTrackingFinalizer(p) {
		c.finalizers.observe(key, string(p.UID))
	}
	c.expect.DeletionObserved(key, podKey(p))
	c.enqueueJob(job)
}

// enqueueSelecting enqueues the Jobs whose selector matches an orphan
// Pod, so that one of them may adopt it.
func (c *Controller) enqueueSelecting(p *corev1.Pod) {
	jobs, err := c.jobs.Jobs(p.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, job := range jobs {
		if sel, err := selectorOf(job); err == nil && sel.Matches(labels.Set(p.Labels)) {
			c.enqueueJob(job)
		}
	}
}

// releaseOrphan removes the tracking finalizer of a Pod whose Job is gone
// or finished, or that no Job controls.
func (c *Controller) releaseOrphan(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	p, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !hasTrackingFinalizer(p) {
		return nil
	}
	if job := c.ownerJob(ns, metav1.GetControllerOf(p)); job != nil && !finished(job) {
		return nil // the Job counts it
	}
	return c.removeFinalizer(ctx, p)
}
