package function

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
)

// fakeBuilder stands for the image builder: code containing "syntax"
// fails its check; images are named after the revision.
type fakeBuilder struct {
	mu      sync.Mutex
	builds  []Revision
	deleted []string
}

func (b *fakeBuilder) Check(_ context.Context, files map[string][]byte, _ string) error {
	for name, f := range files {
		if strings.Contains(string(f), "syntax") {
			return &BuildError{Reason: "BuildFailed", Message: "SyntaxError: invalid syntax (" + name + ", line 1)"}
		}
	}
	return nil
}

func (b *fakeBuilder) Build(_ context.Context, r Revision) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.builds = append(b.builds, r)
	return fmt.Sprintf("registry/%s@sha256:%d", fnmeta.Repository(r.Namespace, r.Name), r.Number), nil
}

func (b *fakeBuilder) Delete(_ context.Context, ns, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.deleted = append(b.deleted, ns+"/"+name)
	return nil
}

type fixture struct {
	t       *testing.T
	ctx     context.Context
	c       *Controller
	builder *fakeBuilder
	dyn     *dynamicfake.FakeDynamicClient
	cs      *fake.Clientset
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	scheme := runtime.NewScheme()
	if err := minik8sv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{fnmeta.Resource: "FunctionList"})
	cs := fake.NewClientset(objs...)
	kc := kit.NewContext(cs)
	kc.Recorder = record.NewFakeRecorder(100)
	b := &fakeBuilder{}
	inf := NewFunctionInformer(dyn)
	c, err := New(kc, Config{Dynamic: dyn, Functions: inf, Builder: b})
	if err != nil {
		t.Fatal(err)
	}
	go inf.Run(ctx.Done())
	kc.Factory.Start(ctx.Done())
	kc.Factory.WaitForCacheSync(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	return &fixture{t: t, ctx: ctx, c: c, builder: b, dyn: dyn, cs: cs}
}

func (f *fixture) create(fn *minik8sv1.Function) {
	f.t.Helper()
	u, err := toUnstructured(fn)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.dyn.Resource(fnmeta.Resource).Namespace(fn.Namespace).Create(f.ctx, u, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) get(name string) *minik8sv1.Function {
	f.t.Helper()
	u, err := f.dyn.Resource(fnmeta.Resource).Namespace("default").Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	fn, err := toFunction(u)
	if err != nil {
		f.t.Fatal(err)
	}
	return fn
}

// change edits the function as a user would: the generation moves on.
func (f *fixture) change(name string, edit func(*minik8sv1.Function)) {
	f.t.Helper()
	fn := f.get(name)
	edit(fn)
	fn.Generation++
	if err := f.c.update(f.ctx, fn); err != nil {
		f.t.Fatal(err)
	}
}

// settle syncs the function until its status stops changing and the
// caches have caught up with what the sync wrote.
func (f *fixture) settle(name string) *minik8sv1.Function {
	f.t.Helper()
	var last string
	for range 50 {
		if err := f.c.sync(f.ctx, "default/"+name); err != nil {
			f.t.Fatalf("sync: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
		fn := f.get(name)
		now := fmt.Sprintf("%d %v %+v", fn.Generation, fn.Finalizers, fn.Status)
		if cached, ok := f.c.functions.Get("default", name); ok && now == last &&
			fmt.Sprintf("%d %v %+v", cached.Generation, cached.Finalizers, cached.Status) == now {
			return fn
		}
		last = now
	}
	f.t.Fatal("the function's status never settled")
	return nil
}

func greet(code string) *minik8sv1.Function {
	return &minik8sv1.Function{
		ObjectMeta: metav1.ObjectMeta{Name: "greet", Namespace: "default", UID: "uid-greet", Generation: 1},
		Spec: minik8sv1.FunctionSpec{Runtime: "python3", Handler: "main.handle", Source: minik8sv1.FunctionSource{Inline: code},
			Scale: minik8sv1.FunctionScale{MinScale: ptr.To[int32](0), MaxScale: ptr.To[int32](10)}},
	}
}

func ready(fn *minik8sv1.Function) metav1.Condition {
	for _, c := range fn.Status.Conditions {
		if c.Type == ConditionReady {
			return c
		}
	}
	return metav1.Condition{}
}

func TestRevisions(t *testing.T) {
	f := newFixture(t)
	f.create(greet("def handle(e): return 1\n"))
	fn := f.settle("greet")
	if !slices.Contains(fn.Finalizers, Finalizer) {
		t.Errorf("finalizers %v, want %s", fn.Finalizers, Finalizer)
	}
	if fn.Status.Revision != 1 || !strings.HasSuffix(fn.Status.Image, ":1") || ready(fn).Status != metav1.ConditionTrue ||
		fn.Status.URL != "http://minik8s-gateway.kube-system/function/default/greet" {
		t.Fatalf("after the first build: %+v", fn.Status)
	}
	if got := f.builder.builds[0].Files; string(got["main.py"]) != "def handle(e): return 1\n" {
		t.Errorf("built files %v, want main.py", got)
	}
	dep, err := f.cs.AppsV1().Deployments("default").Get(f.ctx, "fn-greet", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *dep.Spec.Replicas != 0 || dep.Spec.Template.Spec.Containers[0].Image != fn.Status.Image ||
		dep.Spec.Template.Labels[fnmeta.RevisionLabel] != "1" || dep.Labels[fnmeta.FunctionLabel] != "greet" ||
		!metav1.IsControlledBy(dep, fn) {
		t.Errorf("deployment: replicas %d, template %+v, labels %v", *dep.Spec.Replicas, dep.Spec.Template, dep.Labels)
	}
	if svc, err := f.cs.CoreV1().Services("default").Get(f.ctx, "fn-greet", metav1.GetOptions{}); err != nil || svc.Spec.Selector[fnmeta.FunctionLabel] != "greet" {
		t.Errorf("service: %+v %v", svc, err)
	}

	// The autoscaler's replicas stay; scale bounds make no revision.
	dep.Spec.Replicas = ptr.To[int32](3)
	if _, err := f.cs.AppsV1().Deployments("default").Update(f.ctx, dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.change("greet", func(fn *minik8sv1.Function) { fn.Spec.Scale.MaxScale = ptr.To[int32](4) })
	if fn := f.settle("greet"); fn.Status.Revision != 1 || len(f.builder.builds) != 1 {
		t.Errorf("a scale change built revision %d (%d builds)", fn.Status.Revision, len(f.builder.builds))
	}

	// New code: revision 2, the template follows, the replicas stay.
	f.change("greet", func(fn *minik8sv1.Function) { fn.Spec.Source.Inline = "def handle(e): return 2\n" })
	fn = f.settle("greet")
	if fn.Status.Revision != 2 || !strings.HasSuffix(fn.Status.Image, ":2") {
		t.Fatalf("after new code: %+v", fn.Status)
	}
	waitFor(t, "the deployment at revision 2", func() bool {
		dep, err := f.cs.AppsV1().Deployments("default").Get(f.ctx, "fn-greet", metav1.GetOptions{})
		return err == nil && dep.Spec.Template.Labels[fnmeta.RevisionLabel] == "2" && *dep.Spec.Replicas == 3
	})

	// Code that fails its check: Ready=False with the message, revision 2 keeps serving.
	f.change("greet", func(fn *minik8sv1.Function) { fn.Spec.Source.Inline = "def handle(e) syntax\n" })
	fn = f.settle("greet")
	if c := ready(fn); c.Status != metav1.ConditionFalse || c.Reason != "BuildFailed" || !strings.Contains(c.Message, "SyntaxError") ||
		fn.Status.Revision != 2 || !strings.HasSuffix(fn.Status.Image, ":2") {
		t.Errorf("after a syntax error: %+v", fn.Status)
	}

	// Env is a setting of the instance: a new revision.
	f.change("greet", func(fn *minik8sv1.Function) {
		fn.Spec.Source.Inline = "def handle(e): return 2\n"
		fn.Spec.Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
	})
	if fn := f.settle("greet"); fn.Status.Revision != 3 || ready(fn).Status != metav1.ConditionTrue {
		t.Errorf("after an env change: %+v", fn.Status)
	}
}

func TestConfigMapSource(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "src", Namespace: "default"},
		Data: map[string]string{"main.py": "from util import x\ndef handle(e): return x\n", "util.py": "x = 1\n"}}
	f := newFixture(t, cm)
	fn := greet("")
	fn.Spec.Source = minik8sv1.FunctionSource{ConfigMap: &minik8sv1.FunctionSourceConfigMap{Name: "src"}}
	f.create(fn)
	if fn := f.settle("greet"); fn.Status.Revision != 1 || len(f.builder.builds[0].Files) != 2 {
		t.Fatalf("from a ConfigMap: %+v, files %v", fn.Status, f.builder.builds)
	}
	// Editing the ConfigMap is a new revision.
	cm.Data["util.py"] = "x = 2\n"
	if _, err := f.cs.CoreV1().ConfigMaps("default").Update(f.ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ConfigMap's change in the cache", func() bool {
		got, err := f.c.configMaps.ConfigMaps("default").Get("src")
		return err == nil && got.Data["util.py"] == "x = 2\n"
	})
	if fn := f.settle("greet"); fn.Status.Revision != 2 {
		t.Errorf("after the ConfigMap changed: revision %d", fn.Status.Revision)
	}
	// A missing ConfigMap is a condition, not a crash.
	f.change("greet", func(fn *minik8sv1.Function) { fn.Spec.Source.ConfigMap.Name = "gone" })
	if c := ready(f.settle("greet")); c.Status != metav1.ConditionFalse || c.Reason != "SourceNotFound" || !strings.Contains(c.Message, "gone") {
		t.Errorf("a missing ConfigMap: %+v", c)
	}
}

func TestDeleteRemovesImages(t *testing.T) {
	f := newFixture(t)
	f.create(greet("def handle(e): return 1\n"))
	f.settle("greet")
	fn := f.get("greet")
	fn.DeletionTimestamp = ptr.To(metav1.Now())
	if err := f.c.update(f.ctx, fn); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deletion in the cache", func() bool {
		got, ok := f.c.functions.Get("default", "greet")
		return ok && got.DeletionTimestamp != nil
	})
	if err := f.c.sync(f.ctx, "default/greet"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.builder.deleted, []string{"default/greet"}) {
		t.Errorf("images deleted: %v", f.builder.deleted)
	}
	if fn := f.get("greet"); slices.Contains(fn.Finalizers, Finalizer) {
		t.Errorf("the finalizer stayed: %v", fn.Finalizers)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 200 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}
