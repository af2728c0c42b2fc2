package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
)

// Steps of a cold start, in the order they happen, as the benchmark's
// watches see them (the times an event arrives, relative to the request
// being sent). The API's own timestamps count whole seconds, too coarse.
const (
	StepScaled    = "Deployment scaled 0 -> 1 (router pokes the autoscaler)"
	StepCreated   = "pod created (ReplicaSet controller)"
	StepScheduled = "pod scheduled (nodeName set)"
	StepRunning   = "container running (kubelet: sandbox, CNI, container start)"
	StepResponse  = "response complete (router probes the pod itself)"
	StepReady     = "pod Ready (kubelet's 1s readiness probe)"
)

// coldSteps is the order the steps are reported in; each step's duration
// is from the one before (Ready from the container running).
var coldSteps = []string{StepScaled, StepCreated, StepScheduled, StepRunning, StepResponse, StepReady}

// fnPod is what the watch saw of one pod of the function, each time the
// first event showing it.
type fnPod struct {
	name                            string
	seen, scheduled, started, ready time.Time
}

// fnTracker records the watch events of the function's pods and
// Deployment, timed as they arrive, and pokes changed on every event.
type fnTracker struct {
	mu   sync.Mutex
	pods map[types.UID]*fnPod
	// scaledUp are the times the Deployment was seen going from zero
	// replicas to more.
	scaledUp []time.Time
	replicas int32
	changed  chan struct{}
}

func newFnTracker() *fnTracker {
	return &fnTracker{pods: map[types.UID]*fnPod{}, changed: make(chan struct{}, 1)}
}

func (t *fnTracker) poke() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

func (t *fnTracker) observe(obj any) {
	now := time.Now()
	defer t.poke()
	t.mu.Lock()
	defer t.mu.Unlock()
	switch o := obj.(type) {
	case *corev1.Pod:
		p := t.pods[o.UID]
		if p == nil {
			p = &fnPod{name: o.Name, seen: now}
			t.pods[o.UID] = p
		}
		if p.scheduled.IsZero() && o.Spec.NodeName != "" {
			p.scheduled = now
		}
		if p.started.IsZero() {
			for _, cs := range o.Status.ContainerStatuses {
				if cs.State.Running != nil {
					p.started = now
				}
			}
		}
		if p.ready.IsZero() && podRunningReady(o) {
			p.ready = now
		}
	case *appsv1.Deployment:
		r := int32(1)
		if o.Spec.Replicas != nil {
			r = *o.Spec.Replicas
		}
		if t.replicas == 0 && r > 0 {
			t.scaledUp = append(t.scaledUp, now)
		}
		t.replicas = r
	}
}

func (t *fnTracker) forgetObject(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if _, ok := obj.(*appsv1.Deployment); ok {
		t.mu.Lock()
		t.replicas = 0
		t.mu.Unlock()
	}
	t.poke()
}

// since is the steps of the cold start whose request was sent at t0 and
// answered at t1: the first scale-up and the first pod seen after t0.
func (t *fnTracker) since(t0, t1 time.Time) map[string]time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]time.Duration{StepResponse: t1.Sub(t0)}
	for _, at := range t.scaledUp {
		if !at.Before(t0) {
			out[StepScaled] = at.Sub(t0)
			break
		}
	}
	var first *fnPod
	for _, p := range t.pods {
		if !p.seen.Before(t0) && (first == nil || p.seen.Before(first.seen)) {
			first = p
		}
	}
	if first == nil {
		return out
	}
	for step, at := range map[string]time.Time{StepCreated: first.seen, StepScheduled: first.scheduled, StepRunning: first.started, StepReady: first.ready} {
		if !at.IsZero() {
			out[step] = at.Sub(t0)
		}
	}
	return out
}

// readyAfter is whether the first pod seen after t0 has been seen Ready.
func (t *fnTracker) readyAfter(t0 time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.pods {
		if !p.seen.Before(t0) && !p.ready.IsZero() {
			return true
		}
	}
	return false
}

// fnPods counts the function's pods in the watch's store: all of them,
// and the Ready ones not terminating.
func (c *fnCluster) fnPods() (all, ready int) {
	for _, obj := range c.pods.GetStore().List() {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			continue
		}
		all++
		if p.DeletionTimestamp == nil && podRunningReady(p) {
			ready++
		}
	}
	return all, ready
}

// replicas is the function's Deployment's spec.replicas, -1 when there
// is none.
func (c *fnCluster) replicas() int32 {
	obj, ok, _ := c.deployments.GetStore().GetByKey("default/" + fnmeta.DeploymentName(benchFunction))
	d, _ := obj.(*appsv1.Deployment)
	if !ok || d == nil {
		return -1
	}
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// waitZero waits until the function has no pod at all (not even a
// terminating one) and its Deployment asks for none.
func (c *fnCluster) waitZero(ctx context.Context) error {
	err := c.waitUntil(ctx, 3*time.Minute, func() bool {
		all, _ := c.fnPods()
		return all == 0 && c.replicas() == 0
	})
	if err != nil {
		all, ready := c.fnPods()
		return fmt.Errorf("function scaled to zero: %w (%d pods, %d ready, replicas %d)", err, all, ready, c.replicas())
	}
	return nil
}

// fnResponse is one call's outcome.
type fnResponse struct {
	cold     bool
	instance string
}

// call sends one request to the function through the router and reads
// the whole answer, which must be the function's.
func (c *fnCluster) call(ctx context.Context) (fnResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.routerURL+fnmeta.Path("default", benchFunction), strings.NewReader(benchBody))
	if err != nil {
		return fnResponse{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fnResponse{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fnResponse{}, err
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), benchAnswer) {
		return fnResponse{}, fmt.Errorf("answer %d %q", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return fnResponse{cold: resp.Header.Get("X-Minik8s-Cold-Start") == "true", instance: resp.Header.Get("X-Minik8s-Instance")}, nil
}

func (c *fnCluster) functionObject() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "minik8s.io/v1", "kind": "Function",
		"metadata": map[string]any{"name": benchFunction, "namespace": "default"},
		"spec": map[string]any{
			"runtime": benchRuntime,
			"source":  map[string]any{"inline": benchCode},
			"scale": map[string]any{"minScale": int64(0), "maxScale": int64(benchMaxScale), "target": int64(benchTarget),
				"scaleToZeroAfter": benchScaleToZeroAfter.String()},
		},
	}}
}

// waitFunctionReady waits until the function's Ready condition is True
// for its generation with an image.
func (c *fnCluster) waitFunctionReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		u, err := c.dyn.Resource(fnmeta.Resource).Namespace("default").Get(ctx, benchFunction, metav1.GetOptions{})
		if err == nil {
			gen := u.GetGeneration()
			img, _, _ := unstructured.NestedString(u.Object, "status", "image")
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, cond := range conds {
				m, _ := cond.(map[string]any)
				if m["type"] != "Ready" {
					continue
				}
				og, _ := m["observedGeneration"].(int64)
				last = fmt.Sprintf("Ready=%v %v: %v", m["status"], m["reason"], m["message"])
				if m["status"] == "True" && og == gen && img != "" {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("function %s not Ready after %s (last: %s)", benchFunction, timeout, last)
}

// setMinScale patches the function's minScale.
func (c *fnCluster) setMinScale(ctx context.Context, n int) error {
	patch := fmt.Sprintf(`{"spec":{"scale":{"minScale":%d}}}`, n)
	_, err := c.dyn.Resource(fnmeta.Resource).Namespace("default").Patch(ctx, benchFunction, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("patch minScale %d: %w", n, err)
	}
	return nil
}

// measureAll builds the function, then measures cold starts with and
// without the image on the node, the scale-up from zero under load, warm
// requests and the requests per second, into report.
func (c *fnCluster) measureAll(ctx context.Context, cfg FunctionsConfig, report *FunctionsReport) error {
	t0 := time.Now()
	if _, err := c.dyn.Resource(fnmeta.Resource).Namespace("default").Create(ctx, c.functionObject(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create function %s: %w", benchFunction, err)
	}
	if err := c.waitFunctionReady(ctx, 5*time.Minute); err != nil {
		return err
	}
	report.BuildMs = ms(time.Since(t0))
	fmt.Fprintf(cfg.Progress, "function %s checked, built and pushed in %s\n", benchFunction, formatLatency(report.BuildMs))

	// The first call pulls the image onto the node: not counted.
	t0 = time.Now()
	if _, err := c.call(ctx); err != nil {
		return fmt.Errorf("first call: %w", err)
	}
	report.FirstCallMs = ms(time.Since(t0))
	fmt.Fprintf(cfg.Progress, "first call (image pulled by the node, not counted) answered in %s\n", formatLatency(report.FirstCallMs))

	cold, steps, notCold, err := c.coldStarts(ctx, cfg, cfg.Cold, false, nil)
	if err != nil {
		return err
	}
	report.Rows = append(report.Rows, FunctionsRow{LatencyRow: latencyRow(RowFnCold, cold, 1, 0), NotCold: notCold})
	report.ColdSteps = summariseSteps(steps)

	if cfg.ColdPull > 0 {
		var pulled []pulledImages
		lat, _, notCold, err := c.coldStarts(ctx, cfg, cfg.ColdPull, true, &pulled)
		if err != nil {
			return err
		}
		row := FunctionsRow{LatencyRow: latencyRow(RowFnColdPull, lat, 1, 0), NotCold: notCold}
		for _, p := range pulled {
			row.ImageBytes = max(row.ImageBytes, p.bytes)
			row.KeptBytes = max(row.KeptBytes, p.keptBytes)
		}
		report.Rows = append(report.Rows, row)
	}

	if err := c.measureScaleUp(ctx, cfg, report); err != nil {
		return err
	}

	// A running instance for the warm and throughput phases.
	if err := c.setMinScale(ctx, 1); err != nil {
		return err
	}
	fmt.Fprintf(cfg.Progress, "minScale 1: waiting for the function to settle on one instance\n")
	settled := c.waitUntil(ctx, 2*time.Minute, func() bool {
		all, ready := c.fnPods()
		return all == 1 && ready == 1 && c.replicas() == 1
	})
	if settled != nil {
		all, ready := c.fnPods()
		fmt.Fprintf(cfg.Progress, "not settled (%v): %d pods, %d ready; measuring anyway\n", settled, all, ready)
	}
	for range 10 { // warm-up, not counted
		if _, err := c.call(ctx); err != nil {
			return fmt.Errorf("warm-up call: %w", err)
		}
	}
	warm, elapsed, err := timeSequential(ctx, cfg.Warm, func(ctx context.Context, _ int) error {
		_, err := c.call(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("warm requests: %w", err)
	}
	report.Rows = append(report.Rows, FunctionsRow{LatencyRow: latencyRow(RowFnWarm, warm, 1, elapsed)})
	fmt.Fprintf(cfg.Progress, "%d warm requests, p50 %s\n", len(warm), formatLatency(report.Rows[len(report.Rows)-1].P50Ms))

	return c.measureThroughput(ctx, cfg, report)
}

// coldStarts times n cold starts: each waits until the function has no
// pod left, deletes its image from the node when pull is set, and times
// one request from its sending to the end of its answer.
func (c *fnCluster) coldStarts(ctx context.Context, cfg FunctionsConfig, n int, pull bool, pulled *[]pulledImages) (lat []time.Duration, steps []map[string]time.Duration, notCold int, err error) {
	what := "cold start"
	if pull {
		what = "cold start, image deleted from the node"
	}
	for i := range n {
		if err := c.waitZero(ctx); err != nil {
			return nil, nil, 0, fmt.Errorf("%s %d: %w", what, i+1, err)
		}
		if pull {
			p, err := deleteRegistryImages(ctx, c.containerd, c.regAddr)
			if err != nil {
				return nil, nil, 0, err
			}
			*pulled = append(*pulled, p)
		}
		t0 := time.Now()
		r, err := c.call(ctx)
		t1 := time.Now()
		if err != nil {
			return nil, nil, 0, fmt.Errorf("%s %d: %w", what, i+1, err)
		}
		if !r.cold {
			notCold++
		}
		lat = append(lat, t1.Sub(t0))
		// The kubelet's Ready may come after the answer: wait a little for
		// it, so the steps are complete (not timed).
		_ = c.waitUntil(ctx, 5*time.Second, func() bool { return c.tracker.readyAfter(t0) })
		steps = append(steps, c.tracker.since(t0, t1))
		fmt.Fprintf(cfg.Progress, "%s %d/%d: %s\n", what, i+1, n, formatLatency(ms(t1.Sub(t0))))
	}
	return lat, steps, notCold, nil
}

// summariseSteps is each step's median time since the request was sent,
// and the median of its duration from the step before.
func summariseSteps(cycles []map[string]time.Duration) []StepRow {
	var rows []StepRow
	for i, step := range coldSteps {
		prev := ""
		switch {
		case step == StepReady:
			prev = StepRunning
		case i > 0:
			prev = coldSteps[i-1]
		}
		var at, d []time.Duration
		for _, c := range cycles {
			v, ok := c[step]
			if !ok {
				continue
			}
			at = append(at, v)
			if prev == "" {
				d = append(d, v)
			} else if p, ok := c[prev]; ok {
				d = append(d, v-p)
			}
		}
		slices.Sort(at)
		slices.Sort(d)
		rows = append(rows, StepRow{Step: step, N: len(at), SinceSendP50Ms: ms(percentile(at, 0.5)), StepP50Ms: ms(percentile(d, 0.5))})
	}
	return rows
}

// loadStats is what closed-loop clients saw.
type loadStats struct {
	mu        sync.Mutex
	calls     atomic.Int64
	errors    int
	firstErr  error
	instances map[string]int
}

// runLoad runs clients closed-loop callers until stop closes.
func (c *fnCluster) runLoad(ctx context.Context, clients int, stop <-chan struct{}) *loadStats {
	s := &loadStats{instances: map[string]int{}}
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				r, err := c.call(ctx)
				s.calls.Add(1)
				s.mu.Lock()
				if err != nil {
					s.errors++
					if s.firstErr == nil {
						s.firstErr = err
					}
				} else {
					s.instances[r.instance]++
				}
				s.mu.Unlock()
			}
		})
	}
	wg.Wait()
	return s
}

// measureScaleUp puts cfg.Concurrency closed-loop clients on the function
// at zero instances and times until 2, then N = ceil(concurrency/target)
// instances are Ready; the load goes on 3s after that (or until 90s) to
// see the most instances it gets.
func (c *fnCluster) measureScaleUp(ctx context.Context, cfg FunctionsConfig, report *FunctionsReport) error {
	want := (cfg.Concurrency + benchTarget - 1) / benchTarget
	want = min(want, benchMaxScale)
	if err := c.waitZero(ctx); err != nil {
		return fmt.Errorf("scale-up: %w", err)
	}
	fmt.Fprintf(cfg.Progress, "scale-up: %d clients on the function at zero instances, until %d are Ready\n", cfg.Concurrency, want)
	stop := make(chan struct{})
	t0 := time.Now()
	var load *loadStats
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		load = c.runLoad(ctx, cfg.Concurrency, stop)
	}()
	s := ScaleUp{Clients: cfg.Concurrency, Want: want}
	var until time.Time
	err := c.waitUntil(ctx, 90*time.Second, func() bool {
		all, ready := c.fnPods()
		s.MaxReady, s.MaxPods = max(s.MaxReady, ready), max(s.MaxPods, all)
		now := time.Now()
		if ready >= 2 && s.ToTwoMs == 0 {
			s.ToTwoMs = ms(now.Sub(t0))
		}
		if ready >= want && s.ToWantMs == 0 {
			s.ToWantMs = ms(now.Sub(t0))
			until = now.Add(3 * time.Second)
		}
		return !until.IsZero() && now.After(until)
	})
	close(stop)
	<-loaded
	s.Seconds = time.Since(t0).Seconds()
	s.Requests, s.Errors = int(load.calls.Load()), load.errors
	if load.firstErr != nil {
		s.FirstError = load.firstErr.Error()
	}
	if err != nil {
		s.Note = fmt.Sprintf("%d Ready instances not reached: %v", want, err)
	}
	report.ScaleUp = &s
	fmt.Fprintf(cfg.Progress, "scale-up: 2 Ready after %s, %d after %s, at most %d Ready (%d pods), %d requests, %d errors\n",
		formatLatency(s.ToTwoMs), want, formatLatency(s.ToWantMs), s.MaxReady, s.MaxPods, s.Requests, s.Errors)
	return ctx.Err()
}

// measureThroughput runs cfg.Concurrency closed-loop clients for
// cfg.Duration on the function with minScale 1.
func (c *fnCluster) measureThroughput(ctx context.Context, cfg FunctionsConfig, report *FunctionsReport) error {
	var (
		mu        sync.Mutex
		instances = map[string]bool{}
		maxReady  int
	)
	workers := make([]worker, cfg.Concurrency)
	for i := range workers {
		workers[i] = func(ctx context.Context) error {
			r, err := c.call(ctx)
			if err == nil {
				mu.Lock()
				instances[r.instance] = true
				mu.Unlock()
			}
			return err
		}
	}
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			_, ready := c.fnPods()
			mu.Lock()
			maxReady = max(maxReady, ready)
			mu.Unlock()
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
	row := FunctionsRow{LatencyRow: latencyRow(fmt.Sprintf(RowFnConcurrent, cfg.Concurrency, cfg.Duration), p.latencies, cfg.Concurrency, p.elapsed),
		Errors: p.errors, Instances: len(instances), MaxReady: maxReady}
	if p.firstErr != nil {
		row.FirstError = p.firstErr.Error()
	}
	report.Rows = append(report.Rows, row)
	fmt.Fprintf(cfg.Progress, "%d clients for %s: %.0f requests/s, %d errors, %d instances answered\n",
		cfg.Concurrency, cfg.Duration, row.PerSec, row.Errors, row.Instances)
	return nil
}
