package replicaset

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
)

// fixture is a controller on a fake clientset whose informer caches the
// test fills by hand: the controller's own writes reach the cache only
// when the test says so, which is how expectations are exercised.
type fixture struct {
	t        *testing.T
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	c        *Controller
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	names    atomic.Int32
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, client: fake.NewClientset(objs...), clock: clocktesting.NewFakeClock(t0), recorder: record.NewFakeRecorder(1000)}
	// The fake tracker neither generates names nor UIDs.
	f.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "" {
			n := f.names.Add(1)
			pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, n)
			pod.UID = types.UID(pod.Name)
			pod.CreationTimestamp = metav1.NewTime(f.clock.Now())
		}
		return false, nil, nil
	})
	f.factory = informers.NewSharedInformerFactory(f.client, 0)
	kc := &kit.Context{Client: f.client, Factory: f.factory, Clock: f.clock, Logger: slog.New(slog.DiscardHandler), Recorder: f.recorder}
	c, err := New(kc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	for _, o := range objs {
		f.cache(o)
	}
	return f
}

// cache puts obj in the informer cache, as a watch event would.
func (f *fixture) cache(obj runtime.Object) {
	f.t.Helper()
	var err error
	switch o := obj.(type) {
	case *appsv1.ReplicaSet:
		err = f.factory.Apps().V1().ReplicaSets().Informer().GetIndexer().Update(o)
	case *corev1.Pod:
		err = f.factory.Core().V1().Pods().Informer().GetIndexer().Update(o)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

// observeAll copies every pod from the API into the cache and reports
// each as an add event.
func (f *fixture) observeAll() {
	f.t.Helper()
	for _, p := range f.pods() {
		f.cache(p)
		f.c.addPod(p)
	}
}

func (f *fixture) sync(key string) error {
	f.t.Helper()
	return f.c.Reconcile(context.Background(), key)
}

func (f *fixture) pods() []*corev1.Pod {
	f.t.Helper()
	list, err := f.client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []*corev1.Pod
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out
}

func (f *fixture) rs(name string) *appsv1.ReplicaSet {
	f.t.Helper()
	rs, err := f.client.AppsV1().ReplicaSets("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return rs
}

// actions are the verbs (with resource and subresource) the controller
// sent, like "create pods" or "patch pods".
func (f *fixture) actions(verb, resource string) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range f.client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			out = append(out, a)
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

func newRS(name string, replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, "tier": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
}

// ownedPod is a running, ready pod of rs.
func ownedPod(rs *appsv1.ReplicaSet, name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := testPod(name, "n1", corev1.PodRunning, true, mutate...)
	p.Labels = map[string]string{"app": rs.Name, "tier": "web"}
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
	return p
}

func TestCreatesPodsFromTemplate(t *testing.T) {
	rs := newRS("web", 3)
	f := newFixture(t, rs)
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	pods := f.pods()
	if len(pods) != 3 {
		t.Fatalf("created %d pods, want 3", len(pods))
	}
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil || ref.UID != rs.UID || ref.Kind != "ReplicaSet" || ref.APIVersion != "apps/v1" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
			t.Errorf("pod %s controller ref = %+v", p.Name, ref)
		}
		if !strings.HasPrefix(p.Name, "web-") || p.Labels["tier"] != "web" || p.Spec.Containers[0].Image != "nginx" {
			t.Errorf("pod %s not from the template: %+v", p.Name, p)
		}
	}
	// Status counts what the cache holds: none of them yet.
	if got := f.rs("web").Status; got.Replicas != 0 || got.ObservedGeneration != 1 {
		t.Errorf("status = %+v", got)
	}
	if evs := f.events(); len(evs) != 3 || !strings.HasPrefix(evs[0], "Normal SuccessfulCreate Created pod: web-") {
		t.Errorf("events = %q", evs)
	}

	// The informer has not reported the pods yet: expectations hold the
	// controller back from creating three more.
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.actions("create", "pods")); n != 3 {
		t.Fatalf("%d creates before the informer caught up, want 3", n)
	}
	f.observeAll()
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.actions("create", "pods")); n != 3 {
		t.Fatalf("%d creates once in sync, want 3", n)
	}
	if got := f.rs("web").Status; got.Replicas != 3 || got.FullyLabeledReplicas != 3 || got.ReadyReplicas != 0 {
		t.Errorf("status = %+v, want 3 replicas, none ready", got)
	}
}

func TestReplacesFailedAndTerminatingPods(t *testing.T) {
	rs := newRS("web", 2)
	failed := ownedPod(rs, "failed", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })
	going := ownedPod(rs, "going", func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) })
	ok := ownedPod(rs, "ok")
	f := newFixture(t, rs, failed, going, ok)
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.actions("create", "pods")); n != 1 {
		t.Fatalf("created %d pods, want 1 to replace the failed and the terminating one", n)
	}
	if n := len(f.actions("delete", "pods")); n != 0 {
		t.Fatalf("deleted %d pods", n)
	}
	st := f.rs("web").Status
	if st.Replicas != 1 || ptr.Deref(st.TerminatingReplicas, -1) != 1 {
		t.Errorf("status = %+v, want 1 replica and 1 terminating", st)
	}
}

func TestScaleDownDeletesInOrder(t *testing.T) {
	rs := newRS("web", 2)
	pods := []runtime.Object{
		ownedPod(rs, "ready-old", readyFor(10*time.Hour)),
		ownedPod(rs, "ready-new", readyFor(time.Minute)),
		ownedPod(rs, "pending", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending; p.Status.Conditions = nil }),
		ownedPod(rs, "unscheduled", func(p *corev1.Pod) {
			p.Spec.NodeName, p.Status.Phase, p.Status.Conditions = "", corev1.PodPending, nil
		}),
	}
	f := newFixture(t, append([]runtime.Object{rs}, pods...)...)
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, a := range f.actions("delete", "pods") {
		deleted = append(deleted, a.(k8stesting.DeleteAction).GetName())
	}
	slices.Sort(deleted)
	if !slices.Equal(deleted, []string{"pending", "unscheduled"}) {
		t.Fatalf("deleted %v, want the pending and the unscheduled pod", deleted)
	}
	// Until both deletions are seen, nothing else happens.
	if f.c.expectations.Satisfied("ns/web") {
		t.Fatal("expectations satisfied before the deletions were seen")
	}
	f.c.deletePod(pods[2])
	f.c.deletePod(pods[3])
	if !f.c.expectations.Satisfied("ns/web") {
		t.Fatal("expectations not satisfied after the deletions were seen")
	}
	if evs := f.events(); len(evs) != 2 || !strings.HasPrefix(evs[0], "Normal SuccessfulDelete Deleted pod: ") {
		t.Errorf("events = %q", evs)
	}
}

func TestAdoptsOrphansAndReleasesMismatches(t *testing.T) {
	rs := newRS("web", 2)
	orphan := testPod("orphan", "n1", corev1.PodRunning, true)
	orphan.Labels = map[string]string{"app": "web"}
	relabeled := ownedPod(rs, "relabeled")
	relabeled.Labels = map[string]string{"app": "debug"}
	other := newRS("other", 1)
	foreign := ownedPod(other, "foreign")
	foreign.Labels = map[string]string{"app": "web"}
	kept := ownedPod(rs, "kept")
	f := newFixture(t, rs, other, orphan, relabeled, foreign, kept)
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	got := map[string]*corev1.Pod{}
	for _, p := range f.pods() {
		got[p.Name] = p
	}
	if ref := metav1.GetControllerOf(got["orphan"]); ref == nil || ref.UID != rs.UID || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("orphan's controller = %+v, want web", ref)
	}
	if refs := got["relabeled"].OwnerReferences; len(refs) != 0 {
		t.Errorf("relabeled pod still has owners %+v", refs)
	}
	if ref := metav1.GetControllerOf(got["foreign"]); ref == nil || ref.UID != other.UID {
		t.Errorf("another ReplicaSet's pod was taken: %+v", ref)
	}
	// kept + the adopted orphan are the two replicas: nothing created.
	if n := len(f.actions("create", "pods")); n != 0 {
		t.Errorf("created %d pods, want 0", n)
	}
	if st := f.rs("web").Status; st.Replicas != 2 || st.FullyLabeledReplicas != 1 {
		t.Errorf("status = %+v, want 2 replicas, 1 fully labeled (the orphan lacks tier)", st)
	}
}

func TestDeletedReplicaSetAdoptsNothing(t *testing.T) {
	rs := newRS("web", 2)
	rs.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	rs.Finalizers = []string{"foregroundDeletion"}
	orphan := testPod("orphan", "n1", corev1.PodRunning, true)
	orphan.Labels = map[string]string{"app": "web"}
	f := newFixture(t, rs, orphan)
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.actions("patch", "pods")) + len(f.actions("create", "pods")); n != 0 {
		t.Fatalf("a ReplicaSet being deleted patched or created %d pods", n)
	}
}

func TestCreateFailureSetsReplicaFailure(t *testing.T) {
	rs := newRS("web", 5)
	f := newFixture(t, rs)
	f.client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", fmt.Errorf("exceeded quota"))
	})
	if err := f.sync("ns/web"); err == nil {
		t.Fatal("sync succeeded")
	}
	// Slow start: the first failure stops the rest.
	if n := len(f.actions("create", "pods")); n != 1 {
		t.Fatalf("%d create calls, want 1", n)
	}
	if !f.c.expectations.Satisfied("ns/web") {
		t.Fatal("creations never issued are still expected")
	}
	cond := kit.GetCondition(f.rs("web").Status.Conditions, appsv1.ReplicaSetReplicaFailure)
	if cond == nil || cond.Status != corev1.ConditionTrue || cond.Reason != "FailedCreate" || !strings.Contains(cond.Message, "exceeded quota") {
		t.Fatalf("ReplicaFailure = %+v", cond)
	}
	if evs := f.events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning FailedCreate Error creating: ") {
		t.Errorf("events = %q", evs)
	}

	// The quota frees up: the condition goes away.
	f.client.ReactionChain = f.client.ReactionChain[1:]
	f.cache(f.rs("web"))
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	if st := f.rs("web").Status; kit.GetCondition(st.Conditions, appsv1.ReplicaSetReplicaFailure) != nil || st.Replicas != 0 {
		t.Fatalf("status = %+v, want no ReplicaFailure (pods not yet seen)", st)
	}
	if n := len(f.pods()); n != 5 {
		t.Fatalf("%d pods, want 5", n)
	}
}

func TestAvailabilityWaitsForMinReadySeconds(t *testing.T) {
	rs := newRS("web", 2)
	rs.Spec.MinReadySeconds = 30
	// Ready 10s ago (pods' ready conditions use t0-relative times).
	p1 := ownedPod(rs, "a", readyFor(10*time.Second))
	p2 := ownedPod(rs, "b", readyFor(time.Minute))
	f := newFixture(t, rs, p1, p2)
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	if st := f.rs("web").Status; st.ReadyReplicas != 2 || st.AvailableReplicas != 1 {
		t.Fatalf("status = %+v, want 2 ready, 1 available", st)
	}
	f.cache(f.rs("web"))
	f.clock.Step(25 * time.Second)
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	if st := f.rs("web").Status; st.AvailableReplicas != 2 {
		t.Fatalf("status = %+v, want 2 available", st)
	}
}

func TestPodEventsReachTheirReplicaSet(t *testing.T) {
	rs := newRS("web", 1)
	f := newFixture(t, rs)
	orphan := testPod("orphan", "n1", corev1.PodRunning, true)
	orphan.Labels = map[string]string{"app": "web"}
	f.c.addPod(orphan)
	if f.c.Queue.Len() != 1 {
		t.Fatalf("queue has %d keys after an orphan appeared, want 1", f.c.Queue.Len())
	}
	key, _ := f.c.Queue.Get()
	f.c.Queue.Done(key)
	if key != "ns/web" {
		t.Fatalf("queued %q", key)
	}
	stranger := testPod("stranger", "n1", corev1.PodRunning, true)
	stranger.Labels = map[string]string{"app": "db"}
	f.c.addPod(stranger)
	if f.c.Queue.Len() != 0 {
		t.Fatal("a pod nobody selects queued a ReplicaSet")
	}
}
