package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/workflow/engine"
	"github.com/minik8s/minik8s/pkg/workflow/invoke"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// wfFunc plays one function: it gets the request's context (cancelled
// when the engine drops the call) and body, and answers a status and a
// value written as JSON.
type wfFunc func(ctx context.Context, in json.RawMessage) (status int, out any)

// wfFunctions is the function router as the engine sees it: it answers
// POST /function/<ns>/<name> with the Go function the test registered.
type wfFunctions struct {
	srv *httptest.Server
	mu  sync.Mutex
	fns map[string]wfFunc
}

func wfStartFunctions(t *testing.T) *wfFunctions {
	t.Helper()
	f := &wfFunctions{fns: map[string]wfFunc{}}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *wfFunctions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.URL.Path, "/function/")
	f.mu.Lock()
	fn := f.fns[key]
	f.mu.Unlock()
	if r.Method != http.MethodPost || fn == nil {
		http.Error(w, `{"error":"no function `+key+`"}`, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	status, out := fn(r.Context(), body)
	b, err := json.Marshal(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func wfOK(v any) (int, any) { return http.StatusOK, v }

// wfRaise is a function's unhandled exception, as the Python runtime
// reports it.
func wfRaise(errorType, msg string) (int, any) {
	return http.StatusInternalServerError, map[string]string{"errorType": errorType, "errorMessage": msg}
}

// wfNumber is a function's input read as a number (0 if it is not one).
func wfNumber(in json.RawMessage) float64 {
	var n float64
	_ = json.Unmarshal(in, &n)
	return n
}

// wfGauge counts the calls of a function in flight and the most at once.
type wfGauge struct{ cur, peak, calls atomic.Int32 }

func (g *wfGauge) enter() {
	g.calls.Add(1)
	n := g.cur.Add(1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (g *wfGauge) exit() { g.cur.Add(-1) }

// wfHang is a function that answers only after d, counting the calls it
// got and those whose request was cancelled before then.
type wfHang struct {
	d                  time.Duration
	started, cancelled atomic.Int32
}

func (h *wfHang) fn(ctx context.Context, in json.RawMessage) (int, any) {
	h.started.Add(1)
	select {
	case <-ctx.Done():
		h.cancelled.Add(1)
		return http.StatusServiceUnavailable, map[string]string{"error": "cancelled"}
	case <-time.After(h.d):
		return wfOK(in)
	}
}

// wfEngine is the workflow engine (the run and workflow controllers) of
// a test, with its functions played by fns.
type wfEngine struct {
	c   *cluster
	dyn dynamic.Interface
	fns *wfFunctions
}

func wfNewEngine(t *testing.T, c *cluster, fns *wfFunctions) *wfEngine {
	return &wfEngine{c: c, dyn: dynamic.NewForConfigOrDie(c.config), fns: fns}
}

// start runs the engine's controllers on a fresh kit.Context until stop
// is called or the test ends.
func (e *wfEngine) start(t *testing.T) (stop func()) {
	t.Helper()
	kc := kit.NewContext(e.c.client)
	kc.Dynamic = e.dyn
	kc.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	runs, err := engine.NewRunController(kc, engine.Config{Invoker: &invoke.Router{Base: e.fns.srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	workflows, err := engine.NewWorkflowController(kc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- kit.Run(ctx, kc, kit.Part{Name: "workflowrun", Start: runs.Start}, kit.Part{Name: "workflow", Start: workflows.Start})
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("workflow engine stopped: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// wfNS is one test's namespace: its functions, workflows and runs.
type wfNS struct {
	t  *testing.T
	e  *wfEngine
	ns string
}

func (e *wfEngine) namespace(t *testing.T, name string) *wfNS {
	t.Helper()
	createNamespace(t, ctxT(t), e.c, name)
	return &wfNS{t: t, e: e, ns: name}
}

// fn makes name a function of the namespace.
func (n *wfNS) fn(name string, f wfFunc) {
	n.e.fns.mu.Lock()
	defer n.e.fns.mu.Unlock()
	n.e.fns.fns[n.ns+"/"+name] = f
}

func (n *wfNS) create(gvr, kind string, obj any) {
	n.t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		n.t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(minik8sv1.SchemeGroupVersion.String())
	u.SetKind(kind)
	res := minik8sv1.SchemeGroupVersion.WithResource(gvr)
	if _, err := n.e.dyn.Resource(res).Namespace(n.ns).Create(ctxT(n.t), u, metav1.CreateOptions{}); err != nil {
		n.t.Fatalf("create %s %s/%s: %v", kind, n.ns, u.GetName(), err)
	}
}

// wfJSON is def (JSON, any layout) compacted.
func wfJSON(t *testing.T, def string) *minik8sv1.JSON {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(def)); err != nil {
		t.Fatalf("bad JSON %s: %v", def, err)
	}
	return &minik8sv1.JSON{Raw: buf.Bytes()}
}

// workflow creates a Workflow with the definition def.
func (n *wfNS) workflow(name, def string) {
	n.t.Helper()
	n.create("workflows", "Workflow", &minik8sv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: minik8sv1.WorkflowSpec{Definition: *wfJSON(n.t, def)}})
}

// run starts a run of the Workflow called workflow with input.
func (n *wfNS) run(name, workflow, input string) {
	n.t.Helper()
	n.create("workflowruns", "WorkflowRun", &minik8sv1.WorkflowRun{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: minik8sv1.WorkflowRunSpec{Workflow: workflow, Input: wfJSON(n.t, input)}})
}

// runInline starts a run of the state machine def with input.
func (n *wfNS) runInline(name, def, input string) {
	n.t.Helper()
	n.create("workflowruns", "WorkflowRun", &minik8sv1.WorkflowRun{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: minik8sv1.WorkflowRunSpec{Definition: wfJSON(n.t, def), Input: wfJSON(n.t, input)}})
}

func (n *wfNS) get(ctx context.Context, name string) (*minik8sv1.WorkflowRun, error) {
	u, err := n.e.dyn.Resource(wfmeta.WorkflowRunResource).Namespace(n.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	run := &minik8sv1.WorkflowRun{}
	return run, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, run)
}

// runs are the namespace's runs with the label selector sel.
func (n *wfNS) runs(sel string) []minik8sv1.WorkflowRun {
	n.t.Helper()
	list, err := n.e.dyn.Resource(wfmeta.WorkflowRunResource).Namespace(n.ns).List(ctxT(n.t), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		n.t.Fatal(err)
	}
	out := make([]minik8sv1.WorkflowRun, len(list.Items))
	for i := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &out[i]); err != nil {
			n.t.Fatal(err)
		}
	}
	return out
}

// children are the runs a run started, by the parent label.
func (n *wfNS) children(parent string) []minik8sv1.WorkflowRun {
	n.t.Helper()
	return n.runs(wfmeta.ParentLabel + "=" + parent)
}

// wait polls run name until cond holds (30s at most) and returns it.
func (n *wfNS) wait(name, what string, cond func(*minik8sv1.WorkflowRun) bool) *minik8sv1.WorkflowRun {
	n.t.Helper()
	var run *minik8sv1.WorkflowRun
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := n.get(ctx, name)
		if err != nil {
			return false, nil
		}
		run = r
		return cond(r), nil
	})
	if err != nil {
		n.t.Fatalf("run %s/%s: waiting for %s: %v\nlast seen: %s", n.ns, name, what, err, wfDump(run))
	}
	return run
}

// finished waits for run name to end in phase.
func (n *wfNS) finished(name, phase string) *minik8sv1.WorkflowRun {
	n.t.Helper()
	run := n.wait(name, "it to end", func(r *minik8sv1.WorkflowRun) bool { return wfmeta.Finished(r.Status.Phase) })
	if run.Status.Phase != phase {
		n.t.Fatalf("run %s/%s ended %s, want %s:\n%s", n.ns, name, run.Status.Phase, phase, wfDump(run))
	}
	if run.Status.StartTime == nil || run.Status.CompletionTime == nil {
		n.t.Errorf("run %s/%s: startTime %v, completionTime %v: want both", n.ns, name, run.Status.StartTime, run.Status.CompletionTime)
	}
	return run
}

func wfDump(run *minik8sv1.WorkflowRun) string {
	if run == nil {
		return "<none>"
	}
	b, _ := json.MarshalIndent(run.Status, "", "  ")
	return string(b)
}

// wfEqualJSON fails t unless got holds the same JSON value as want.
func wfEqualJSON(t *testing.T, what string, got *minik8sv1.JSON, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got.Bytes(), &g); err != nil {
		t.Errorf("%s: %s is not JSON: %v", what, got.Bytes(), err)
		return
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want %s is not JSON: %v", what, want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s = %s, want %s", what, got.Bytes(), want)
	}
}

// wfStates is the history as Name:Type, in order.
func wfStates(run *minik8sv1.WorkflowRun) []string {
	var out []string
	for _, h := range run.Status.History {
		out = append(out, h.Name+":"+h.Type)
	}
	return out
}

func wfCheckStates(t *testing.T, run *minik8sv1.WorkflowRun, want ...string) {
	t.Helper()
	if got := wfStates(run); !reflect.DeepEqual(got, want) {
		t.Errorf("run %s: history %v, want %v", run.Name, got, want)
	}
}

// wfCheckOwned fails t unless child is controlled by parent and labelled
// as its child.
func wfCheckOwned(t *testing.T, child *minik8sv1.WorkflowRun, parent *minik8sv1.WorkflowRun) {
	t.Helper()
	ref := metav1.GetControllerOf(child)
	if ref == nil || ref.Kind != "WorkflowRun" || ref.Name != parent.Name || ref.UID != parent.UID {
		t.Errorf("child run %s: controller %+v, want WorkflowRun %s (%s)", child.Name, ref, parent.Name, parent.UID)
	}
	if got := child.Labels[wfmeta.ParentLabel]; got != parent.Name {
		t.Errorf("child run %s: label %s=%q, want %q", child.Name, wfmeta.ParentLabel, got, parent.Name)
	}
}

// wfEventually polls cond for 15s.
func wfEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 15*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
