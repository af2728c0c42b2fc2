package ttlafterfinished

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// DefaultWorkers is kube-controller-manager's --concurrent-ttl-after-finished-syncs.
const DefaultWorkers = 5

// Config configures the controller; the rest comes from the kit.Context
// (its Clock tells when a Job expires and drives the queue's delays).
type Config struct {
	// Workers is how many Jobs are looked at once (default 5).
	Workers int
}

// Controller deletes finished Jobs whose TTL is up.
type Controller struct {
	kit.Base
	jobs batchlisters.JobLister
}

// New wires the controller to kc's Job informer. Nothing runs until
// Start (kit.Run starts the informers).
func New(kc *kit.Context, cfg Config) (*Controller, error) {
	workers, err := kit.Workers("ttlafterfinished", cfg.Workers, DefaultWorkers)
	if err != nil {
		return nil, err
	}
	inf := kc.Factory.Batch().V1().Jobs()
	b := kc.NewBase("ttlafterfinished", "job", workers, "")
	l := b.Loop
	c := &Controller{Base: b, jobs: inf.Lister()}
	l.ReconcileAfter = c.Reconcile
	enqueue := func(obj any) {
		if job, ok := obj.(*batchv1.Job); ok && needsCleanup(job) {
			loop.Enqueue(c.Queue, job)
		}
	}
	return c, l.Watch(inf.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
}

// Reconcile deletes the Job if its TTL is up, or says how long until it
// is.
func (c *Controller) Reconcile(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	job, err := c.jobs.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if left, expired := c.timeLeft(job); !expired {
		return left, nil
	}
	// The cache may be behind a TTL change: decide on the fresh Job.
	fresh, err := c.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if left, expired := c.timeLeft(fresh); !expired {
		return left, nil
	}
	policy := metav1.DeletePropagationBackground
	err = c.Client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: &policy,
		Preconditions:     &metav1.Preconditions{UID: &fresh.UID},
	})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("delete job %s: %w", key, err)
	}
	c.Log.Info("deleted finished job whose TTL is up", "job", key, "ttlSeconds", *fresh.Spec.TTLSecondsAfterFinished)
	return 0, nil
}

// timeLeft is how long until the Job expires; expired is false too for a
// Job that has no TTL or has not finished (left 0: nothing to wait for).
func (c *Controller) timeLeft(job *batchv1.Job) (left time.Duration, expired bool) {
	if !needsCleanup(job) {
		return 0, false
	}
	finishedAt, ok := finishTime(job)
	if !ok {
		return 0, false
	}
	expireAt := finishedAt.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second)
	left = expireAt.Sub(c.Clock.Now())
	if left <= 0 {
		return 0, true
	}
	return left, false
}

// needsCleanup: the Job has a TTL, finished, and is not being deleted.
func needsCleanup(job *batchv1.Job) bool {
	if job.Spec.TTLSecondsAfterFinished == nil || job.DeletionTimestamp != nil {
		return false
	}
	_, ok := finishTime(job)
	return ok
}

// finishTime is when the Job got its Complete or Failed condition.
func finishTime(job *batchv1.Job) (time.Time, bool) {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			if c.LastTransitionTime.IsZero() {
				if job.Status.CompletionTime != nil {
					return job.Status.CompletionTime.Time, true
				}
				return time.Time{}, false
			}
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}
