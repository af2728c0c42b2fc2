package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/workflow/asl"
	"github.com/minik8s/minik8s/pkg/workflow/invoke"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// Config tunes the run controller.
type Config struct {
	Dynamic dynamic.Interface
	// Invoker calls functions (default: through the router found from its
	// Service's Endpoints).
	Invoker invoke.Invoker
	// Informers, when set, is the dynamic informer factory the run and
	// workflow controllers share (default: one of their own).
	Informers dynamicinformer.DynamicSharedInformerFactory
	// Workers reconcile runs (default 8); calls do not hold them.
	Workers int
	// MaxCalls bounds the function calls in flight (default 512).
	MaxCalls int
	// Registerer receives the engine's Prometheus series (metrics.go);
	// default prometheus.DefaultRegisterer, which the apiserver's
	// /metrics serves.
	Registerer prometheus.Registerer
}

// ErrAborted is the error of a run aborted by its parent.
const ErrAborted = "States.Aborted"

// RunController executes WorkflowRuns.
type RunController struct {
	kit.Base
	cfg       Config
	runsAPI   dynamic.NamespaceableResourceInterface
	runs      cache.SharedIndexInformer
	workflows cache.SharedIndexInformer
	calls     chan struct{}
	metrics   *metrics

	mu sync.Mutex
	// inflight are the function calls of runs, by run key.
	inflight map[string]*call
	// written is each run's status as this controller last wrote it, so
	// a reconcile on a cache still behind that write does not act on the
	// older status.
	written map[string]*minik8sv1.WorkflowRun
	// machines are parsed definitions by their hash.
	machines map[string]*asl.Machine
}

// call is one function call of a run's Task attempt.
type call struct {
	uid    types.UID
	id     string
	cancel context.CancelFunc
	done   bool
	result asl.Result
}

const byOwner = "byOwner"

// NewRunController builds the run controller on kc.
func NewRunController(kc *kit.Context, cfg Config) (*RunController, error) {
	if cfg.Dynamic == nil {
		cfg.Dynamic = kc.Dynamic
	}
	if cfg.Dynamic == nil {
		return nil, errors.New("workflowrun controller: a dynamic client is required")
	}
	if cfg.Invoker == nil {
		cfg.Invoker = &invoke.Router{Client: kc.Client}
	}
	if cfg.Informers == nil {
		cfg.Informers = dynamicinformer.NewDynamicSharedInformerFactory(cfg.Dynamic, 0)
	}
	if cfg.MaxCalls <= 0 {
		cfg.MaxCalls = 512
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.DefaultRegisterer
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	workers, err := kit.Workers("workflowrun", cfg.Workers, 8)
	if err != nil {
		return nil, err
	}
	c := &RunController{metrics: m,
		Base: kc.NewBase("workflowrun", "workflowrun", workers, "workflow-engine"), cfg: cfg,
		runsAPI:   cfg.Dynamic.Resource(wfmeta.WorkflowRunResource),
		runs:      cfg.Informers.ForResource(wfmeta.WorkflowRunResource).Informer(),
		workflows: cfg.Informers.ForResource(wfmeta.WorkflowResource).Informer(),
		calls:     make(chan struct{}, cfg.MaxCalls),
		inflight:  map[string]*call{}, written: map[string]*minik8sv1.WorkflowRun{}, machines: map[string]*asl.Machine{},
	}
	c.Loop.ReconcileAfter = c.sync
	if err := c.runs.AddIndexers(cache.Indexers{byOwner: ownerIndex}); err != nil {
		return nil, fmt.Errorf("workflowrun controller: index runs: %w", err)
	}
	// A run's own changes queue it; a child's queue its parent.
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.Queue.Add(key)
		}
		if m, err := metaOf(obj); err == nil {
			if ref := metav1.GetControllerOf(m); ref != nil && ref.Kind == "WorkflowRun" {
				c.Queue.Add(m.GetNamespace() + "/" + ref.Name)
			}
		}
	}
	if err := c.Loop.Watch(c.runs, cache.ResourceEventHandlerFuncs{AddFunc: enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue}); err != nil {
		return nil, err
	}
	c.Loop.Synced = append(c.Loop.Synced, c.workflows.HasSynced)
	return c, nil
}

// Start runs the informers and the loop until ctx ends.
func (c *RunController) Start(ctx context.Context) error {
	c.cfg.Informers.Start(ctx.Done())
	defer c.cancelAll()
	return c.Base.Start(ctx)
}

func metaOf(obj any) (metav1.Object, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("not an object: %T", obj)
	}
	return m, nil
}

func ownerIndex(obj any) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, nil
	}
	if ref := metav1.GetControllerOf(m); ref != nil && ref.Kind == "WorkflowRun" {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

func toRun(obj any) (*minik8sv1.WorkflowRun, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("not a workflowrun: %T", obj)
	}
	run := &minik8sv1.WorkflowRun{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, run); err != nil {
		return nil, fmt.Errorf("workflowrun %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return run, nil
}

// current is the run key names: the cache's, or the status this
// controller wrote last when the cache has not caught up with it.
func (c *RunController) current(key string) (*minik8sv1.WorkflowRun, error) {
	obj, ok, err := c.runs.GetIndexer().GetByKey(key)
	if err != nil || !ok {
		c.mu.Lock()
		delete(c.written, key)
		c.mu.Unlock()
		return nil, err
	}
	cached := obj.(metav1.Object)
	c.mu.Lock()
	w := c.written[key]
	if w != nil && (w.UID != cached.GetUID() || !olderThan(cached.GetResourceVersion(), w.ResourceVersion)) {
		delete(c.written, key)
		w = nil
	}
	c.mu.Unlock()
	if w != nil {
		return w.DeepCopy(), nil
	}
	return toRun(obj)
}

// olderThan: resource versions are etcd revisions here, so they order.
func olderThan(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x < y
}

func (c *RunController) sync(ctx context.Context, key string) (time.Duration, error) {
	run, err := c.current(key)
	if err != nil {
		return 0, err
	}
	if run == nil || run.DeletionTimestamp != nil {
		c.cancelCall(key)
		return 0, nil
	}
	if wfmeta.Finished(run.Status.Phase) {
		c.cancelCall(key)
		return 0, c.abortChildren(ctx, run, "the run has ended")
	}
	now := c.Clock.Now()
	var m *asl.Machine
	var x *asl.Execution
	changed := false
	if run.Status.Phase == "" || run.Status.Phase == minik8sv1.WorkflowRunPending {
		// A new run: its first states are stepped before the first write.
		if m, x, err = c.start(ctx, key, run, now); err != nil || x == nil {
			return 0, err
		}
		changed = true
	} else {
		if m, err = c.machine(run.Status.Definition); err != nil {
			return 0, c.finish(ctx, key, run, minik8sv1.WorkflowRunFailed, "States.Runtime", err.Error())
		}
		x = toExecution(&run.Status)
	}
	deadline, hasDeadline := time.Time{}, false
	if ts := m.TimeoutSeconds; ts > 0 && run.Status.StartTime != nil {
		deadline, hasDeadline = startedAt(run).Add(time.Duration(ts)*time.Second), true
		if !now.Before(deadline) {
			c.cancelCall(key)
			if err := c.abortChildren(ctx, run, "the run timed out"); err != nil {
				return 0, err
			}
			return 0, c.finish(ctx, key, run, minik8sv1.WorkflowRunTimedOut, "States.Timeout",
				fmt.Sprintf("the execution did not end within its TimeoutSeconds (%ds)", ts))
		}
	}
	untilDeadline := func(d time.Duration) time.Duration {
		if hasDeadline && (d <= 0 || deadline.Sub(now) < d) {
			return deadline.Sub(now)
		}
		return d
	}
	env := c.env(run, now)
	for {
		if m.Step(x, env) {
			changed = true
		}
		switch {
		case x.Status != asl.StatusRunning:
			c.cancelCall(key)
			return 0, c.write(ctx, key, run, x)
		case x.WaitUntil != nil && x.WaitUntil.After(now):
			if changed {
				if err := c.write(ctx, key, run, x); err != nil {
					return 0, err
				}
			}
			return untilDeadline(x.WaitUntil.Sub(now)), nil
		case x.Work == nil:
			// Step stopped after its share of transitions: record them and
			// go on in a moment, letting other runs have a turn.
			if err := c.write(ctx, key, run, x); err != nil {
				return 0, err
			}
			return time.Millisecond, nil
		}
		result, done, err := c.poll(ctx, key, run, x, m, now)
		if err != nil {
			return 0, err
		}
		if done {
			m.Complete(x, result, env)
			changed = true
			continue
		}
		if changed {
			if err := c.write(ctx, key, run, x); err != nil {
				return 0, err
			}
			if run, err = c.current(key); err != nil || run == nil {
				return 0, err
			}
		}
		after, err := c.begin(ctx, key, run, x, now)
		return untilDeadline(after), err
	}
}

// start fixes the definition a new run executes (in run's status, not
// written yet) and enters its first state. A run that cannot start is
// ended here, and start returns no execution.
func (c *RunController) start(ctx context.Context, key string, run *minik8sv1.WorkflowRun, now time.Time) (*asl.Machine, *asl.Execution, error) {
	def := run.Spec.Definition
	if def == nil {
		obj, ok, err := c.workflows.GetIndexer().GetByKey(run.Namespace + "/" + run.Spec.Workflow)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			// The workflows' cache may not have a Workflow created just
			// before the run yet (another watch): ask the apiserver
			// before failing the run.
			obj, err = c.cfg.Dynamic.Resource(wfmeta.WorkflowResource).Namespace(run.Namespace).Get(ctx, run.Spec.Workflow, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil, nil, c.finish(ctx, key, run, minik8sv1.WorkflowRunFailed, "WorkflowNotFound",
					fmt.Sprintf("workflow %q does not exist in namespace %s", run.Spec.Workflow, run.Namespace))
			}
			if err != nil {
				return nil, nil, fmt.Errorf("get workflow %s/%s: %w", run.Namespace, run.Spec.Workflow, err)
			}
		}
		wf := &minik8sv1.Workflow{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, wf); err != nil {
			return nil, nil, err
		}
		def = wf.Spec.Definition.DeepCopy()
	}
	m, err := c.machine(def)
	if err != nil {
		return nil, nil, c.finish(ctx, key, run, minik8sv1.WorkflowRunFailed, "States.Runtime", err.Error())
	}
	run.Status.Definition = def
	run.Status.StartTime = ptr.To(metav1.NewTime(now))
	input := run.Spec.Input.Bytes()
	if run.Spec.Input == nil {
		input = []byte("{}")
	}
	return m, m.Start(input, c.env(run, now)), nil
}

func (c *RunController) env(run *minik8sv1.WorkflowRun, now time.Time) asl.Env {
	env := asl.Env{Now: now, Rand: rand.New(rand.NewSource(now.UnixNano())),
		Execution:    asl.ContextExecution{ID: string(run.UID), Name: run.Name, Input: run.Spec.Input.Bytes()},
		StateMachine: asl.ContextStateMachine{ID: run.Namespace + "/" + run.Spec.Workflow, Name: run.Spec.Workflow}}
	if run.Spec.Input == nil {
		env.Execution.Input = []byte("{}")
	}
	if run.Status.StartTime != nil {
		env.Execution.StartTime = startedAt(run)
	} else {
		env.Execution.StartTime = now
	}
	return env
}

// startedAt is when the run started, to the microsecond: startTime is
// stored to the second only, which would end a machine's TimeoutSeconds
// up to a second early; the first state's entry has it exactly, while
// the history still holds it.
func startedAt(run *minik8sv1.WorkflowRun) time.Time {
	st := &run.Status
	if len(st.History) > 0 && int64(len(st.History)) == st.Transitions {
		return st.History[0].Entered.Time
	}
	return st.StartTime.Time
}

// machine parses a definition, once per distinct definition.
func (c *RunController) machine(def *minik8sv1.JSON) (*asl.Machine, error) {
	if def == nil {
		return nil, errors.New("the run has no state machine")
	}
	sum := sha256.Sum256(def.Raw)
	h := hex.EncodeToString(sum[:])
	c.mu.Lock()
	m := c.machines[h]
	c.mu.Unlock()
	if m != nil {
		return m, nil
	}
	m, errs := asl.Parse(def.Raw, field.NewPath("definition"))
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid state machine: %w", errs.ToAggregate())
	}
	c.mu.Lock()
	if len(c.machines) >= 512 {
		c.machines = map[string]*asl.Machine{}
	}
	c.machines[h] = m
	c.mu.Unlock()
	return m, nil
}

// write records x as run's status; the object written is remembered so
// the next reconcile starts from it even before the cache has it.
func (c *RunController) write(ctx context.Context, key string, run *minik8sv1.WorkflowRun, x *asl.Execution) error {
	before, entered := run.Status.Phase, run.Status.Transitions
	recordExecution(x, &run.Status)
	if wfmeta.Finished(run.Status.Phase) && run.Status.CompletionTime == nil {
		run.Status.CompletionTime = ptr.To(metav1.NewTime(c.Clock.Now()))
	}
	if err := c.update(ctx, key, run); err != nil {
		return err
	}
	c.metrics.entered(run, entered)
	if run.Status.Phase != before && wfmeta.Finished(run.Status.Phase) {
		c.recordEnd(run)
	}
	return nil
}

func (c *RunController) update(ctx context.Context, key string, run *minik8sv1.WorkflowRun) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(run)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(minik8sv1.SchemeGroupVersion.String())
	u.SetKind("WorkflowRun")
	out, err := c.runsAPI.Namespace(run.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update workflowrun %s status: %w", key, err)
	}
	written, err := toRun(out)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.written[key] = written
	c.mu.Unlock()
	return nil
}

// recordEnd counts a run that has just ended (metrics.go) and records an
// Event for one that did not succeed; a success is in its status, and an
// Event per run of a busy workflow would cost a write each.
func (c *RunController) recordEnd(run *minik8sv1.WorkflowRun) {
	c.metrics.ended(run)
	if run.Status.Phase != minik8sv1.WorkflowRunSucceeded {
		c.Recorder.Eventf(run, corev1.EventTypeWarning, run.Status.Phase, "%s: %s", run.Status.Error, run.Status.Cause)
	}
}

// finish ends a run without its machine's say: a missing workflow, a
// machine timeout.
func (c *RunController) finish(ctx context.Context, key string, run *minik8sv1.WorkflowRun, phase, errName, cause string) error {
	st := &run.Status
	now := metav1.NewTime(c.Clock.Now())
	if st.StartTime == nil {
		st.StartTime = &now
	}
	st.Phase, st.Error, st.Cause, st.Work, st.WaitUntil = phase, errName, cause, nil, nil
	st.CompletionTime = &now
	if n := len(st.History); n > 0 && st.History[n-1].Exited == nil {
		exited := metav1.NewMicroTime(now.Time)
		st.History[n-1].Exited = &exited
		st.History[n-1].Error, st.History[n-1].Cause = errName, cause
	}
	if err := c.update(ctx, key, run); err != nil {
		return err
	}
	c.recordEnd(run)
	return nil
}

// workID names one attempt of the current state: a call or a set of
// children belongs to it and to no other.
func workID(x *asl.Execution) string {
	return strconv.Itoa(x.Transitions) + "/" + strconv.Itoa(x.Attempt)
}

// poll looks at the work x waits for: done with its result, or not yet.
func (c *RunController) poll(ctx context.Context, key string, run *minik8sv1.WorkflowRun, x *asl.Execution, m *asl.Machine, now time.Time) (asl.Result, bool, error) {
	w := x.Work
	if w.Kind == asl.WorkTask {
		if kind, _ := wfmeta.SplitResource(w.Resource); kind == "function" {
			return c.pollCall(key, run, x)
		}
		// A workflow Task: one child run.
		children, err := c.children(run, x)
		if err != nil {
			return asl.Result{}, false, err
		}
		child := children[0]
		if child == nil {
			return asl.Result{}, false, nil
		}
		if !wfmeta.Finished(child.Status.Phase) {
			if w.Timeout > 0 && !now.Before(attemptStart(x).Add(w.Timeout)) {
				if err := c.abort(ctx, child, "its Task timed out"); err != nil {
					return asl.Result{}, false, err
				}
				return asl.Result{Error: invoke.ErrTimeout, Cause: fmt.Sprintf("workflow %s did not end within %s", w.Resource, w.Timeout)}, true, nil
			}
			return asl.Result{}, false, nil
		}
		return childResult(child), true, nil
	}
	children, err := c.children(run, x)
	if err != nil {
		return asl.Result{}, false, err
	}
	results := make([]*asl.Result, len(children))
	failed, finished, firstFailed := 0, 0, -1
	for i, ch := range children {
		if ch == nil || !wfmeta.Finished(ch.Status.Phase) {
			continue
		}
		r := childResult(ch)
		results[i] = &r
		finished++
		if r.Error != "" {
			failed++
			if firstFailed < 0 {
				firstFailed = i
			}
		}
	}
	var result asl.Result
	switch w.Kind {
	case asl.WorkParallel:
		switch {
		case failed > 0:
			result = *results[firstFailed]
		case finished < len(children):
			return asl.Result{}, false, nil
		default:
			outs := make([]string, len(results))
			for i, r := range results {
				outs[i] = string(r.Output)
			}
			result = asl.Result{Output: []byte("[" + strings.Join(outs, ",") + "]")}
		}
	case asl.WorkMap:
		if finished < len(children) && !m.MapShouldStop(x, failed, len(children)) {
			return asl.Result{}, false, nil
		}
		result = m.MapResult(x, results)
	default:
		return asl.Result{}, false, fmt.Errorf("unknown work %q", w.Kind)
	}
	for _, ch := range children {
		if ch != nil && !wfmeta.Finished(ch.Status.Phase) {
			if err := c.abort(ctx, ch, "another branch or item failed"); err != nil {
				return asl.Result{}, false, err
			}
		}
	}
	return result, true, nil
}

// attemptStart is when the current attempt of x's state began: when it
// was entered, or when the backoff before its latest retry ended. A
// Task's TimeoutSeconds bounds each attempt, not all of them together.
func attemptStart(x *asl.Execution) time.Time {
	n := len(x.History)
	if n == 0 {
		return time.Time{}
	}
	ev := &x.History[n-1]
	if k := len(ev.Retries); k > 0 {
		return ev.Retries[k-1].At.Add(ev.Retries[k-1].Delay)
	}
	return ev.Entered
}

func childResult(ch *minik8sv1.WorkflowRun) asl.Result {
	if ch.Status.Phase == minik8sv1.WorkflowRunSucceeded {
		out := raw(ch.Status.Output)
		if out == nil {
			out = []byte("null")
		}
		return asl.Result{Output: out}
	}
	name := ch.Status.Error
	if name == "" {
		name = "States.TaskFailed"
	}
	return asl.Result{Error: name, Cause: ch.Status.Cause}
}

// begin starts what x's work needs and is not under way: the function
// call, or the child runs (a Map's up to its MaxConcurrency). It returns
// when to look again without an event (a Task's timeout).
func (c *RunController) begin(ctx context.Context, key string, run *minik8sv1.WorkflowRun, x *asl.Execution, now time.Time) (time.Duration, error) {
	w := x.Work
	var after time.Duration
	if w.Kind == asl.WorkTask && w.Timeout > 0 {
		after = attemptStart(x).Add(w.Timeout).Sub(now) + 10*time.Millisecond
	}
	if w.Kind == asl.WorkTask {
		if kind, name := wfmeta.SplitResource(w.Resource); kind == "function" {
			c.startCall(key, run, x, name)
			return after, nil
		} else {
			children, err := c.children(run, x)
			if err != nil || children[0] != nil {
				return after, err
			}
			child := c.childRun(run, x, 0)
			child.Spec.Workflow = name
			child.Spec.Input = minik8sv1.NewJSON(w.Input)
			child.Labels[wfmeta.WorkflowLabel] = name
			return after, c.create(ctx, child)
		}
	}
	children, err := c.children(run, x)
	if err != nil {
		return 0, err
	}
	running := 0
	for _, ch := range children {
		if ch != nil && !wfmeta.Finished(ch.Status.Phase) {
			running++
		}
	}
	for i, ch := range children {
		if ch != nil {
			continue
		}
		if w.MaxConcurrency > 0 && running >= w.MaxConcurrency {
			break
		}
		spec := w.Children[i]
		child := c.childRun(run, x, i)
		child.Spec.Definition = minik8sv1.NewJSON(spec.Definition)
		child.Spec.Input = minik8sv1.NewJSON(spec.Input)
		if child.Spec.Input == nil {
			child.Spec.Input = minik8sv1.NewJSON([]byte("null"))
		}
		if err := c.create(ctx, child); err != nil {
			return 0, err
		}
		running++
	}
	return 0, nil
}

func (c *RunController) create(ctx context.Context, child *minik8sv1.WorkflowRun) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(child)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(minik8sv1.SchemeGroupVersion.String())
	u.SetKind("WorkflowRun")
	delete(u.Object, "status")
	_, err = c.runsAPI.Namespace(child.Namespace).Create(ctx, u, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create child run %s/%s: %w", child.Namespace, child.Name, err)
	}
	return nil
}

// childName is the i-th child of x's current attempt: the same name
// every time it is asked for, so a restart finds the children it made.
func childName(run *minik8sv1.WorkflowRun, x *asl.Execution, i int) string {
	sum := sha256.Sum256([]byte(string(run.UID) + "/" + workID(x)))
	prefix := strings.Trim(strings.ReplaceAll(run.Name, ".", "-"), "-")
	if len(prefix) > 40 {
		prefix = strings.TrimRight(prefix[:40], "-")
	}
	return prefix + "-" + hex.EncodeToString(sum[:])[:6] + "-" + strconv.Itoa(i)
}

func (c *RunController) childRun(run *minik8sv1.WorkflowRun, x *asl.Execution, i int) *minik8sv1.WorkflowRun {
	return &minik8sv1.WorkflowRun{
		ObjectMeta: metav1.ObjectMeta{
			Name: childName(run, x, i), Namespace: run.Namespace,
			Labels:      map[string]string{wfmeta.ParentLabel: run.Name},
			Annotations: map[string]string{wfmeta.ParentStateAnnotation: x.State + "/" + workID(x) + "/" + strconv.Itoa(i)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: minik8sv1.SchemeGroupVersion.String(), Kind: "WorkflowRun",
				Name: run.Name, UID: run.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
	}
}

// children are x's current children by index (nil: not created yet).
func (c *RunController) children(run *minik8sv1.WorkflowRun, x *asl.Execution) ([]*minik8sv1.WorkflowRun, error) {
	n := len(x.Work.Children)
	if x.Work.Kind == asl.WorkTask {
		n = 1
	}
	out := make([]*minik8sv1.WorkflowRun, n)
	for i := range out {
		obj, ok, err := c.runs.GetIndexer().GetByKey(run.Namespace + "/" + childName(run, x, i))
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		ch, err := toRun(obj)
		if err != nil {
			return nil, err
		}
		if ref := metav1.GetControllerOf(ch); ref == nil || ref.UID != run.UID {
			continue
		}
		if w := c.writtenRun(run.Namespace + "/" + ch.Name); w != nil && w.UID == ch.UID && olderThan(ch.ResourceVersion, w.ResourceVersion) {
			ch = w
		}
		out[i] = ch
	}
	return out, nil
}

func (c *RunController) writtenRun(key string) *minik8sv1.WorkflowRun {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.written[key]
}

// abort ends a child that is no longer wanted; its own reconcile then
// stops its call and its children.
func (c *RunController) abort(ctx context.Context, run *minik8sv1.WorkflowRun, why string) error {
	run = run.DeepCopy()
	key := run.Namespace + "/" + run.Name
	err := c.finish(ctx, key, run, minik8sv1.WorkflowRunAborted, ErrAborted, why)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// abortChildren aborts the children of a run that has ended which are
// still running.
func (c *RunController) abortChildren(ctx context.Context, run *minik8sv1.WorkflowRun, why string) error {
	objs, err := c.runs.GetIndexer().ByIndex(byOwner, string(run.UID))
	if err != nil {
		return err
	}
	for _, obj := range objs {
		ch, err := toRun(obj)
		if err != nil {
			return err
		}
		if w := c.writtenRun(ch.Namespace + "/" + ch.Name); w != nil && w.UID == ch.UID && olderThan(ch.ResourceVersion, w.ResourceVersion) {
			ch = w
		}
		if ch.DeletionTimestamp != nil || wfmeta.Finished(ch.Status.Phase) {
			continue
		}
		if err := c.abort(ctx, ch, why); err != nil {
			return err
		}
	}
	return nil
}
