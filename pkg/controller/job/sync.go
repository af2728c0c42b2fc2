package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/podutil"
)

// maxUncounted bounds status.uncountedTerminatedPods (about 20 KB of
// UIDs), as in Kubernetes; the rest waits for the next sync.
const maxUncounted = 500

// state is what one sync of a Job works from, and on.
type state struct {
	key    string
	job    *batchv1.Job // a copy: its status is what gets written
	pods   []*corev1.Pod
	active []*corev1.Pod
	now    time.Time

	ready, terminating int32
	succeeded, failed  int32

	uncountedSucceeded, uncountedFailed sets.Set[string]
	// removing are the Pods whose finalizer we removed but the cache
	// still shows: they are counted already.
	removing sets.Set[string]

	prevIndexes, indexes indexSet // Indexed Jobs: succeeded indexes
	// Jobs with backoffLimitPerIndex: the failed indexes, and each
	// pending index's latest failed Pod (it keeps its finalizer until
	// its replacement exists).
	failedIndexes indexSet
	lastFailures  map[int]*corev1.Pod
	record        backoffRecord
	// finish is the condition the Job is heading for: a new interim one
	// (FailureTarget, SuccessCriteriaMet), or the terminal one once the
	// interim one is written.
	finish *batchv1.JobCondition
}

// Reconcile moves the Job with the given key one step toward its spec:
// it counts finished Pods, creates or deletes Pods, and writes the status.
func (c *Controller) Reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	shared, err := c.jobs.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.expect.Forget(key)
		c.finalizers.forget(key)
		c.backoff.remove(key)
		return nil
	}
	if err != nil {
		return err
	}
	if m := shared.Spec.ManagedBy; m != nil && *m != controllerName {
		return nil
	}
	if finished(shared) {
		c.backoff.remove(key)
		c.releaseFinished(shared)
		return nil
	}
	if m := shared.Spec.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
		c.Recorder.Event(shared, corev1.EventTypeWarning, reasonUnknownMode, "Skipped Job sync because completion mode is unknown")
		return nil
	}
	if indexed(shared) && shared.Spec.Completions == nil {
		return nil // invalid; the apiserver does not store it
	}
	sel, err := selectorOf(shared)
	if err != nil {
		c.Log.Warn("job has an unusable selector", "job", key, "err", err)
		return nil
	}

	job := shared.DeepCopy()
	if job.Status.UncountedTerminatedPods == nil {
		job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	// Look at the expectations before the cache: a Pod that shows up in
	// between is then only seen by the next sync.
	satisfied := c.expect.Satisfied(key)
	pods, err := c.podsForJob(ctx, job, sel)
	if err != nil {
		return err
	}
	s := &state{
		key: key, job: job, pods: pods, now: c.Clock.Now(),
		uncountedSucceeded: uidSet(job.Status.UncountedTerminatedPods.Succeeded),
		uncountedFailed:    uidSet(job.Status.UncountedTerminatedPods.Failed),
		removing:           c.finalizers.pending(key),
	}
	for _, p := range pods {
		switch {
		case podutil.IsActive(p):
			s.active = append(s.active, p)
			if podutil.IsReady(p) {
				s.ready++
			}
		case podutil.IsTerminating(p):
			s.terminating++
		}
	}
	newSucceeded, newFailed := s.newlyFinished()
	s.succeeded = job.Status.Succeeded + int32(len(newSucceeded)+s.uncountedSucceeded.Len())
	// Failures that spec.podFailurePolicy ignores are not counted.
	s.failed = job.Status.Failed + int32(countedFailures(job, newFailed)+s.uncountedFailed.Len())
	startTimeSet := false
	if job.Status.StartTime == nil && !suspended(job) {
		job.Status.StartTime = ptr.To(metav1.NewTime(s.now))
		startTimeSet = true
	}
	s.record = c.backoff.get(key).next(newSucceeded, newFailed)
	s.finish = c.finishCondition(s)
	if indexed(job) {
		completions := *job.Spec.Completions
		s.prevIndexes = parseIndexes(job.Status.CompletedIndexes, int(completions))
		// Every succeeded pod's index is done, whether or not its tracking
		// finalizer is still there: once the finalizer is gone the index
		// is in a status write the Job informer may not show yet, and
		// leaving it out would create that index's pod again.
		var ixs []int
		for _, p := range pods {
			if p.Status.Phase == corev1.PodSucceeded && validIndex(p, completions) {
				ixs = append(ixs, completionIndex(p))
			}
		}
		s.indexes = s.prevIndexes.with(ixs)
		s.succeeded = int32(s.indexes.total())
		c.indexedOutcome(s)
	}

	activeCount := int32(len(s.active))
	suspendChanged := false
	var manageErr error
	if s.finish != nil {
		// The Job is done: whatever still runs goes (and counts as failed
		// unless the Job succeeded).
		deletedReady, deleted, err := c.deletePods(ctx, job, key, s.active, false)
		if deleted != activeCount || !satisfied {
			// Pods may remain, or the cache may not show them all yet.
			s.finish = nil
		}
		activeCount -= deleted
		s.terminating += deleted
		s.ready -= deletedReady
		manageErr = err
	} else {
		managed := false
		if satisfied && job.DeletionTimestamp == nil {
			activeCount, manageErr = c.manage(ctx, s)
			managed = true
		}
		switch {
		case completed(job, activeCount, s.succeeded):
			s.finish = ptr.To(newCondition(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, batchv1.JobReasonCompletionsReached, msgCompletions, s.now))
		case managed:
			suspendChanged = c.updateSuspended(job, s.now)
		}
	}

	st := &job.Status
	needsFlush := suspendChanged || startTimeSet || activeCount != st.Active ||
		!ptr.Equal(&s.ready, st.Ready) || !ptr.Equal(&s.terminating, st.Terminating)
	st.Active = activeCount
	st.Ready = ptr.To(s.ready)
	st.Terminating = ptr.To(s.terminating)
	if err := c.track(ctx, s, needsFlush); err != nil {
		return fmt.Errorf("track status of job %s: %w", key, err)
	}
	return manageErr
}

// newlyFinished are the finished Pods that the status does not count yet.
func (s *state) newlyFinished() (succeeded, failedPods []*corev1.Pod) {
	for _, p := range s.pods {
		uid := string(p.UID)
		if !hasTrackingFinalizer(p) || s.removing.Has(uid) || s.uncountedSucceeded.Has(uid) || s.uncountedFailed.Has(uid) {
			continue
		}
		if indexed(s.job) && !validIndex(p, *s.job.Spec.Completions) {
			continue
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			succeeded = append(succeeded, p)
		case failed(p, s.job):
			failedPods = append(failedPods, p)
		}
	}
	return succeeded, failedPods
}

// finishCondition is the condition the Job is heading for, if any: the
// one it has already (interim conditions written in an earlier sync), or
// a failure.
func (c *Controller) finishCondition(s *state) *batchv1.JobCondition {
	job := s.job
	if cond := kit.GetCondition(job.Status.Conditions, batchv1.JobSuccessCriteriaMet); cond != nil && cond.Status == corev1.ConditionTrue {
		return cond.DeepCopy()
	}
	if cond := kit.GetCondition(job.Status.Conditions, batchv1.JobFailureTarget); cond != nil && cond.Status == corev1.ConditionTrue {
		return ptr.To(newCondition(batchv1.JobFailed, corev1.ConditionTrue, cond.Reason, cond.Message, s.now))
	}
	if msg, ok := failJobMessage(job, s.pods); ok {
		return ptr.To(newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonPodFailurePolicy, msg, s.now))
	}
	if s.failed > backoffLimit(job) || pastBackoffLimitOnFailure(job, s.pods) {
		return ptr.To(newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimit, s.now))
	}
	left, ok := deadlineLeft(job, s.now)
	if ok && left <= 0 {
		return ptr.To(newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonDeadlineExceeded, msgDeadline, s.now))
	}
	if ok {
		c.Queue.AddAfter(s.key, left)
	}
	return nil
}

// indexedOutcome adds, for Indexed Jobs, the failed indexes of
// backoffLimitPerIndex and the rules of spec.successPolicy to the
// condition the Job heads for.
func (c *Controller) indexedOutcome(s *state) {
	job := s.job
	if perIndex(job) {
		s.failedIndexes = failedIndexesOf(job, s.pods)
		if s.finish == nil {
			nFailed := s.failedIndexes.total()
			switch {
			case job.Spec.MaxFailedIndexes != nil && nFailed > int(*job.Spec.MaxFailedIndexes):
				s.finish = ptr.To(newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonMaxFailedIndexesExceeded, msgMaxFailedIndexes, s.now))
			case nFailed > 0 && nFailed+s.indexes.total() >= int(*job.Spec.Completions):
				s.finish = ptr.To(newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonFailedIndexes, msgFailedIndexes, s.now))
			}
		}
		s.lastFailures = lastFailures(job, s.pods, s.indexes, s.failedIndexes)
	}
	if s.finish == nil {
		if msg, ok := matchSuccessPolicy(job, s.indexes); ok {
			s.finish = ptr.To(newCondition(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, batchv1.JobReasonSuccessPolicy, msg, s.now))
		}
	}
}

// manage creates or deletes Pods so that as many run as the Job wants,
// and returns how many are active then. Creation waits out the back-off.
func (c *Controller) manage(ctx context.Context, s *state) (int32, error) {
	job := s.job
	n := int32(len(s.active))
	if suspended(job) {
		ready, deleted, err := c.deletePods(ctx, job, s.key, s.active, true)
		s.ready -= ready
		s.terminating += deleted
		return n - deleted, err
	}
	want := wantActive(job, n, s.succeeded)
	rm := podsToRemove(job, s.active, s.indexes, int(max(n-want, 0)))
	if len(rm) > maxPodChangesPerSync {
		rm = rm[:maxPodChangesPerSync]
	}
	if len(rm) > 0 {
		// Deleting and creating in one sync is never needed: delete first.
		ready, deleted, err := c.deletePods(ctx, job, s.key, rm, true)
		s.ready -= ready
		s.terminating += deleted
		return n - deleted, err
	}
	var stillTerminating int32
	if onlyReplaceFailed(job) {
		stillTerminating = s.terminating
	}
	diff := want - stillTerminating - n
	if diff <= 0 {
		return n, nil
	}
	if !perIndex(job) {
		if left := s.record.remaining(s.now, c.cfg.BackoffBase, c.cfg.BackoffMax); left > 0 {
			c.Queue.AddAfter(s.key, left)
			return n, nil
		}
	}
	diff = min(diff, maxPodChangesPerSync)
	var ixs []int
	if indexed(job) {
		busy := map[int]bool{}
		for _, p := range s.pods {
			if podutil.IsActive(p) || (onlyReplaceFailed(job) && podutil.IsTerminating(p)) {
				busy[completionIndex(p)] = true
			}
		}
		ixs = pendingIndexes(s.indexes.union(s.failedIndexes), busy, int(diff), int(*job.Spec.Completions))
		if perIndex(job) {
			// Each index waits out its own back-off.
			var ready []int
			var wait time.Duration
			for _, ix := range ixs {
				left := indexBackoff(s.lastFailures[ix], s.now, c.cfg.BackoffBase, c.cfg.BackoffMax)
				if left == 0 {
					ready = append(ready, ix)
				} else if wait == 0 || left < wait {
					wait = left
				}
			}
			if len(ready) == 0 && wait > 0 {
				c.Queue.AddAfter(s.key, wait)
			}
			ixs = ready
		}
		if diff = int32(len(ixs)); diff == 0 {
			return n, nil
		}
	}
	created, err := c.createPods(ctx, job, s.key, int(diff), ixs, s.lastFailures)
	return n + created, err
}

// podsToRemove picks at least n active Pods to delete. For Indexed Jobs
// it also picks every Pod without a usable index, for an index that
// succeeded already, or for an index another Pod works on.
func podsToRemove(job *batchv1.Job, pods []*corev1.Pod, done indexSet, n int) []*corev1.Pod {
	var rm []*corev1.Pod
	keep := slices.Clone(pods)
	// Least useful first: unscheduled, pending, not ready, newest.
	slices.SortStableFunc(keep, func(a, b *corev1.Pod) int { return removalOrder(a, b) })
	if indexed(job) {
		completions := *job.Spec.Completions
		// The most useful Pod of each index stays.
		seen := map[int]bool{}
		var kept []*corev1.Pod
		for i := len(keep) - 1; i >= 0; i-- {
			p := keep[i]
			ix := completionIndex(p)
			if !validIndex(p, completions) || done.has(ix) || seen[ix] {
				rm = append(rm, p)
				continue
			}
			seen[ix] = true
			kept = append(kept, p)
		}
		slices.Reverse(kept)
		keep = kept
	}
	if more := n - len(rm); more > 0 {
		rm = append(rm, keep[:min(more, len(keep))]...)
	}
	return rm
}

// removalOrder sorts Pods from the first to delete to the last.
func removalOrder(a, b *corev1.Pod) int {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		if a.Spec.NodeName == "" {
			return -1
		}
		return 1
	}
	rank := map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}
	if ra, rb := rank[a.Status.Phase], rank[b.Status.Phase]; ra != rb {
		return ra - rb
	}
	if podutil.IsReady(a) != podutil.IsReady(b) {
		if !podutil.IsReady(a) {
			return -1
		}
		return 1
	}
	// Newer first.
	return b.CreationTimestamp.Compare(a.CreationTimestamp.Time)
}

// updateSuspended sets the Suspended condition; resuming restarts the
// clock of activeDeadlineSeconds.
func (c *Controller) updateSuspended(job *batchv1.Job, now time.Time) bool {
	var changed bool
	if suspended(job) {
		job.Status.Conditions, changed = setCondition(job.Status.Conditions, batchv1.JobSuspended, corev1.ConditionTrue, reasonJobSuspended, "Job suspended", now)
		if changed {
			c.Recorder.Event(job, corev1.EventTypeNormal, "Suspended", "Job suspended")
		}
		return changed
	}
	job.Status.Conditions, changed = setCondition(job.Status.Conditions, batchv1.JobSuspended, corev1.ConditionFalse, reasonJobResumed, "Job resumed", now)
	if changed {
		c.Recorder.Event(job, corev1.EventTypeNormal, "Resumed", "Job resumed")
		job.Status.StartTime = ptr.To(metav1.NewTime(now))
	}
	return changed
}

// track counts finished Pods in the Job status without ever losing or
// doubling one:
//  1. the finished Pods still holding the tracking finalizer are written
//     into status.uncountedTerminatedPods (with a new interim condition);
//  2. their finalizers are removed;
//  3. the Pods whose finalizer is gone move from the uncounted lists into
//     status.succeeded/failed;
//  4. with nothing uncounted and nothing running, the terminal condition
//     (Complete, Failed) is set.
func (c *Controller) track(ctx context.Context, s *state, needsFlush bool) error {
	job := s.job
	isIndexed := indexed(job)
	holding := sets.New[string]()
	for _, p := range s.pods {
		if hasTrackingFinalizer(p) && !s.removing.Has(string(p.UID)) {
			holding.Insert(string(p.UID))
		}
	}
	if countReleased(&job.Status, holding) {
		needsFlush = true
	}
	uncounted := job.Status.UncountedTerminatedPods
	var release []*corev1.Pod
	var newIndexes []int
	full := false
	for _, p := range s.pods {
		uid := string(p.UID)
		if !holding.Has(uid) {
			continue // counted in an earlier sync
		}
		podFailed := failed(p, job)
		if job.DeletionTimestamp == nil && s.finish == nil && p.Status.Phase != corev1.PodSucceeded {
			if !podFailed {
				continue // still running: it keeps its finalizer
			}
			if last, ok := s.lastFailures[completionIndex(p)]; ok && last.UID == p.UID {
				continue // until its index has a new Pod
			}
		}
		release = append(release, p)
		switch {
		case p.Status.Phase == corev1.PodSucceeded && !s.uncountedFailed.Has(uid):
			if isIndexed {
				if validIndex(p, *job.Spec.Completions) && !s.prevIndexes.has(completionIndex(p)) {
					newIndexes = append(newIndexes, completionIndex(p))
					needsFlush = true
				}
			} else if !s.uncountedSucceeded.Has(uid) {
				uncounted.Succeeded = append(uncounted.Succeeded, p.UID)
				s.uncountedSucceeded.Insert(uid)
				needsFlush = true
			}
		case podFailed || (s.finish != nil && s.finish.Type != batchv1.JobSuccessCriteriaMet):
			// Once the Job failed, whatever did not succeed failed.
			// Failures that spec.podFailurePolicy ignores only lose their
			// finalizer.
			if !s.uncountedFailed.Has(uid) && (!isIndexed || validIndex(p, *job.Spec.Completions)) &&
				matchFailurePolicy(job.Spec.PodFailurePolicy, p).counts() {
				uncounted.Failed = append(uncounted.Failed, p.UID)
				s.uncountedFailed.Insert(uid)
				needsFlush = true
			}
		}
		if len(newIndexes)+len(uncounted.Succeeded)+len(uncounted.Failed) >= maxUncounted {
			full = true
			break
		}
	}
	if isIndexed {
		s.indexes = s.indexes.with(newIndexes)
		if str := s.indexes.String(); str != job.Status.CompletedIndexes {
			job.Status.CompletedIndexes = str
			needsFlush = true
		}
		job.Status.Succeeded = int32(s.indexes.total())
		var failedStr *string
		if perIndex(job) {
			failedStr = ptr.To(s.failedIndexes.String())
		}
		if !ptr.Equal(failedStr, job.Status.FailedIndexes) {
			job.Status.FailedIndexes = failedStr
			needsFlush = true
		}
	}
	final := s.finish
	if final != nil && final.Type == batchv1.JobFailureTarget {
		job.Status.Conditions = append(job.Status.Conditions, *final)
		needsFlush = true
		final = ptr.To(newCondition(batchv1.JobFailed, corev1.ConditionTrue, final.Reason, final.Message, s.now))
	}
	if final != nil && final.Type == batchv1.JobSuccessCriteriaMet {
		if kit.GetCondition(job.Status.Conditions, batchv1.JobSuccessCriteriaMet) == nil {
			job.Status.Conditions = append(job.Status.Conditions, *final)
			needsFlush = true
		}
		final = ptr.To(newCondition(batchv1.JobComplete, corev1.ConditionTrue, final.Reason, final.Message, s.now))
	}

	// 1. What is about to lose its finalizer is in the status first.
	if needsFlush {
		if err := c.writeStatus(ctx, s); err != nil {
			return fmt.Errorf("write uncounted pods: %w", err)
		}
		c.backoff.set(s.key, s.record)
		needsFlush = false
	}
	// 2.
	rmErr := c.releasePods(ctx, s.key, release, holding)
	// 3.
	if countReleased(&s.job.Status, holding) {
		needsFlush = true
	}
	if rmErr != nil {
		if needsFlush {
			if err := c.writeStatus(ctx, s); err != nil {
				return errors.Join(rmErr, err)
			}
		}
		return rmErr
	}
	// 4.
	done := !full && c.enactFinished(s, final)
	if done || needsFlush {
		if err := c.writeStatus(ctx, s); err != nil {
			return fmt.Errorf("write counted pods: %w", err)
		}
		if done {
			c.recordFinished(s.job, final)
		}
	}
	return nil
}

// releasePods removes the tracking finalizer of pods, dropping each from
// holding once it is gone.
func (c *Controller) releasePods(ctx context.Context, key string, pods []*corev1.Pod, holding sets.Set[string]) error {
	if len(pods) == 0 {
		return nil
	}
	uids := make([]string, len(pods))
	for i, p := range pods {
		uids[i] = string(p.UID)
	}
	c.finalizers.expect(key, uids...)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.removeFinalizer(ctx, p)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				// No update will show the removal: stop waiting for it.
				c.finalizers.observe(key, string(p.UID))
				errs = append(errs, err)
				return
			}
			holding.Delete(string(p.UID))
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// countReleased moves the uncounted Pods that no longer hold the
// finalizer into the counters. It reports whether anything moved.
func countReleased(st *batchv1.JobStatus, holding sets.Set[string]) bool {
	u := st.UncountedTerminatedPods
	changed := false
	keep := func(uids []types.UID, counter *int32) []types.UID {
		var out []types.UID
		for _, uid := range uids {
			if holding.Has(string(uid)) {
				out = append(out, uid)
				continue
			}
			*counter++
			changed = true
		}
		return out
	}
	u.Succeeded = keep(u.Succeeded, &st.Succeeded)
	u.Failed = keep(u.Failed, &st.Failed)
	return changed
}

// enactFinished sets the terminal condition once every finished Pod is
// counted and none is still terminating.
func (c *Controller) enactFinished(s *state, final *batchv1.JobCondition) bool {
	if final == nil {
		return false
	}
	st := &s.job.Status
	if u := st.UncountedTerminatedPods; len(u.Succeeded)+len(u.Failed) > 0 {
		return false
	}
	if s.terminating > 0 {
		return false
	}
	st.Conditions, _ = setCondition(st.Conditions, final.Type, final.Status, final.Reason, final.Message, s.now)
	if final.Type == batchv1.JobComplete {
		st.CompletionTime = ptr.To(metav1.NewTime(s.now))
	}
	return true
}

func (c *Controller) recordFinished(job *batchv1.Job, final *batchv1.JobCondition) {
	if final.Type == batchv1.JobComplete {
		if job.Spec.Completions != nil && job.Status.Succeeded > *job.Spec.Completions {
			c.Recorder.Event(job, corev1.EventTypeWarning, "TooManySucceededPods", "Too many succeeded pods running after completion count reached")
		}
		c.Recorder.Event(job, corev1.EventTypeNormal, "Completed", "Job completed")
		c.Log.Info("job completed", "job", jobKey(job), "succeeded", job.Status.Succeeded)
		return
	}
	c.Recorder.Event(job, corev1.EventTypeWarning, final.Reason, final.Message)
	c.Log.Info("job failed", "job", jobKey(job), "reason", final.Reason, "failed", job.Status.Failed)
}

// writeStatus writes s.job's status and continues from what the
// apiserver returned. A conflict means the cache was stale: the sync is
// retried from the start.
func (c *Controller) writeStatus(ctx context.Context, s *state) error {
	updated, err := c.Client.BatchV1().Jobs(s.job.Namespace).UpdateStatus(ctx, s.job, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	if updated.Status.UncountedTerminatedPods == nil {
		updated.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	s.job = updated
	return nil
}

// releaseFinished lets go of the finalizers that Pods of a finished Job
// may still hold.
func (c *Controller) releaseFinished(job *batchv1.Job) {
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

func uidSet(uids []types.UID) sets.Set[string] {
	s := sets.New[string]()
	for _, u := range uids {
		s.Insert(string(u))
	}
	return s
}
