package statefulset

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
)

// fixture is the controller on a fake clientset whose informer caches
// the test fills by hand, so each Reconcile sees exactly what the test
// says the cache holds.
type fixture struct {
	t        *testing.T
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	c        *Controller
	recorder *record.FakeRecorder
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, client: fake.NewClientset(objs...), recorder: record.NewFakeRecorder(100)}
	f.factory = informers.NewSharedInformerFactory(f.client, 0)
	c, err := New(&kit.Context{Client: f.client, Factory: f.factory, Clock: clocktesting.NewFakeClock(time.Unix(1e9, 0)),
		Logger: slog.New(slog.DiscardHandler), Recorder: f.recorder}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	for _, o := range objs {
		f.cache(o)
	}
	return f
}

func (f *fixture) cache(obj runtime.Object) {
	f.t.Helper()
	var err error
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		err = f.factory.Apps().V1().StatefulSets().Informer().GetIndexer().Update(o)
	case *corev1.Pod:
		err = f.factory.Core().V1().Pods().Informer().GetIndexer().Update(o)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) sync() {
	f.t.Helper()
	if _, err := f.c.Reconcile(context.Background(), "ns/web"); err != nil {
		f.t.Fatal(err)
	}
}

// writes are the controller's writes so far, as "verb resource name".
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		switch a := a.(type) {
		case k8stesting.CreateAction:
			out = append(out, "create "+a.GetResource().Resource+" "+a.GetObject().(metav1.Object).GetName())
		case k8stesting.DeleteAction:
			out = append(out, "delete "+a.GetResource().Resource+" "+a.GetName())
		}
	}
	return out
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// A failed pod is deleted, then made again under its name, its claim
// first.
func TestFailedPodComesBackUnderItsName(t *testing.T) {
	set := testSet()
	set.Spec.Replicas = ptr.To[int32](1)
	failed := newPod(set, 0, "web-old")
	failed.UID = "failed"
	failed.Status.Phase = corev1.PodFailed
	f := newFixture(t, set, failed)

	f.sync()
	if got := f.writes(); !slices.Contains(got, "delete pods web-0") || slices.Contains(got, "create pods web-0") {
		t.Fatalf("first sync wrote %v, want the failed web-0 deleted and nothing created", got)
	}
	want := []string{
		"Warning RecreatingFailedPod StatefulSet ns/web is recreating failed Pod web-0",
		"Normal SuccessfulDelete delete Pod web-0 in StatefulSet web successful",
	}
	if got := f.events(); !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}

	// The kubelet is done with it: it is gone from the cache.
	if err := f.factory.Core().V1().Pods().Informer().GetIndexer().Delete(failed); err != nil {
		t.Fatal(err)
	}
	f.client.ClearActions()
	f.sync()
	got := f.writes()
	claim, pod := slices.Index(got, "create persistentvolumeclaims www-web-0"), slices.Index(got, "create pods web-0")
	if claim < 0 || pod < 0 || claim > pod {
		t.Errorf("second sync wrote %v, want the claim www-web-0, then the pod web-0", got)
	}
	want = []string{
		"Normal SuccessfulCreate create Claim www-web-0 Pod web-0 in StatefulSet web success",
		"Normal SuccessfulCreate create Pod web-0 in StatefulSet web successful",
	}
	if got := f.events(); !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

// An ordered scale-down halts while a pod below the one it would remove
// is unhealthy, and goes on from the highest ordinal once all are ready.
func TestOrderedScaleDownHaltsAtAnUnhealthyPod(t *testing.T) {
	set := testSet()
	set.Spec.Replicas = ptr.To[int32](0)
	var pods []runtime.Object
	for i := range 3 {
		p := newPod(set, i, "rev")
		p.UID = "uid"
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
		pods = append(pods, p)
	}
	f := newFixture(t, append([]runtime.Object{set}, pods...)...)
	f.sync()
	if got := podWrites(f.writes()); len(got) != 0 {
		t.Fatalf("scaled down past unready pods: %v", got)
	}

	for _, o := range pods {
		p := o.(*corev1.Pod)
		p.Status.Conditions[0].Status = corev1.ConditionTrue
		f.cache(p)
	}
	f.client.ClearActions()
	f.sync()
	if got := podWrites(f.writes()); !slices.Equal(got, []string{"delete pods web-2"}) {
		t.Errorf("writes %v once all are ready, want web-2 deleted first and alone", got)
	}
}

func podWrites(writes []string) []string {
	var out []string
	for _, w := range writes {
		if strings.Contains(w, " pods ") {
			out = append(out, w)
		}
	}
	return out
}
