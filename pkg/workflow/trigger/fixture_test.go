package trigger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
	"github.com/minik8s/minik8s/pkg/workflow/invoke"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

var (
	quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
	t0    = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// fakeInvoker answers every call with resp (or err); with block set,
// calls wait until it is closed or their context ends.
type fakeInvoker struct {
	mu    sync.Mutex
	calls []invocation
	resp  *invoke.Response
	err   error
	block chan struct{}
}

type invocation struct {
	namespace, name string
	body            string
	header          http.Header
}

func (f *fakeInvoker) Invoke(ctx context.Context, namespace, name string, body []byte, header http.Header) (*invoke.Response, error) {
	f.mu.Lock()
	f.calls = append(f.calls, invocation{namespace, name, string(body), header})
	block, resp, err := f.block, f.resp, f.err
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if resp == nil && err == nil {
		resp = &invoke.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"ok":true}`)}
	}
	return resp, err
}

func (f *fakeInvoker) Calls() []invocation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// newDynamic is a fake dynamic client that stamps what an apiserver
// would: names from generateName, UIDs, creation times (on clk) and a
// resourceVersion bumped by every create and update.
func newDynamic(t *testing.T, clk *testingclock.FakeClock) *dynamicfake.FakeDynamicClient {
	t.Helper()
	// Lists of unstructured objects: the typed lists of the minik8s
	// scheme cannot hold what the dynamic client stores.
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		configMaps: "ConfigMapList", namespaces: "NamespaceList",
		wfmeta.TriggerResource: "TriggerList", wfmeta.WorkflowResource: "WorkflowList",
		wfmeta.WorkflowRunResource: "WorkflowRunList", fnmeta.Resource: "FunctionList",
	})
	var (
		n  atomic.Int64
		mu sync.Mutex
	)
	stamp := func(action k8stesting.Action) (bool, runtime.Object, error) {
		var obj runtime.Object
		switch a := action.(type) {
		case k8stesting.CreateAction:
			obj = a.GetObject()
		case k8stesting.UpdateAction:
			obj = a.GetObject()
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return false, nil, nil
		}
		i := n.Add(1)
		if action.GetVerb() == "create" {
			if u.GetName() == "" && u.GetGenerateName() != "" {
				u.SetName(fmt.Sprintf("%s%05d", u.GetGenerateName(), i))
			}
			if u.GetUID() == "" {
				u.SetUID(types.UID(fmt.Sprintf("uid-%d", i)))
			}
			if ts := u.GetCreationTimestamp(); ts.IsZero() {
				u.SetCreationTimestamp(metav1.NewTime(clk.Now()))
			}
		}
		if action.GetVerb() == "create" {
			u.SetResourceVersion(fmt.Sprint(i + 1000))
			return false, nil, nil
		}
		// An update: optimistic concurrency, as the apiserver's.
		mu.Lock()
		defer mu.Unlock()
		gvr, ns := action.GetResource(), action.GetNamespace()
		cur, err := dyn.Tracker().Get(gvr, ns, u.GetName())
		if err != nil {
			return true, nil, err
		}
		if rv := u.GetResourceVersion(); rv != "" && rv != cur.(*unstructured.Unstructured).GetResourceVersion() {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), u.GetName(), errors.New("the object has been modified"))
		}
		u.SetResourceVersion(fmt.Sprint(i + 1000))
		if err := dyn.Tracker().Update(gvr, u, ns); err != nil {
			return true, nil, err
		}
		return true, u.DeepCopy(), nil
	}
	dyn.PrependReactor("create", "*", stamp)
	dyn.PrependReactor("update", "*", stamp)
	return dyn
}

type fixture struct {
	t   *testing.T
	ctx context.Context
	clk *testingclock.FakeClock
	dyn *dynamicfake.FakeDynamicClient
	rec *record.FakeRecorder
	inv *fakeInvoker
	c   *Controller
}

// newFixture builds a controller on a fake dynamic client holding a
// Workflow "wf" and a Function "fn" in default; start runs its
// informers (or the whole controller).
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clk := testingclock.NewFakeClock(t0)
	dyn := newDynamic(t, clk)
	kc := kit.NewContext(fake.NewClientset())
	kc.Clock, kc.Logger = clk, quiet
	rec := record.NewFakeRecorder(1000)
	kc.Recorder = rec
	mapper := apimeta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, apimeta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, apimeta.RESTScopeRoot)
	inv := &fakeInvoker{}
	c, err := New(kc, Config{Dynamic: dyn, Invoker: inv, Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: ctx, clk: clk, dyn: dyn, rec: rec, inv: inv, c: c}
	f.create(wfmeta.WorkflowResource, &minik8sv1.Workflow{
		TypeMeta:   metav1.TypeMeta{APIVersion: "minik8s.io/v1", Kind: "Workflow"},
		ObjectMeta: metav1.ObjectMeta{Name: "wf", Namespace: "default"},
		Spec:       minik8sv1.WorkflowSpec{Definition: minik8sv1.JSON{Raw: []byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`)}},
	})
	f.create(fnmeta.Resource, &minik8sv1.Function{
		TypeMeta:   metav1.TypeMeta{APIVersion: "minik8s.io/v1", Kind: "Function"},
		ObjectMeta: metav1.ObjectMeta{Name: "fn", Namespace: "default"},
	})
	return f
}

// startInformers runs the controller's informers only: the test calls
// Reconcile itself.
func (f *fixture) startInformers() {
	for _, inf := range []cache.SharedIndexInformer{f.c.triggers, f.c.runs, f.c.functions, f.c.workflows} {
		go inf.RunWithContext(f.ctx)
	}
	cache.WaitForCacheSync(f.ctx.Done(), f.c.triggers.HasSynced, f.c.runs.HasSynced, f.c.functions.HasSynced, f.c.workflows.HasSynced)
	f.settle()
}

// startAll runs the whole controller.
func (f *fixture) startAll() {
	go func() { _ = f.c.Start(f.ctx) }()
	f.eventually("caches synced", func() bool {
		return f.c.triggers.HasSynced() && f.c.runs.HasSynced() && f.c.functions.HasSynced() && f.c.workflows.HasSynced()
	})
}

func (f *fixture) create(gvr schema.GroupVersionResource, obj runtime.Object) *unstructured.Unstructured {
	f.t.Helper()
	u, err := toUnstructured(obj)
	if err != nil {
		f.t.Fatal(err)
	}
	out, err := f.dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(f.ctx, u, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

func (f *fixture) trigger(name string) *minik8sv1.Trigger {
	f.t.Helper()
	u, err := f.dyn.Resource(wfmeta.TriggerResource).Namespace("default").Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	tr, err := fromUnstructured[minik8sv1.Trigger](u)
	if err != nil {
		f.t.Fatal(err)
	}
	return tr
}

func (f *fixture) runs() []*minik8sv1.WorkflowRun {
	f.t.Helper()
	l, err := f.dyn.Resource(wfmeta.WorkflowRunResource).Namespace("default").List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []*minik8sv1.WorkflowRun
	for i := range l.Items {
		run, err := fromUnstructured[minik8sv1.WorkflowRun](&l.Items[i])
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, run)
	}
	slices.SortFunc(out, func(a, b *minik8sv1.WorkflowRun) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	return out
}

// settle waits until the trigger and run caches hold what the API holds.
func (f *fixture) settle() {
	f.t.Helper()
	for _, p := range []struct {
		gvr schema.GroupVersionResource
		inf cache.SharedIndexInformer
	}{{wfmeta.TriggerResource, f.c.triggers}, {wfmeta.WorkflowRunResource, f.c.runs}} {
		f.eventually("cache of "+p.gvr.Resource+" up to date", func() bool {
			l, err := f.dyn.Resource(p.gvr).List(f.ctx, metav1.ListOptions{})
			if err != nil {
				return false
			}
			want := map[string]string{}
			for _, u := range l.Items {
				want[u.GetNamespace()+"/"+u.GetName()] = u.GetResourceVersion()
			}
			got := map[string]string{}
			for _, o := range p.inf.GetStore().List() {
				u := o.(*unstructured.Unstructured)
				got[u.GetNamespace()+"/"+u.GetName()] = u.GetResourceVersion()
			}
			if len(got) != len(want) {
				return false
			}
			for k, v := range want {
				if got[k] != v {
					return false
				}
			}
			return true
		})
	}
}

// reconcile settles the caches and reconciles default/name.
func (f *fixture) reconcile(name string) time.Duration {
	f.t.Helper()
	f.settle()
	d, err := f.c.Reconcile(f.ctx, "default/"+name)
	if err != nil {
		f.t.Fatalf("Reconcile: %v", err)
	}
	return d
}

func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	if err := wait.PollUntilContextTimeout(f.ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		f.t.Fatalf("timed out waiting: %s", what)
	}
}

// setPhase sets a run's phase (and completion time) as the engine would.
func (f *fixture) setPhase(run *minik8sv1.WorkflowRun, phase string, completed time.Time) {
	f.t.Helper()
	u, err := f.dyn.Resource(wfmeta.WorkflowRunResource).Namespace(run.Namespace).Get(f.ctx, run.Name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, phase, "status", "phase")
	if wfmeta.Finished(phase) {
		_ = unstructured.SetNestedField(u.Object, completed.UTC().Format(time.RFC3339), "status", "completionTime")
	}
	if _, err := f.dyn.Resource(wfmeta.WorkflowRunResource).Namespace(run.Namespace).UpdateStatus(f.ctx, u, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// ownedRun creates a run of tr as the controller would, in phase.
func (f *fixture) ownedRun(tr *minik8sv1.Trigger, phase string, completed time.Time) *minik8sv1.WorkflowRun {
	f.t.Helper()
	run := newRun(tr, []byte(`{}`), "", nil)
	u := f.create(wfmeta.WorkflowRunResource, run)
	created, err := fromUnstructured[minik8sv1.WorkflowRun](u)
	if err != nil {
		f.t.Fatal(err)
	}
	if phase != "" {
		f.setPhase(created, phase, completed)
	}
	return created
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func readyOf(tr *minik8sv1.Trigger) metav1.Condition {
	if c := apimeta.FindStatusCondition(tr.Status.Conditions, ConditionReady); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func ptr[T any](v T) *T { return &v }

// newTrigger is a Trigger "name" in default created at t0 targeting the
// workflow "wf" (or the function, when fn is set).
func newTrigger(name string, fn bool) *minik8sv1.Trigger {
	tr := &minik8sv1.Trigger{
		TypeMeta:   metav1.TypeMeta{APIVersion: "minik8s.io/v1", Kind: "Trigger"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: metav1.NewTime(t0), Generation: 1},
		Spec:       minik8sv1.TriggerSpec{Target: minik8sv1.TriggerTarget{Workflow: "wf"}, Payload: minik8sv1.NewJSON([]byte(`{"hello":"world"}`))},
	}
	if fn {
		tr.Spec.Target = minik8sv1.TriggerTarget{Function: "fn"}
	}
	return tr
}
