package job

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/controller/controllerref"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// DefaultWorkers is kube-controller-manager's --concurrent-job-syncs.
const DefaultWorkers = 5

// Config configures the controller.
type Config struct {
	// Workers is how many Jobs are synced at once (default 5).
	Workers int
	// Clock is the time source for start and completion times, deadlines
	// and back-off, and the work queue's delays (default the real clock).
	Clock clock.WithTicker
	// BackoffBase and BackoffMax bound the delay before a failed Pod is
	// replaced: BackoffBase after the first failure, doubled after each
	// further one, at most BackoffMax (defaults 10s and 6m).
	BackoffBase, BackoffMax time.Duration
	Logger                  *slog.Logger
}

func (c *Config) complete() error {
	c.Workers = cmp.Or(c.Workers, DefaultWorkers)
	if c.Workers < 0 {
		return fmt.Errorf("job controller: workers %d: want at least 1", c.Workers)
	}
	c.Clock = cmp.Or[clock.WithTicker](c.Clock, clock.RealClock{})
	c.BackoffBase = cmp.Or(c.BackoffBase, DefaultBackoffBase)
	c.BackoffMax = cmp.Or(c.BackoffMax, DefaultBackoffMax)
	if c.BackoffBase < 0 || c.BackoffMax < c.BackoffBase {
		return fmt.Errorf("job controller: back-off %v up to %v: want 0 < base <= max", c.BackoffBase, c.BackoffMax)
	}
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return nil
}

// Controller runs the Pods of Jobs and keeps their status.
type Controller struct {
	cfg        Config
	client     kubernetes.Interface
	jobs       batchlisters.JobLister
	pods       corelisters.PodLister
	queue      workqueue.TypedRateLimitingInterface[string]
	orphans    workqueue.TypedRateLimitingInterface[string] // Pod keys
	loop       *loop.Loop[string]
	expect     *expectations
	finalizers *finalizerExpectations
	backoff    *backoffStore
	clock      clock.WithTicker
	recorder   record.EventRecorder
	log        *slog.Logger
}

// New validates cfg and wires the controller to factory's Job and Pod
// informers. Nothing runs until Start (the caller starts factory).
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, cfg Config) (*Controller, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	jobInf, podInf := factory.Batch().V1().Jobs(), factory.Core().V1().Pods()
	broadcaster := record.NewBroadcaster()
	c := &Controller{
		cfg: cfg, client: client,
		jobs: jobInf.Lister(), pods: podInf.Lister(),
		queue:      loop.NewQueue[string]("job", cfg.Clock),
		orphans:    loop.NewQueue[string]("job_orphan_pod", cfg.Clock),
		expect:     newExpectations(cfg.Clock),
		finalizers: newFinalizerExpectations(),
		backoff:    newBackoffStore(),
		clock:      cfg.Clock,
		recorder:   broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "job-controller"}),
		log:        cfg.Logger.With("controller", "job"),
	}
	// Orphan pods lose their tracking finalizer one at a time.
	orphans := &loop.Loop[string]{
		Queue: c.orphans, Reconcile: c.releaseOrphan,
		Logger: c.log.With("queue", "job_orphan_pod"), KeyAttr: "pod",
	}
	c.loop = &loop.Loop[string]{
		Queue: c.queue, Reconcile: c.Reconcile, Workers: cfg.Workers,
		Synced:      []cache.InformerSynced{jobInf.Informer().HasSynced, podInf.Informer().HasSynced},
		Broadcaster: broadcaster, Events: client.CoreV1().Events(""),
		Also:   []func(context.Context){orphans.Work},
		Logger: c.log, KeyAttr: "job", Quiet: apierrors.IsConflict,
	}
	if _, err := jobInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueJob,
		UpdateFunc: func(_, cur any) { c.enqueueJob(cur) },
		DeleteFunc: c.jobDeleted,
	}); err != nil {
		return nil, fmt.Errorf("job controller: job handler: %w", err)
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podAdded,
		UpdateFunc: c.podUpdated,
		DeleteFunc: c.podDeleted,
	}); err != nil {
		return nil, fmt.Errorf("job controller: pod handler: %w", err)
	}
	return c, nil
}

// Start runs the workers until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	defer c.orphans.ShutDown()
	return c.loop.Run(ctx)
}

func (c *Controller) enqueueJob(obj any) { loop.Enqueue(c.queue, obj) }

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
		c.expect.observe(jobKey(job), 1, 0)
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
	c.expect.observe(key, 0, 1)
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
