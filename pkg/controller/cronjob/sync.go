package cronjob

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// errStaleCache: the cache is behind the CronJob's status; the sync is
// retried (after a short back-off) instead of acting on it.
var errStaleCache = errors.New("informer cache is behind the cronjob's status")

// Reconcile brings one CronJob's status up to date with its Jobs, deletes
// finished Jobs beyond the history limits and, if a scheduled time is
// due, starts its Job. It returns how long until the CronJob should be
// looked at again (0: only when something changes).
func (c *Controller) Reconcile(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	shared, err := c.cronJobs.CronJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	all, err := c.jobs.Jobs(ns).List(labels.Everything())
	if err != nil {
		return 0, fmt.Errorf("list jobs: %w", err)
	}
	var jobs []*batchv1.Job
	for _, j := range all {
		if metav1.IsControlledBy(j, shared) {
			jobs = append(jobs, j)
		}
	}
	cj := shared.DeepCopy()
	cleaned := c.cleanupFinished(ctx, cj, jobs)
	requeue, synced, syncErr := c.sync(ctx, cj, jobs, c.Clock.Now())
	if errors.Is(syncErr, errStaleCache) {
		return 0, syncErr
	}
	if cleaned || synced {
		if _, err := c.Client.BatchV1().CronJobs(ns).UpdateStatus(ctx, cj, metav1.UpdateOptions{}); err != nil {
			return 0, fmt.Errorf("update status of cronjob %s: %w", key, err)
		}
	}
	if requeue > 0 {
		if syncErr != nil {
			c.Log.Warn("sync failed; retrying at the next scheduled time", "cronjob", key, "err", syncErr)
		}
		return requeue, nil
	}
	return 0, syncErr
}

// sync does the scheduling part of Reconcile on cj; it reports when to
// requeue and whether cj's status changed.
func (c *Controller) sync(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job, now time.Time) (time.Duration, bool, error) {
	changed := false
	children := map[types.UID]bool{}
	for _, j := range jobs {
		children[j.UID] = true
		listed := activeIndex(cj, j.UID) >= 0
		done, cond := jobFinished(j)
		switch {
		case !listed && !done:
			// Created by someone else (kubectl create job --from), or by
			// us just now and the cache has not seen the status yet.
			fresh, err := c.Client.BatchV1().CronJobs(cj.Namespace).Get(ctx, cj.Name, metav1.GetOptions{})
			if err != nil {
				return 0, changed, fmt.Errorf("get cronjob: %w", err)
			}
			if activeIndex(fresh, j.UID) >= 0 {
				return 0, changed, errStaleCache
			}
			c.Recorder.Eventf(cj, corev1.EventTypeWarning, "UnexpectedJob", "Saw a job that the controller did not create or forgot: %s", j.Name)
		case listed && done:
			removeActive(cj, j.UID)
			c.Recorder.Eventf(cj, corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, condition: %v", j.Name, cond)
			changed = true
		}
		if done && cond == batchv1.JobComplete && j.Status.CompletionTime != nil {
			if last := cj.Status.LastSuccessfulTime; last == nil || j.Status.CompletionTime.After(last.Time) {
				cj.Status.LastSuccessfulTime = j.Status.CompletionTime.DeepCopy()
				changed = true
			}
		}
	}
	// Active Jobs that are gone (the cache may just be slow: ask).
	for _, ref := range slices.Clone(cj.Status.Active) {
		if children[ref.UID] {
			continue
		}
		_, err := c.Client.BatchV1().Jobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			removeActive(cj, ref.UID)
			c.Recorder.Eventf(cj, corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s", ref.Name)
			changed = true
		case err != nil:
			return 0, changed, fmt.Errorf("get job %s: %w", ref.Name, err)
		}
	}
	if cj.DeletionTimestamp != nil {
		return 0, changed, nil
	}

	loc, err := timeZone(cj)
	if err != nil {
		c.Recorder.Eventf(cj, corev1.EventTypeWarning, "UnknownTimeZone", "invalid timeZone: %q: %s", ptrString(cj.Spec.TimeZone), err)
		return 0, changed, nil
	}
	sched, err := parseSchedule(cj.Spec.Schedule, loc)
	if err != nil {
		// A user error; nothing to do until the spec changes.
		c.Recorder.Eventf(cj, corev1.EventTypeWarning, "UnparseableSchedule", "unparseable schedule: %q : %s", cj.Spec.Schedule, err)
		return 0, changed, nil
	}
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		return 0, changed, nil
	}
	requeue := sched.RequeueAfter(now)
	scheduled, many := sched.MostRecent(earliest(cj, now), now)
	if many {
		c.Recorder.Eventf(cj, corev1.EventTypeWarning, "TooManyMissedTimes",
			"too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
		c.Log.Warn("too many missed start times", "cronjob", cj.Namespace+"/"+cj.Name)
	}
	if scheduled == nil {
		return requeue, changed, nil
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && scheduled.Add(time.Duration(*d)*time.Second).Before(now) {
		c.Recorder.Eventf(cj, corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z))
		return requeue, changed, nil
	}
	name := jobName(cj, *scheduled)
	if slices.ContainsFunc(cj.Status.Active, func(r corev1.ObjectReference) bool { return r.Name == name }) ||
		(cj.Status.LastScheduleTime != nil && cj.Status.LastScheduleTime.Time.Equal(*scheduled)) {
		return requeue, changed, nil // done already
	}
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(cj.Status.Active) > 0 {
			c.Recorder.Eventf(cj, corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
			return requeue, changed, nil
		}
	case batchv1.ReplaceConcurrent:
		for _, ref := range slices.Clone(cj.Status.Active) {
			if err := c.deleteJob(ctx, cj, ref.Name, ref.UID); err != nil {
				return 0, changed, err
			}
			changed = true
		}
	}

	job := jobFromTemplate(cj, *scheduled, loc)
	created, err := c.Client.BatchV1().Jobs(cj.Namespace).Create(ctx, job, metav1.CreateOptions{})
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return 0, changed, err
	case apierrors.IsAlreadyExists(err):
		// Created by an earlier sync whose status update was lost, or by
		// someone else.
		existing, err := c.Client.BatchV1().Jobs(cj.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return 0, changed, fmt.Errorf("get job %s: %w", job.Name, err)
		}
		if !metav1.IsControlledBy(existing, cj) || activeIndex(cj, existing.UID) >= 0 {
			return requeue, changed, nil
		}
		created = existing
	case err != nil:
		c.Recorder.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
		return 0, changed, fmt.Errorf("create job %s: %w", job.Name, err)
	default:
		c.Recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", created.Name)
		c.Log.Info("created job", "cronjob", cj.Namespace+"/"+cj.Name, "job", created.Name, "scheduled", scheduled.UTC())
	}
	cj.Status.Active = append(cj.Status.Active, corev1.ObjectReference{
		Kind: "Job", APIVersion: batchv1.SchemeGroupVersion.String(),
		Namespace: created.Namespace, Name: created.Name, UID: created.UID, ResourceVersion: created.ResourceVersion,
	})
	cj.Status.LastScheduleTime = &metav1.Time{Time: *scheduled}
	return requeue, true, nil
}

// jobFromTemplate is the Job a CronJob runs for a scheduled time.
func jobFromTemplate(cj *batchv1.CronJob, scheduled time.Time, loc *time.Location) *batchv1.Job {
	annotations := maps.Clone(cj.Spec.JobTemplate.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[batchv1.CronJobScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:            jobName(cj, scheduled),
			Namespace:       cj.Namespace,
			Labels:          maps.Clone(cj.Spec.JobTemplate.Labels),
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, cronJobKind)},
		},
		Spec: *cj.Spec.JobTemplate.Spec.DeepCopy(),
	}
}

// cleanupFinished deletes the oldest finished Jobs beyond the history
// limits; it reports whether cj's status changed.
func (c *Controller) cleanupFinished(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) bool {
	if cj.Spec.SuccessfulJobsHistoryLimit == nil && cj.Spec.FailedJobsHistoryLimit == nil {
		return false
	}
	var succeeded, failed []*batchv1.Job
	for _, j := range jobs {
		if j.DeletionTimestamp != nil {
			continue
		}
		switch _, cond := jobFinished(j); cond {
		case batchv1.JobComplete:
			succeeded = append(succeeded, j)
		case batchv1.JobFailed:
			failed = append(failed, j)
		}
	}
	changed := false
	if limit := cj.Spec.SuccessfulJobsHistoryLimit; limit != nil && c.removeOldest(ctx, cj, succeeded, int(*limit)) {
		changed = true
	}
	if limit := cj.Spec.FailedJobsHistoryLimit; limit != nil && c.removeOldest(ctx, cj, failed, int(*limit)) {
		changed = true
	}
	return changed
}

func (c *Controller) removeOldest(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job, keep int) bool {
	extra := len(jobs) - keep
	if extra <= 0 {
		return false
	}
	slices.SortFunc(jobs, byStartTime)
	changed := false
	for _, j := range jobs[:extra] {
		if err := c.deleteJob(ctx, cj, j.Name, j.UID); err != nil {
			c.Log.Warn("deleting old job failed", "cronjob", cj.Namespace+"/"+cj.Name, "job", j.Name, "err", err)
			continue
		}
		changed = true
	}
	return changed
}

// byStartTime orders Jobs oldest first; Jobs that never started last.
func byStartTime(a, b *batchv1.Job) int {
	sa, sb := a.Status.StartTime, b.Status.StartTime
	switch {
	case sa == nil && sb == nil:
	case sa == nil:
		return 1
	case sb == nil:
		return -1
	case !sa.Equal(sb):
		return sa.Compare(sb.Time)
	}
	return strings.Compare(a.Name, b.Name)
}

// deleteJob deletes one of cj's Jobs (its Pods go by garbage collection)
// and drops it from the active list.
func (c *Controller) deleteJob(ctx context.Context, cj *batchv1.CronJob, name string, uid types.UID) error {
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err := c.Client.BatchV1().Jobs(cj.Namespace).Delete(ctx, name, opts)
	if err != nil && !apierrors.IsNotFound(err) {
		c.Recorder.Eventf(cj, corev1.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
		return fmt.Errorf("delete job %s: %w", name, err)
	}
	removeActive(cj, uid)
	if err == nil {
		c.Recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", name)
	}
	return nil
}

// jobFinished reports whether the Job has its terminal condition, and
// which.
func jobFinished(j *batchv1.Job) (bool, batchv1.JobConditionType) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true, c.Type
		}
	}
	return false, ""
}

func activeIndex(cj *batchv1.CronJob, uid types.UID) int {
	return slices.IndexFunc(cj.Status.Active, func(r corev1.ObjectReference) bool { return r.UID == uid })
}

func removeActive(cj *batchv1.CronJob, uid types.UID) {
	cj.Status.Active = slices.DeleteFunc(cj.Status.Active, func(r corev1.ObjectReference) bool { return r.UID == uid })
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
