package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
	"github.com/minik8s/minik8s/pkg/workflow/invoke"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// The workflows measured, and the function their Tasks call.
const (
	wfPassChain = "pass-chain"
	wfTaskChain = "task-chain"
	wfMixed     = "pass-task-pass"
	wfEchoCode  = "def handle(event):\n    return event\n"
	wfInput     = `{"n":1,"payload":"bench"}`
	// wfRunTimeout bounds one run, from its creation to its end.
	wfRunTimeout = 2 * time.Minute
	// wfMaxErrors stops a chain's sequential runs after so many failures.
	wfMaxErrors = 5
)

// wfCluster is a functions cluster with a watch of its WorkflowRuns.
type wfCluster struct {
	*fnCluster
	runs    cache.SharedIndexInformer
	waiter  *runWaiter
	stopInf context.CancelFunc
	// invoker calls the function the way the engine does.
	invoker *invoke.Router
	seq     atomic.Int64
}

func newWfCluster(ctx context.Context, c *fnCluster) (*wfCluster, error) {
	wc := &wfCluster{fnCluster: c, waiter: newRunWaiter(), invoker: &invoke.Router{Client: c.client}}
	infCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	wc.stopInf = stop
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.dyn, 0, "default", nil)
	wc.runs = factory.ForResource(wfmeta.WorkflowRunResource).Informer()
	if _, err := wc.runs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    wc.waiter.observe,
		UpdateFunc: func(_, obj any) { wc.waiter.observe(obj) },
	}); err != nil {
		stop()
		return nil, err
	}
	go wc.runs.Run(infCtx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), wc.runs.HasSynced) {
		stop()
		return nil, fmt.Errorf("watch of workflowruns: %w", context.Cause(ctx))
	}
	return wc, nil
}

func (wc *wfCluster) stop() { wc.stopInf() }

// runEnd is a run as the watch first showed it ended, and when.
type runEnd struct {
	run  *minik8sv1.WorkflowRun
	seen time.Time
}

// runWaiter hands each awaited run's first event showing a final phase to
// its waiter, timed as it arrives.
type runWaiter struct {
	mu      sync.Mutex
	waiting map[string]chan runEnd
}

func newRunWaiter() *runWaiter { return &runWaiter{waiting: map[string]chan runEnd{}} }

// expect registers a waiter for the run name, before it is created.
func (t *runWaiter) expect(name string) <-chan runEnd {
	ch := make(chan runEnd, 1)
	t.mu.Lock()
	t.waiting[name] = ch
	t.mu.Unlock()
	return ch
}

func (t *runWaiter) forget(name string) {
	t.mu.Lock()
	delete(t.waiting, name)
	t.mu.Unlock()
}

func (t *runWaiter) observe(obj any) {
	now := time.Now()
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	if !wfmeta.Finished(phase) {
		return
	}
	t.mu.Lock()
	ch := t.waiting[u.GetName()]
	delete(t.waiting, u.GetName())
	t.mu.Unlock()
	if ch == nil {
		return
	}
	run := &minik8sv1.WorkflowRun{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, run); err != nil {
		run.Name, run.Status.Phase = u.GetName(), minik8sv1.WorkflowRunFailed
		run.Status.Error, run.Status.Cause = "bench", "decode the run: "+err.Error()
	}
	ch <- runEnd{run: run, seen: now}
}

// perState is a run's time per state: from its first state entered to
// its last state exited, over the states it went through, which must be
// n.
func perState(run *minik8sv1.WorkflowRun, n int) (time.Duration, error) {
	h := run.Status.History
	if len(h) != n || n == 0 {
		return 0, fmt.Errorf("workflowrun %s went through %d states, want %d", run.Name, len(h), n)
	}
	last := h[len(h)-1].Exited
	if last == nil {
		return 0, fmt.Errorf("workflowrun %s: its last state %s has no exit time", run.Name, h[len(h)-1].Name)
	}
	return last.Sub(h[0].Entered.Time) / time.Duration(n), nil
}

// chainDefinition is n states of type typ (Task states call the bench
// function), one after the other.
func chainDefinition(typ string, n int) map[string]any {
	name := func(i int) string { return fmt.Sprintf("%s%02d", typ, i) }
	states := map[string]any{}
	for i := 1; i <= n; i++ {
		s := map[string]any{"Type": typ}
		if typ == "Task" {
			s["Resource"] = wfmeta.FunctionPrefix + benchFunction
		}
		if i == n {
			s["End"] = true
		} else {
			s["Next"] = name(i + 1)
		}
		states[name(i)] = s
	}
	return map[string]any{"Comment": fmt.Sprintf("%d %s states", n, typ), "StartAt": name(1), "States": states}
}

func mixedDefinition() map[string]any {
	return map[string]any{
		"Comment": "Pass, Task, Pass",
		"StartAt": "In",
		"States": map[string]any{
			"In":   map[string]any{"Type": "Pass", "Next": "Call"},
			"Call": map[string]any{"Type": "Task", "Resource": wfmeta.FunctionPrefix + benchFunction, "Next": "Out"},
			"Out":  map[string]any{"Type": "Pass", "End": true},
		},
	}
}

func workflowObject(name string, def map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": minik8sv1.SchemeGroupVersion.String(), "kind": "Workflow",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     map[string]any{"definition": def},
	}}
}

func (wc *wfCluster) echoFunction() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": minik8sv1.SchemeGroupVersion.String(), "kind": "Function",
		"metadata": map[string]any{"name": benchFunction, "namespace": "default"},
		"spec": map[string]any{
			"runtime": benchRuntime,
			"source":  map[string]any{"inline": wfEchoCode},
			"scale":   map[string]any{"minScale": int64(1), "maxScale": int64(benchMaxScale), "target": int64(benchTarget)},
		},
	}}
}

// waitWorkflowReady waits until the workflow's Ready condition is True
// for its generation.
func (wc *wfCluster) waitWorkflowReady(ctx context.Context, name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := "not seen"
	for time.Now().Before(deadline) {
		u, err := wc.dyn.Resource(wfmeta.WorkflowResource).Namespace("default").Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, cond := range conds {
				m, _ := cond.(map[string]any)
				if m["type"] != "Ready" {
					continue
				}
				og, _ := m["observedGeneration"].(int64)
				last = fmt.Sprintf("Ready=%v %v: %v", m["status"], m["reason"], m["message"])
				if m["status"] == "True" && og == u.GetGeneration() {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("workflow %s not Ready after %s (last: %s)", name, timeout, last)
}

// runOnce creates a run of the workflow and waits for the watch to show
// its end: it returns the run as then seen and the time from the Create
// call; an error when it did not succeed.
func (wc *wfCluster) runOnce(ctx context.Context, workflow string) (*minik8sv1.WorkflowRun, time.Duration, error) {
	name := fmt.Sprintf("%s-%06d", workflow, wc.seq.Add(1))
	ended := wc.waiter.expect(name)
	defer wc.waiter.forget(name)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": minik8sv1.SchemeGroupVersion.String(), "kind": "WorkflowRun",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     map[string]any{"workflow": workflow, "input": map[string]any{"n": int64(1), "payload": "bench"}},
	}}
	t0 := time.Now()
	if _, err := wc.dyn.Resource(wfmeta.WorkflowRunResource).Namespace("default").Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return nil, 0, fmt.Errorf("create workflowrun %s: %w", name, err)
	}
	timer := time.NewTimer(wfRunTimeout)
	defer timer.Stop()
	select {
	case e := <-ended:
		d := e.seen.Sub(t0)
		if st := e.run.Status; st.Phase != minik8sv1.WorkflowRunSucceeded {
			return e.run, d, fmt.Errorf("workflowrun %s %s: %s: %s", name, st.Phase, st.Error, st.Cause)
		}
		return e.run, d, nil
	case <-timer.C:
		return nil, 0, fmt.Errorf("workflowrun %s not ended %s after its creation", name, wfRunTimeout)
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
}

// warmUp runs the workflow until one run succeeds (not counted); a run
// may fail with WorkflowNotFound while the engine's cache has not seen
// the workflow yet.
func (wc *wfCluster) warmUp(ctx context.Context, workflow string) error {
	var err error
	for range 10 {
		var run *minik8sv1.WorkflowRun
		run, _, err = wc.runOnce(ctx, workflow)
		if err == nil || run == nil || run.Status.Error != "WorkflowNotFound" {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err != nil {
		return fmt.Errorf("warm-up run of %s: %w", workflow, err)
	}
	return nil
}

// chainResult is what the sequential runs of a chain gave.
type chainResult struct {
	perState, runs []time.Duration
	elapsed        time.Duration
	errors         int
	firstErr       error
}

// measureChain runs the chain n times, one after the other.
func (wc *wfCluster) measureChain(ctx context.Context, workflow string, n int) chainResult {
	var r chainResult
	start := time.Now()
	for range n {
		if ctx.Err() != nil || r.errors >= wfMaxErrors {
			break
		}
		run, d, err := wc.runOnce(ctx, workflow)
		var ps time.Duration
		if err == nil {
			// The history must hold the whole chain; the time per state is
			// the run's, as its client sees it, over the states: the
			// engine's own clock gives consecutive Pass states, stepped
			// together, one reading.
			if _, err = perState(run, wfChainLength); err == nil {
				ps = d / wfChainLength
			}
		}
		if err != nil {
			r.errors++
			if r.firstErr == nil {
				r.firstErr = err
			}
			continue
		}
		r.perState, r.runs = append(r.perState, ps), append(r.runs, d)
	}
	r.elapsed = time.Since(start)
	return r
}

// callDirect calls the function through the router as the engine does
// (the router found from its Endpoints, from the host).
func (wc *wfCluster) callDirect(ctx context.Context) error {
	resp, err := wc.invoker.Invoke(ctx, "default", benchFunction, []byte(wfInput), nil)
	if err != nil {
		return err
	}
	if resp.Status != http.StatusOK || !strings.Contains(string(resp.Body), "bench") {
		return fmt.Errorf("answer %d %q", resp.Status, strings.TrimSpace(string(resp.Body)))
	}
	return nil
}

// measureAll deploys the function and the workflows, then measures the
// function alone, the Pass chain, the Task chain and the runs per second
// of Pass -> Task -> Pass, into report.
func (wc *wfCluster) measureAll(ctx context.Context, cfg WorkflowsConfig, report *WorkflowsReport) error {
	t0 := time.Now()
	if _, err := wc.dyn.Resource(fnmeta.Resource).Namespace("default").Create(ctx, wc.echoFunction(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create function %s: %w", benchFunction, err)
	}
	if err := wc.waitFunctionReady(ctx, 5*time.Minute); err != nil {
		return err
	}
	report.BuildMs = ms(time.Since(t0))
	fmt.Fprintf(cfg.Progress, "function %s built and pushed in %s; waiting for its instance (minScale 1)\n", benchFunction, formatLatency(report.BuildMs))
	for name, def := range map[string]map[string]any{
		wfPassChain: chainDefinition("Pass", wfChainLength),
		wfTaskChain: chainDefinition("Task", wfChainLength),
		wfMixed:     mixedDefinition(),
	} {
		if _, err := wc.dyn.Resource(wfmeta.WorkflowResource).Namespace("default").Create(ctx, workflowObject(name, def), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create workflow %s: %w", name, err)
		}
	}
	if err := wc.waitUntil(ctx, 3*time.Minute, func() bool {
		all, ready := wc.fnPods()
		return all == 1 && ready == 1
	}); err != nil {
		all, ready := wc.fnPods()
		fmt.Fprintf(cfg.Progress, "function not settled on one Ready instance (%v): %d pods, %d ready; going on\n", err, all, ready)
	}
	for _, name := range []string{wfPassChain, wfTaskChain, wfMixed} {
		if err := wc.waitWorkflowReady(ctx, name, time.Minute); err != nil {
			return err
		}
	}

	// The function alone, warm.
	t0 = time.Now()
	if err := wc.callDirect(ctx); err != nil {
		return fmt.Errorf("first call of the function from the host: %w", err)
	}
	report.FirstCallMs = ms(time.Since(t0))
	for range 10 {
		if err := wc.callDirect(ctx); err != nil {
			return fmt.Errorf("warm-up call: %w", err)
		}
	}
	lat, elapsed, err := timeSequential(ctx, cfg.Calls, func(ctx context.Context, _ int) error { return wc.callDirect(ctx) })
	if err != nil {
		return fmt.Errorf("function alone: %w", err)
	}
	report.Rows = append(report.Rows, WorkflowsRow{Key: KeyWfFunction, LatencyRow: latencyRow(RowWfFunction, lat, 1, elapsed)})
	fmt.Fprintf(cfg.Progress, "function alone: %d calls, p50 %s\n", len(lat), formatLatency(report.Rows[len(report.Rows)-1].P50Ms))

	for _, ch := range []struct {
		workflow, stepKey, runKey, stepRow, runRow string
	}{
		{wfPassChain, KeyWfPassState, KeyWfPassRun, RowWfPassState, RowWfPassRun},
		{wfTaskChain, KeyWfTaskState, KeyWfTaskRun, RowWfTaskState, RowWfTaskRun},
	} {
		if err := wc.warmUp(ctx, ch.workflow); err != nil {
			return err
		}
		r := wc.measureChain(ctx, ch.workflow, cfg.Runs)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		first := ""
		if r.firstErr != nil {
			first = r.firstErr.Error()
		}
		report.Rows = append(report.Rows,
			WorkflowsRow{Key: ch.stepKey, LatencyRow: latencyRow(fmt.Sprintf(ch.stepRow, wfChainLength), r.perState, 1, 0), Errors: r.errors, FirstError: first},
			WorkflowsRow{Key: ch.runKey, LatencyRow: latencyRow(fmt.Sprintf(ch.runRow, wfChainLength), r.runs, 1, r.elapsed), Errors: r.errors})
		fmt.Fprintf(cfg.Progress, "%s: %d runs, per state p50 %s, run p50 %s, %d errors\n", ch.workflow, len(r.runs),
			formatLatency(ms(percentileOf(r.perState, 0.5))), formatLatency(ms(percentileOf(r.runs, 0.5))), r.errors)
	}

	return wc.measureThroughput(ctx, cfg, report)
}

// measureThroughput runs cfg.Concurrency clients for cfg.Duration, each
// creating a run of Pass -> Task -> Pass and waiting for its end, then
// the next.
func (wc *wfCluster) measureThroughput(ctx context.Context, cfg WorkflowsConfig, report *WorkflowsReport) error {
	if err := wc.warmUp(ctx, wfMixed); err != nil {
		return err
	}
	fmt.Fprintf(cfg.Progress, "%d clients running %s for %s\n", cfg.Concurrency, wfMixed, cfg.Duration)
	workers := make([]worker, cfg.Concurrency)
	for i := range workers {
		workers[i] = func(ctx context.Context) error {
			_, _, err := wc.runOnce(ctx, wfMixed)
			return err
		}
	}
	var maxReady atomic.Int64
	stopSampling, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			_, ready := wc.fnPods()
			if int64(ready) > maxReady.Load() {
				maxReady.Store(int64(ready))
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	p := runPhase(ctx, workers, cfg.Duration, 0)
	close(stopSampling)
	<-sampled
	if ctx.Err() != nil {
		return ctx.Err()
	}
	row := WorkflowsRow{Key: KeyWfMixed, LatencyRow: latencyRow(fmt.Sprintf(RowWfMixed, cfg.Concurrency, cfg.Duration), p.latencies, cfg.Concurrency, p.elapsed),
		Errors: p.errors, MaxReady: int(maxReady.Load())}
	if p.firstErr != nil {
		row.FirstError = p.firstErr.Error()
		if errors.Is(p.firstErr, context.Canceled) {
			return p.firstErr
		}
	}
	report.Rows = append(report.Rows, row)
	fmt.Fprintf(cfg.Progress, "%d clients for %s: %.1f runs/s, %d errors\n", cfg.Concurrency, cfg.Duration, row.PerSec, row.Errors)
	return nil
}
