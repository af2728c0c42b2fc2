package job

import (
	"slices"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/controller/kit"
)

// Back-off between Pod re-creations after failures, as Kubernetes
// documents it: 10s, doubled for every further consecutive failure,
// capped at six minutes.
const (
	DefaultBackoffBase = 10 * time.Second
	DefaultBackoffMax  = 6 * time.Minute
)

// Condition reasons and messages, as Kubernetes' Job controller writes them.
const (
	msgBackoffLimit     = "Job has reached the specified backoff limit"
	msgDeadline         = "Job was active longer than specified deadline"
	msgCompletions      = "Reached expected number of succeeded pods"
	reasonJobSuspended  = "JobSuspended"
	reasonJobResumed    = "JobResumed"
	reasonUnknownMode   = "UnknownCompletionMode"
	controllerName      = "kubernetes.io/job-controller"
	defaultBackoffLimit = 6
)

// backoffRecord is what the back-off before the next Pod creation depends
// on: the failures since the last success and when the last one was.
type backoffRecord struct {
	failures    int32
	lastFailure time.Time
}

// next is r after the newly finished Pods: a success clears the record,
// except for failures that finished after the last success.
func (r backoffRecord) next(succeeded, failed []*corev1.Pod) backoffRecord {
	if len(failed) == 0 && len(succeeded) == 0 {
		return r
	}
	var lastSuccess time.Time
	if len(succeeded) > 0 {
		r = backoffRecord{}
		for _, p := range succeeded {
			if t := finishedAt(p); t.After(lastSuccess) {
				lastSuccess = t
			}
		}
	}
	for _, p := range failed {
		t := finishedAt(p)
		if len(succeeded) > 0 && !t.After(lastSuccess) {
			continue
		}
		r.failures++
		if t.After(r.lastFailure) {
			r.lastFailure = t
		}
	}
	return r
}

// backoffDelay is the wait after the n-th consecutive failure.
func backoffDelay(n int32, base, maxDelay time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	d := base
	for i := int32(1); i < n; i++ {
		d *= 2
		if d >= maxDelay {
			return maxDelay
		}
	}
	return min(d, maxDelay)
}

// remaining is how long Pod creation must still wait at now.
func (r backoffRecord) remaining(now time.Time, base, maxDelay time.Duration) time.Duration {
	if r.failures == 0 {
		return 0
	}
	left := backoffDelay(r.failures, base, maxDelay) - now.Sub(r.lastFailure)
	return max(left, 0)
}

// backoffStore holds the back-off record of every Job, by key. It lives
// in memory, like Kubernetes': a restarted controller starts afresh.
type backoffStore struct {
	mu sync.Mutex
	m  map[string]backoffRecord
}

func newBackoffStore() *backoffStore { return &backoffStore{m: map[string]backoffRecord{}} }

func (s *backoffStore) get(key string) backoffRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key]
}

func (s *backoffStore) set(key string, r backoffRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.failures == 0 {
		delete(s.m, key)
		return
	}
	s.m[key] = r
}

func (s *backoffStore) remove(key string) { s.set(key, backoffRecord{}) }

// finishedAt estimates when a Pod finished: its last container exit, else
// when it stopped being ready, else when it was deleted, else its
// creation.
func finishedAt(p *corev1.Pod) time.Time {
	var last time.Time
	all := len(p.Status.ContainerStatuses) > 0
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil || t.FinishedAt.IsZero() {
			all = false
			break
		}
		if t.FinishedAt.After(last) {
			last = t.FinishedAt.Time
		}
	}
	if all {
		return last
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	if p.DeletionTimestamp != nil {
		grace := int64(0)
		if p.DeletionGracePeriodSeconds != nil {
			grace = *p.DeletionGracePeriodSeconds
		}
		return p.DeletionTimestamp.Add(-time.Duration(grace) * time.Second)
	}
	return p.CreationTimestamp.Time
}

func hasTrackingFinalizer(p *corev1.Pod) bool {
	return slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer)
}

// onlyReplaceFailed: the Job waits for a deleted Pod to finish before
// replacing it, and a deleted Pod does not count as failed.
func onlyReplaceFailed(job *batchv1.Job) bool {
	if p := job.Spec.PodReplacementPolicy; p != nil && *p == batchv1.Failed {
		return true
	}
	return job.Spec.PodFailurePolicy != nil
}

// failed: the Pod counts as a failure of the Job. A Pod deleted before it
// finished counts too (it will never reach a phase), unless the Job only
// replaces failed Pods.
func failed(p *corev1.Pod, job *batchv1.Job) bool {
	if p.Status.Phase == corev1.PodFailed {
		return true
	}
	if onlyReplaceFailed(job) {
		return false
	}
	return p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded
}

func indexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
}

func suspended(job *batchv1.Job) bool { return job.Spec.Suspend != nil && *job.Spec.Suspend }

func backoffLimit(job *batchv1.Job) int32 {
	if job.Spec.BackoffLimit == nil {
		return defaultBackoffLimit
	}
	return *job.Spec.BackoffLimit
}

func parallelism(job *batchv1.Job) int32 {
	if job.Spec.Parallelism == nil {
		return 1
	}
	return *job.Spec.Parallelism
}

// wantActive is how many Pods the Job should have running. With
// completions, no more than the completions still missing; without (a
// work queue), parallelism until the first success, then no new ones.
func wantActive(job *batchv1.Job, active, succeeded int32) int32 {
	if job.Spec.Completions == nil {
		if succeeded > 0 {
			return active
		}
		return parallelism(job)
	}
	return max(min(*job.Spec.Completions-succeeded, parallelism(job)), 0)
}

// completed: the Job has all the successes it needs and nothing running.
func completed(job *batchv1.Job, active, succeeded int32) bool {
	if active > 0 {
		return false
	}
	if job.Spec.Completions == nil {
		return succeeded > 0
	}
	return succeeded >= *job.Spec.Completions
}

// pastBackoffLimitOnFailure: with restartPolicy OnFailure the kubelet
// restarts failing containers in place, so their restarts count against
// backoffLimit instead.
func pastBackoffLimitOnFailure(job *batchv1.Job, pods []*corev1.Pod) bool {
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, cs := range p.Status.InitContainerStatuses {
			restarts += cs.RestartCount
		}
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
	}
	if limit := backoffLimit(job); limit > 0 {
		return restarts >= limit
	}
	return restarts > 0
}

// deadlineLeft is how long the Job may still run before
// activeDeadlineSeconds is up; ok is false when no deadline applies.
func deadlineLeft(job *batchv1.Job, now time.Time) (left time.Duration, ok bool) {
	if job.Spec.ActiveDeadlineSeconds == nil || job.Status.StartTime == nil || suspended(job) {
		return 0, false
	}
	allowed := time.Duration(*job.Spec.ActiveDeadlineSeconds) * time.Second
	return allowed - now.Sub(job.Status.StartTime.Time), true
}

// finished: the Job has its terminal condition.
func finished(job *batchv1.Job) bool {
	return kit.IsConditionTrue(job.Status.Conditions, batchv1.JobComplete) || kit.IsConditionTrue(job.Status.Conditions, batchv1.JobFailed)
}

func newCondition(t batchv1.JobConditionType, status corev1.ConditionStatus, reason, msg string, now time.Time) batchv1.JobCondition {
	return batchv1.JobCondition{Type: t, Status: status, Reason: reason, Message: msg,
		LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
}

// setCondition adds or updates the condition of type t; it never adds a
// False condition that was not there. It reports whether anything
// changed.
func setCondition(conds []batchv1.JobCondition, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, msg string, now time.Time) ([]batchv1.JobCondition, bool) {
	if c := kit.GetCondition(conds, t); c != nil {
		if c.Status == status && c.Reason == reason && c.Message == msg {
			return conds, false
		}
		*c = newCondition(t, status, reason, msg, now)
		return conds, true
	}
	if status == corev1.ConditionFalse {
		return conds, false
	}
	return append(conds, newCondition(t, status, reason, msg, now)), true
}
