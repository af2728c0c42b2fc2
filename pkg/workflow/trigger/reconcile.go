package trigger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// errTooManyCalls: every call slot is taken; the firing is retried with back-off.
var errTooManyCalls = errors.New("too many function calls in flight")

// Reconcile brings one Trigger's status up to date with the runs it
// started (active list, counters, last result), deletes its finished
// runs beyond the history limits, sets its Ready condition, keeps the
// event informer it needs and, for a schedule whose time has come,
// fires it. It returns how long until the trigger should be looked at
// again (0: only when something changes).
func (c *Controller) Reconcile(ctx context.Context, key string) (time.Duration, error) {
	tr, err := c.getTrigger(key)
	if err != nil {
		return 0, err
	}
	if tr == nil {
		c.sources.release(key)
		c.mu.Lock()
		delete(c.scheduled, key)
		c.mu.Unlock()
		return 0, nil
	}
	now := c.Clock.Now()
	runs, err := c.runsOf(tr)
	if err != nil {
		return 0, err
	}
	ch, running, counting, err := c.bookkeep(ctx, tr, runs)
	if err != nil {
		return 0, err
	}
	ready, requeue, err := c.readiness(ctx, tr, now)
	if err != nil {
		return 0, err
	}
	ch.ready, ch.generation = ready, &tr.Generation
	url := ""
	if tr.Spec.HTTP != nil {
		url = c.cfg.URLBase + wfmeta.TriggerPath(tr.Namespace, tr.Name)
	}
	ch.url = &url
	if err := updateStatus(ctx, c.dyn, tr.Namespace, tr.Name, tr.UID, ch); err != nil {
		return 0, err
	}
	c.markCounted(ctx, counting)
	c.cleanupHistory(ctx, tr, runs)

	if tr.Spec.Schedule != nil && ready.Status == metav1.ConditionTrue && ready.Reason == ReasonActive && tr.DeletionTimestamp == nil {
		return c.syncSchedule(ctx, tr, runs, running, now)
	}
	return requeue, nil
}

// runsOf are the WorkflowRuns in the cache that tr controls.
func (c *Controller) runsOf(tr *minik8sv1.Trigger) ([]*minik8sv1.WorkflowRun, error) {
	objs, err := c.runs.GetIndexer().ByIndex(byTrigger, tr.Namespace+"/"+tr.Name)
	if err != nil {
		return nil, fmt.Errorf("list runs of trigger %s/%s: %w", tr.Namespace, tr.Name, err)
	}
	var runs []*minik8sv1.WorkflowRun
	for _, o := range objs {
		run, err := fromUnstructured[minik8sv1.WorkflowRun](o)
		if err != nil {
			continue
		}
		if metav1.IsControlledBy(run, tr) {
			runs = append(runs, run)
		}
	}
	return runs, nil
}

// counted says whether a finished run is in its trigger's counters.
func (c *Controller) isCounted(run *minik8sv1.WorkflowRun) bool {
	if run.Annotations[CountedAnnotation] != "" {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counted[run.UID]
}

// bookkeep is the status change that brings tr's active list and
// counters up to date with its runs: the running runs it returns are
// active, the finished ones not yet counted (returned as counting) are
// counted and leave the active list, and so do active runs that are gone.
func (c *Controller) bookkeep(ctx context.Context, tr *minik8sv1.Trigger, runs []*minik8sv1.WorkflowRun) (ch *change, running, counting []*minik8sv1.WorkflowRun, err error) {
	ch = &change{}
	seen := map[types.UID]bool{}
	for _, run := range runs {
		seen[run.UID] = true
		switch {
		case wfmeta.Finished(run.Status.Phase):
			ch.dropActive = append(ch.dropActive, run.UID)
			if c.isCounted(run) {
				continue
			}
			counting = append(counting, run)
			if run.Status.Phase == minik8sv1.WorkflowRunSucceeded {
				ch.succeeded++
			} else {
				ch.failed++
			}
			ch.result(run.Name, runResult(run))
		case run.DeletionTimestamp == nil:
			running = append(running, run)
			ch.addActive = append(ch.addActive, runRef(run))
		}
	}
	// Active runs the cache does not have: gone, or too new for it.
	for _, ref := range tr.Status.Active {
		if seen[ref.UID] {
			continue
		}
		u, err := c.dyn.Resource(wfmeta.WorkflowRunResource).Namespace(tr.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) || (err == nil && u.GetUID() != ref.UID):
			ch.dropActive = append(ch.dropActive, ref.UID)
			if tr.Status.LastRun == ref.Name && tr.Status.LastResult == ResultRunning {
				ch.result(ref.Name, "Deleted")
			}
		case err != nil:
			return nil, nil, nil, fmt.Errorf("get workflowrun %s/%s: %w", tr.Namespace, ref.Name, err)
		default:
			if run, err := fromUnstructured[minik8sv1.WorkflowRun](u); err == nil && !wfmeta.Finished(run.Status.Phase) {
				running = append(running, run)
			}
		}
	}
	return ch, running, counting, nil
}

// markCounted remembers that runs are counted, and marks them so for a
// controller that starts afresh.
func (c *Controller) markCounted(ctx context.Context, runs []*minik8sv1.WorkflowRun) {
	if len(runs) == 0 {
		return
	}
	c.mu.Lock()
	for _, run := range runs {
		c.counted[run.UID] = true
	}
	c.mu.Unlock()
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"true"}}}`, CountedAnnotation)
	for _, run := range runs {
		_, err := c.dyn.Resource(wfmeta.WorkflowRunResource).Namespace(run.Namespace).Patch(ctx, run.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			c.Log.Warn("marking a run counted failed", "trigger", run.Namespace+"/"+run.Labels[wfmeta.TriggerLabel], "run", run.Name, "err", err)
		}
	}
}

// cleanupHistory deletes the oldest finished runs of tr beyond its
// history limits (only runs already counted).
func (c *Controller) cleanupHistory(ctx context.Context, tr *minik8sv1.Trigger, runs []*minik8sv1.WorkflowRun) {
	var succeeded, failed []*minik8sv1.WorkflowRun
	for _, run := range runs {
		if run.DeletionTimestamp != nil || !wfmeta.Finished(run.Status.Phase) || !c.isCounted(run) {
			continue
		}
		if run.Status.Phase == minik8sv1.WorkflowRunSucceeded {
			succeeded = append(succeeded, run)
		} else {
			failed = append(failed, run)
		}
	}
	keepSucceeded, keepFailed := historyLimits(tr)
	for _, set := range []struct {
		runs []*minik8sv1.WorkflowRun
		keep int
	}{{succeeded, keepSucceeded}, {failed, keepFailed}} {
		extra := len(set.runs) - set.keep
		if extra <= 0 {
			continue
		}
		slices.SortFunc(set.runs, byCompletion)
		for _, run := range set.runs[:extra] {
			if err := c.deleteRun(ctx, tr, run.Name, run.UID); err != nil {
				c.Log.Warn("deleting an old run failed", "trigger", tr.Namespace+"/"+tr.Name, "run", run.Name, "err", err)
			}
		}
	}
}

// byCompletion orders runs oldest first: by completion time (else
// creation), then name.
func byCompletion(a, b *minik8sv1.WorkflowRun) int {
	ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if a.Status.CompletionTime != nil {
		ta = a.Status.CompletionTime.Time
	}
	if b.Status.CompletionTime != nil {
		tb = b.Status.CompletionTime.Time
	}
	if c := ta.Compare(tb); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// deleteRun deletes one of tr's runs (a running one is aborted).
func (c *Controller) deleteRun(ctx context.Context, tr *minik8sv1.Trigger, name string, uid types.UID) error {
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err := c.dyn.Resource(wfmeta.WorkflowRunResource).Namespace(tr.Namespace).Delete(ctx, name, opts)
	if err != nil && !apierrors.IsNotFound(err) {
		c.Recorder.Eventf(tr, corev1.EventTypeWarning, "FailedDelete", "Deleting run %s: %v", name, err)
		return fmt.Errorf("delete workflowrun %s/%s: %w", tr.Namespace, name, err)
	}
	if err == nil {
		c.Recorder.Eventf(tr, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted run %s", name)
	}
	return nil
}

// readiness is tr's Ready condition; it starts or stops the event
// informer tr needs and says when to look again (an unknown kind).
func (c *Controller) readiness(ctx context.Context, tr *minik8sv1.Trigger, now time.Time) (*metav1.Condition, time.Duration, error) {
	key := tr.Namespace + "/" + tr.Name
	cond := func(status metav1.ConditionStatus, reason, format string, args ...any) *metav1.Condition {
		return &metav1.Condition{Type: ConditionReady, Status: status, Reason: reason, Message: fmt.Sprintf(format, args...),
			ObservedGeneration: tr.Generation, LastTransitionTime: metav1.NewTime(now)}
	}
	var (
		eventSource *sourceKey
		requeue     time.Duration
		notReady    *metav1.Condition
	)
	switch s := tr.Spec; {
	case s.Schedule != nil:
		if _, err := parseSchedule(s.Schedule); err != nil {
			notReady = cond(metav1.ConditionFalse, ReasonInvalidSource, "invalid schedule %q: %v", s.Schedule.Schedule, err)
		}
	case s.Event != nil:
		gvr, namespaced, err := c.mapKind(s.Event)
		switch {
		case meta.IsNoMatchError(err):
			notReady = cond(metav1.ConditionFalse, ReasonUnknownKind, "unknown kind %s %s", s.Event.APIVersion, s.Event.Kind)
			requeue = unknownKindRetry
		case err != nil:
			return nil, 0, err
		default:
			if _, err := metav1.LabelSelectorAsSelector(s.Event.Selector); err != nil {
				notReady = cond(metav1.ConditionFalse, ReasonInvalidSource, "invalid selector: %v", err)
			}
			k := eventKey(tr, gvr, namespaced)
			eventSource = &k
		}
	case s.HTTP != nil:
	default:
		notReady = cond(metav1.ConditionFalse, ReasonInvalidSource, "no source: set one of schedule, event and http")
	}
	if notReady == nil {
		if ok, what := c.targetExists(tr); !ok {
			notReady = cond(metav1.ConditionFalse, ReasonTargetNotFound, "%s not found; the trigger does not fire until it exists", what)
		}
	}
	switch {
	case notReady != nil:
		c.sources.release(key)
		return notReady, requeue, nil
	case suspended(tr):
		c.sources.release(key)
		return cond(metav1.ConditionTrue, ReasonSuspended, "suspended: it does not fire"), 0, nil
	}
	if eventSource != nil && tr.DeletionTimestamp == nil {
		c.sources.set(ctx, key, *eventSource)
		// Until its informer has listed, changes are not seen: say so,
		// so that "Ready" means the trigger is watching.
		if !c.sources.synced(*eventSource) {
			return cond(metav1.ConditionFalse, ReasonSyncing, "listing %s %s before it fires on changes", tr.Spec.Event.APIVersion, tr.Spec.Event.Kind),
				syncingRetry, nil
		}
	} else {
		c.sources.release(key)
	}
	return cond(metav1.ConditionTrue, ReasonActive, "it fires"), 0, nil
}

// remembered is the latest schedule time handled for tr.
func (c *Controller) remembered(tr *minik8sv1.Trigger) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.scheduled[tr.Namespace+"/"+tr.Name]; ok && s.uid == tr.UID {
		return s.at
	}
	return time.Time{}
}

func (c *Controller) remember(tr *minik8sv1.Trigger, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scheduled[tr.Namespace+"/"+tr.Name] = scheduledAt{uid: tr.UID, at: at}
}

type scheduledAt struct {
	uid types.UID
	at  time.Time
}

// syncSchedule fires a schedule trigger if a time is due (and was not
// fired or missed already) and returns how long until the next one.
func (c *Controller) syncSchedule(ctx context.Context, tr *minik8sv1.Trigger, runs, running []*minik8sv1.WorkflowRun, now time.Time) (time.Duration, error) {
	key := tr.Namespace + "/" + tr.Name
	sched, err := parseSchedule(tr.Spec.Schedule)
	if err != nil {
		return 0, nil // readiness says so
	}
	requeue := sched.RequeueAfter(now)
	scheduled, many := sched.MostRecent(earliest(tr, c.remembered(tr), now), now)
	if many {
		c.Recorder.Eventf(tr, corev1.EventTypeWarning, "TooManyMissedTimes",
			"too many missed schedule times: set or decrease startingDeadlineSeconds, or check the clock")
	}
	if scheduled == nil {
		return requeue, nil
	}
	if d := tr.Spec.Schedule.StartingDeadlineSeconds; d != nil && scheduled.Add(time.Duration(*d)*time.Second).Before(now) {
		c.Recorder.Eventf(tr, corev1.EventTypeWarning, "MissSchedule", "Missed the schedule time %s", scheduled.UTC().Format(time.RFC3339))
		c.remember(tr, *scheduled)
		return requeue, nil
	}
	stamp := scheduled.UTC().Format(time.RFC3339)
	if slices.ContainsFunc(runs, func(r *minik8sv1.WorkflowRun) bool { return r.Annotations[ScheduledAnnotation] == stamp }) {
		c.remember(tr, *scheduled)
		return requeue, nil // fired already; the status write was lost or is not in the cache yet
	}
	var drop []types.UID
	fn := tr.Spec.Target.Workflow == ""
	switch tr.Spec.Schedule.ConcurrencyPolicy {
	case minik8sv1.ForbidConcurrent:
		if (fn && c.callsOf(key) > 0) || (!fn && len(running) > 0) {
			c.Recorder.Eventf(tr, corev1.EventTypeNormal, "AlreadyActive",
				"Not firing at %s: the previous firing is still running and the concurrency policy is Forbid", stamp)
			return requeue, nil
		}
	case minik8sv1.ReplaceConcurrent:
		if fn {
			c.cancelCalls(key)
			break
		}
		for _, run := range running {
			if err := c.deleteRun(ctx, tr, run.Name, run.UID); err != nil {
				return 0, err
			}
			drop = append(drop, run.UID)
		}
	}
	if err := c.fire(ctx, tr, payloadOf(tr), "", scheduled, drop); err != nil {
		if errors.Is(err, errTooManyCalls) {
			return 0, err
		}
		c.Log.Warn("firing failed", "trigger", key, "scheduled", stamp, "err", err)
		return 0, err
	}
	return requeue, nil
}

// fire starts tr's target with payload: it creates a WorkflowRun, or
// starts a function call in a goroutine of its own, and records the
// firing in tr's status (with lastScheduleTime for a scheduled one;
// drop leaves the active list) and in an Event.
func (c *Controller) fire(ctx context.Context, tr *minik8sv1.Trigger, payload []byte, eventType string, scheduled *time.Time, drop []types.UID) error {
	key := tr.Namespace + "/" + tr.Name
	now := c.Clock.Now()
	if tr.Spec.Target.Workflow != "" {
		run, err := createRun(ctx, c.dyn, newRun(tr, payload, eventType, scheduled))
		if err != nil {
			c.Recorder.Eventf(tr, corev1.EventTypeWarning, "FailedCreate", "Creating a run of workflow %s: %v", tr.Spec.Target.Workflow, err)
			return err
		}
		if scheduled != nil {
			c.remember(tr, *scheduled)
		}
		c.Recorder.Eventf(tr, corev1.EventTypeNormal, "Fired", "Started workflow run %s%s", run.Name, on(eventType))
		c.Log.Info("fired", "trigger", key, "run", run.Name)
		ch := runFired(run, now)
		ch.scheduled, ch.dropActive = scheduled, drop
		if err := updateStatus(ctx, c.dyn, tr.Namespace, tr.Name, tr.UID, ch); err != nil {
			// The run is started: firing again would start another. The
			// next sync puts it in the active list.
			c.Log.Warn("recording a firing failed", "trigger", key, "run", run.Name, "err", err)
			c.Queue.Add(key)
		}
		return nil
	}
	fn := tr.Spec.Target.Function
	select {
	case c.slots <- struct{}{}:
	default:
		return errTooManyCalls
	}
	ch := &change{fired: &firing{at: now, run: functionRun(fn), result: ResultRunning}, scheduled: scheduled}
	if err := updateStatus(ctx, c.dyn, tr.Namespace, tr.Name, tr.UID, ch); err != nil {
		<-c.slots
		return err
	}
	if scheduled != nil {
		c.remember(tr, *scheduled)
	}
	c.Recorder.Eventf(tr, corev1.EventTypeNormal, "Fired", "Invoked function %s%s", fn, on(eventType))
	c.Log.Info("fired", "trigger", key, "function", fn)
	callCtx, cancel := context.WithTimeout(ctx, c.cfg.InvocationTimeout)
	cl := &call{cancel: cancel}
	c.mu.Lock()
	if c.inflight[key] == nil {
		c.inflight[key] = map[*call]struct{}{}
	}
	c.inflight[key][cl] = struct{}{}
	c.mu.Unlock()
	c.calls.Add(1)
	go c.runCall(ctx, callCtx, cl, tr, payload, eventType)
	return nil
}

func on(eventType string) string {
	if eventType == "" {
		return ""
	}
	return " on " + eventType
}

// runCall makes one function call and records its outcome.
func (c *Controller) runCall(ctx, callCtx context.Context, cl *call, tr *minik8sv1.Trigger, payload []byte, eventType string) {
	key := tr.Namespace + "/" + tr.Name
	defer c.calls.Done()
	defer func() {
		cl.cancel()
		c.mu.Lock()
		delete(c.inflight[key], cl)
		if len(c.inflight[key]) == 0 {
			delete(c.inflight, key)
		}
		c.mu.Unlock()
		<-c.slots
		c.Queue.Add(key) // a Forbid schedule may wait for it
	}()
	fn := tr.Spec.Target.Function
	resp, err := c.cfg.Invoker.Invoke(callCtx, tr.Namespace, fn, payload, functionHeader(tr, eventType))
	result, ok := callResult(resp, err)
	if err != nil && errors.Is(callCtx.Err(), context.Canceled) && ctx.Err() == nil {
		result = "Aborted (replaced)"
	}
	if err := updateStatus(ctx, c.dyn, tr.Namespace, tr.Name, tr.UID, callDone(fn, result, ok)); err != nil {
		c.Log.Warn("recording a call's outcome failed", "trigger", key, "function", fn, "err", err)
	}
}

// callsOf counts tr's function calls in flight.
func (c *Controller) callsOf(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.inflight[key])
}

// cancelCalls cancels tr's function calls in flight.
func (c *Controller) cancelCalls(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for cl := range c.inflight[key] {
		cl.cancel()
	}
}
