package autoscale

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
	"github.com/minik8s/minik8s/pkg/serverless/router"
)

var (
	_ StatsSource   = (*router.Router)(nil)
	_ router.Scaler = (*Autoscaler)(nil)
)

// functionList is a FunctionLister over a fixed set.
type functionList []*minik8sv1.Function

func (f functionList) List() []*minik8sv1.Function { return f }

// traffic is a StatsSource: the same figures for every function, the
// stable average for the stable window and the panic one otherwise.
type traffic struct {
	mu            sync.Mutex
	inFlight      int
	lastActive    time.Time
	stable, burst float64
	stableWindow  time.Duration
}

func (s *traffic) Activity(types.NamespacedName) (int, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight, s.lastActive
}

func (s *traffic) AverageConcurrency(_ types.NamespacedName, window time.Duration) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if window == s.stableWindow {
		return s.stable
	}
	return s.burst
}

func fn(name string, scale minik8sv1.FunctionScale) *minik8sv1.Function {
	return &minik8sv1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: minik8sv1.FunctionSpec{Scale: scale}}
}

func deployment(fn string, replicas, ready int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fnmeta.DeploymentName(fn), ResourceVersion: "1",
			Labels: map[string]string{fnmeta.FunctionLabel: fn}},
		Spec:   appsv1.DeploymentSpec{Replicas: ptr.To(replicas)},
		Status: appsv1.DeploymentStatus{ReadyReplicas: ready},
	}
}

// withScale makes the fake clientset serve deployments/scale as the
// apiserver does: from and onto the Deployment, with optimistic
// concurrency on its resourceVersion.
func withScale(client *fake.Clientset) {
	gvr := appsv1.SchemeGroupVersion.WithResource("deployments")
	tracker := client.Tracker()
	client.PrependReactor("get", "deployments", func(action clienttesting.Action) (bool, runtime.Object, error) {
		get := action.(clienttesting.GetAction)
		if get.GetSubresource() != "scale" {
			return false, nil, nil
		}
		obj, err := tracker.Get(gvr, get.GetNamespace(), get.GetName())
		if err != nil {
			return true, nil, err
		}
		d := obj.(*appsv1.Deployment)
		return true, &autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name, ResourceVersion: d.ResourceVersion},
			Spec:       autoscalingv1.ScaleSpec{Replicas: *d.Spec.Replicas},
		}, nil
	})
	client.PrependReactor("update", "deployments", func(action clienttesting.Action) (bool, runtime.Object, error) {
		update := action.(clienttesting.UpdateAction)
		if update.GetSubresource() != "scale" {
			return false, nil, nil
		}
		sc := update.GetObject().(*autoscalingv1.Scale)
		obj, err := tracker.Get(gvr, update.GetNamespace(), sc.Name)
		if err != nil {
			return true, nil, err
		}
		d := obj.(*appsv1.Deployment).DeepCopy()
		if sc.ResourceVersion != "" && sc.ResourceVersion != d.ResourceVersion {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), sc.Name, nil)
		}
		rv, _ := strconv.Atoi(d.ResourceVersion)
		d.ResourceVersion = strconv.Itoa(rv + 1)
		d.Spec.Replicas = ptr.To(sc.Spec.Replicas)
		if err := tracker.Update(gvr, d, d.Namespace); err != nil {
			return true, nil, err
		}
		sc = sc.DeepCopy()
		sc.ResourceVersion = d.ResourceVersion
		return true, sc, nil
	})
}

type fixture struct {
	t      *testing.T
	a      *Autoscaler
	client *fake.Clientset
	clock  *testingclock.FakeClock
	stats  *traffic
	ctx    context.Context
}

func newFixture(t *testing.T, fns functionList, deployments ...*appsv1.Deployment) *fixture {
	t.Helper()
	client := fake.NewClientset()
	for _, d := range deployments {
		if _, err := client.AppsV1().Deployments(d.Namespace).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	withScale(client)
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	stats := &traffic{stableWindow: 6 * time.Second}
	a, err := New(Config{Client: client, Functions: fns, Stats: stats, Clock: clk, StableWindow: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &fixture{t: t, a: a, client: client, clock: clk, stats: stats, ctx: ctx}
}

// sync starts the informer alone (the test ticks by hand).
func (f *fixture) sync() {
	f.a.factory.Start(f.ctx.Done())
	if !cache.WaitForCacheSync(f.ctx.Done(), f.a.synced) {
		f.t.Fatal("deployment cache did not sync")
	}
}

// replicas is the function's Deployment's spec.replicas in the API.
func (f *fixture) replicas(name string) int32 {
	f.t.Helper()
	d, err := f.client.AppsV1().Deployments("default").Get(f.ctx, fnmeta.DeploymentName(name), metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return *d.Spec.Replicas
}

// tick lets the cache catch up with the API, then decides once.
func (f *fixture) tick() {
	f.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		fresh, _ := f.client.AppsV1().Deployments("default").List(f.ctx, metav1.ListOptions{})
		caught := true
		for _, d := range fresh.Items {
			cached, err := f.a.deployments.Deployments(d.Namespace).Get(d.Name)
			if err != nil || cached.ResourceVersion != d.ResourceVersion {
				caught = false
			}
		}
		if caught {
			break
		}
		if time.Now().After(deadline) {
			f.t.Fatal("deployment cache never caught up")
		}
		time.Sleep(time.Millisecond)
	}
	f.a.tick(f.ctx)
}

func scaleUpdates(client *fake.Clientset) int {
	n := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "scale" {
			n++
		}
	}
	return n
}

func TestPokeScalesFromZero(t *testing.T) {
	f := newFixture(t, functionList{fn("greet", minik8sv1.FunctionScale{})}, deployment("greet", 0, 0))
	done := make(chan error, 1)
	go func() { done <- f.a.Start(f.ctx) }()
	f.a.Poke("default", "greet")
	f.a.Poke("default", "nodeployment") // skipped, not an error
	deadline := time.Now().Add(5 * time.Second)
	for f.replicas("greet") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("Poke did not scale the function from zero")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A second poke of a function with an instance changes nothing.
	f.a.Poke("default", "greet")
	time.Sleep(50 * time.Millisecond)
	if n := scaleUpdates(f.client); n != 1 {
		t.Errorf("%d scale updates, want 1", n)
	}
	if f.replicas("greet") != 1 {
		t.Errorf("replicas %d after a second poke, want 1", f.replicas("greet"))
	}
	f.a.pokes.ShutDown()
}

func TestTickSustainedConcurrency(t *testing.T) {
	f := newFixture(t, functionList{
		fn("greet", minik8sv1.FunctionScale{}),
		fn("small", minik8sv1.FunctionScale{MaxScale: ptr.To[int32](3)}),
	}, deployment("greet", 1, 1), deployment("small", 1, 1))
	f.sync()
	f.stats.inFlight, f.stats.lastActive, f.stats.stable, f.stats.burst = 20, f.clock.Now(), 20, 20
	for range 5 {
		f.tick()
		f.clock.Step(2 * time.Second)
	}
	if got := f.replicas("greet"); got != 5 {
		t.Errorf("greet at concurrency 20, target 4: %d instances, want 5", got)
	}
	if got := f.replicas("small"); got != 3 {
		t.Errorf("small at concurrency 20, maxScale 3: %d instances, want 3", got)
	}
}

func TestTickScalesToZeroWhenIdle(t *testing.T) {
	f := newFixture(t, functionList{
		fn("greet", minik8sv1.FunctionScale{ScaleToZeroAfter: &metav1.Duration{Duration: 10 * time.Second}}),
		fn("kept", minik8sv1.FunctionScale{MinScale: ptr.To[int32](2)}),
		fn("unbuilt", minik8sv1.FunctionScale{MinScale: ptr.To[int32](1)}),
	}, deployment("greet", 1, 1), deployment("kept", 0, 0))
	f.sync()
	// The last request finished just now.
	f.stats.lastActive = f.clock.Now()
	f.tick()
	if got := f.replicas("greet"); got != 1 {
		t.Fatalf("greet right after a request: %d instances, want 1", got)
	}
	if got := f.replicas("kept"); got != 2 {
		t.Errorf("kept (minScale 2): %d instances, want 2", got)
	}
	f.clock.Step(9 * time.Second)
	f.tick()
	if got := f.replicas("greet"); got != 1 {
		t.Fatalf("greet 9s idle: %d instances, want 1", got)
	}
	f.clock.Step(time.Second)
	f.tick()
	if got := f.replicas("greet"); got != 0 {
		t.Errorf("greet 10s idle (scaleToZeroAfter): %d instances, want 0", got)
	}
	if got := f.replicas("kept"); got != 2 {
		t.Errorf("kept (minScale 2) idle: %d instances, want 2", got)
	}
}

// A function the router has not seen since it started gets its whole
// grace from when the autoscaler first saw it.
func TestTickGraceFromFirstSight(t *testing.T) {
	f := newFixture(t, functionList{fn("greet", minik8sv1.FunctionScale{})}, deployment("greet", 1, 1))
	f.sync()
	f.tick()
	f.clock.Step(29 * time.Second)
	f.tick()
	if got := f.replicas("greet"); got != 1 {
		t.Fatalf("29s after first sight: %d instances, want 1", got)
	}
	f.clock.Step(time.Second)
	f.tick()
	if got := f.replicas("greet"); got != 0 {
		t.Errorf("30s after first sight: %d instances, want 0", got)
	}
}

// A Deployment changed since the cache saw it is a conflict: the tick
// leaves it and decides again next time.
func TestTickConflict(t *testing.T) {
	f := newFixture(t, functionList{fn("greet", minik8sv1.FunctionScale{})}, deployment("greet", 1, 3))
	f.sync()
	f.stats.inFlight, f.stats.lastActive, f.stats.stable, f.stats.burst = 8, f.clock.Now(), 8, 8
	// Someone else scales it to 3 between the tick's read and its write,
	// so the write carries a stale resourceVersion whatever the cache
	// has seen by then.
	gvr := appsv1.SchemeGroupVersion.WithResource("deployments")
	raced := false
	f.client.PrependReactor("update", "deployments", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "scale" || raced {
			return false, nil, nil
		}
		raced = true
		obj, err := f.client.Tracker().Get(gvr, "default", "fn-greet")
		if err != nil {
			return true, nil, err
		}
		d := obj.(*appsv1.Deployment).DeepCopy()
		rv, _ := strconv.Atoi(d.ResourceVersion)
		d.ResourceVersion, d.Spec.Replicas = strconv.Itoa(rv+1), ptr.To[int32](3)
		return false, nil, f.client.Tracker().Update(gvr, d, "default") // on to withScale's reactor: a conflict
	})
	key := types.NamespacedName{Namespace: "default", Name: "greet"}
	if err := f.a.scale(f.ctx, f.clock.Now(), key, fn("greet", minik8sv1.FunctionScale{})); err != nil {
		t.Errorf("a conflict is an error: %v", err)
	}
	if !raced {
		t.Fatal("the tick wrote no scale")
	}
	if got := f.replicas("greet"); got != 3 {
		t.Fatalf("after a conflicting tick: %d instances, want 3 (untouched)", got)
	}
	f.tick()
	if got := f.replicas("greet"); got != 2 {
		t.Errorf("next tick: %d instances, want 2", got)
	}
}
