package job

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/podutil"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// env is a Job controller on a fake clientset whose informer caches the
// test refreshes by hand (calling the controller's handlers as an
// informer would), with a fake clock.
type env struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	clock    *clocktesting.FakeClock
	c        *Controller
	recorder *record.FakeRecorder
	jobIdx   cache.Indexer
	podIdx   cache.Indexer
	rv       int
	seen     map[string]*corev1.Pod // the cache's view of Pods
	nextUID  int
}

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

func newEnv(t *testing.T, cfg Config) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), client: fake.NewClientset(), clock: clocktesting.NewFakeClock(t0), seen: map[string]*corev1.Pod{}}
	tracker := e.client.Tracker()
	// Pods get a name and a UID like the apiserver gives them.
	e.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		e.nextUID++
		if p.Name == "" {
			p.Name = fmt.Sprintf("%s%05d", p.GenerateName, e.nextUID)
		}
		p.UID = types.UID(fmt.Sprintf("pod-uid-%d", e.nextUID))
		p.CreationTimestamp = metav1.NewTime(e.clock.Now())
		return false, nil, nil
	})
	// A Pod with finalizers is only marked for deletion; it goes when its
	// last finalizer does.
	e.client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		obj, err := tracker.Get(podsGVR, d.GetNamespace(), d.GetName())
		if err != nil {
			return true, nil, err
		}
		p := obj.(*corev1.Pod).DeepCopy()
		if len(p.Finalizers) == 0 {
			return false, nil, nil
		}
		if p.DeletionTimestamp == nil {
			p.DeletionTimestamp = ptr.To(metav1.NewTime(e.clock.Now()))
			p.DeletionGracePeriodSeconds = ptr.To[int64](30)
			return true, nil, tracker.Update(podsGVR, p, p.Namespace)
		}
		return true, nil, nil
	})
	def := k8stesting.ObjectReaction(tracker)
	e.client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		handled, obj, err := def(a)
		if err == nil {
			if p := obj.(*corev1.Pod); p.DeletionTimestamp != nil && len(p.Finalizers) == 0 {
				return true, obj, tracker.Delete(podsGVR, p.Namespace, p.Name)
			}
		}
		return handled, obj, err
	})
	factory := informers.NewSharedInformerFactory(e.client, 0)
	e.recorder = record.NewFakeRecorder(1000)
	kc := &kit.Context{Client: e.client, Factory: factory, Clock: e.clock, Logger: slog.New(slog.DiscardHandler), Recorder: e.recorder}
	c, err := New(kc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	e.jobIdx = factory.Batch().V1().Jobs().Informer().GetIndexer()
	e.podIdx = factory.Core().V1().Pods().Informer().GetIndexer()
	t.Cleanup(func() { c.Queue.ShutDown(); c.orphans.ShutDown() })
	return e
}

// newJob is a Job as the apiserver stores it (defaulted).
func newJob(name string, mutate ...func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(t0)},
		Spec: batchv1.JobSpec{
			Completions: ptr.To[int32](1), Parallelism: ptr.To[int32](1), BackoffLimit: ptr.To[int32](6),
			CompletionMode: ptr.To(batchv1.NonIndexedCompletion), Suspend: ptr.To(false),
			PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	for _, m := range mutate {
		m(j)
	}
	return j
}

func (e *env) create(job *batchv1.Job) {
	e.t.Helper()
	if _, err := e.client.BatchV1().Jobs(job.Namespace).Create(e.ctx, job, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// refresh brings the caches up to the fake API, calling the Pod handlers
// for what changed.
func (e *env) refresh() {
	e.t.Helper()
	jobs, err := e.client.BatchV1().Jobs("").List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var objs []any
	for i := range jobs.Items {
		objs = append(objs, &jobs.Items[i])
	}
	if err := e.jobIdx.Replace(objs, ""); err != nil {
		e.t.Fatal(err)
	}
	pods, err := e.client.CoreV1().Pods("").List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	now := map[string]bool{}
	for i := range pods.Items {
		p := pods.Items[i].DeepCopy()
		key := p.Namespace + "/" + p.Name
		now[key] = true
		old, ok := e.seen[key]
		if ok {
			p.ResourceVersion = old.ResourceVersion
			if apiequality.Semantic.DeepEqual(old, p) {
				continue
			}
		}
		e.rv++
		p.ResourceVersion = fmt.Sprint(e.rv)
		e.seen[key] = p
		if !ok {
			_ = e.podIdx.Add(p)
			e.c.podAdded(p)
			continue
		}
		_ = e.podIdx.Update(p)
		e.c.podUpdated(old, p)
	}
	for key, p := range e.seen {
		if !now[key] {
			delete(e.seen, key)
			_ = e.podIdx.Delete(p)
			e.c.podDeleted(p)
		}
	}
}

// sync refreshes the caches and syncs the Job once.
func (e *env) sync(name string) error {
	e.t.Helper()
	e.refresh()
	return e.c.Reconcile(e.ctx, "ns/"+name)
}

// settle syncs until a sync changes nothing in the API.
func (e *env) settle(name string) {
	e.t.Helper()
	for range 10 {
		before := len(e.client.Actions())
		if err := e.sync(name); err != nil {
			e.t.Fatalf("sync: %v", err)
		}
		writes := 0
		for _, a := range e.client.Actions()[before:] {
			if a.GetVerb() != "get" && a.GetVerb() != "list" {
				writes++
			}
		}
		if writes == 0 {
			return
		}
	}
	e.t.Fatal("job does not settle after 10 syncs")
}

func (e *env) job(name string) *batchv1.Job {
	e.t.Helper()
	j, err := e.client.BatchV1().Jobs("ns").Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// pods are the Job's Pods in the API, oldest first.
func (e *env) pods() []*corev1.Pod {
	e.t.Helper()
	list, err := e.client.CoreV1().Pods("ns").List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []*corev1.Pod
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (e *env) activePods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range e.pods() {
		if podutil.IsActive(p) {
			out = append(out, p)
		}
	}
	return out
}

// finish ends a Pod the way a kubelet reports it.
func (e *env) finish(p *corev1.Pod, phase corev1.PodPhase) {
	e.t.Helper()
	p = p.DeepCopy()
	code := int32(0)
	if phase == corev1.PodFailed {
		code = 1
	}
	p.Status.Phase = phase
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(e.clock.Now())}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(e.clock.Now())}}}}
	if _, err := e.client.CoreV1().Pods(p.Namespace).UpdateStatus(e.ctx, p, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// run marks a Pod running and ready.
func (e *env) run(p *corev1.Pod) {
	e.t.Helper()
	p = p.DeepCopy()
	p.Spec.NodeName = "node"
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if _, err := e.client.CoreV1().Pods(p.Namespace).Update(e.ctx, p, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// events drains the recorded events' reasons.
func (e *env) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.recorder.Events:
			out = append(out, strings.Fields(ev)[1])
		default:
			return out
		}
	}
}

func (e *env) wantEvents(want ...string) {
	e.t.Helper()
	got := e.events()
	for _, w := range want {
		if !slices.Contains(got, w) {
			e.t.Errorf("events %v lack %s", got, w)
		}
	}
}

// conditions are the Job's condition types that are True, in order.
func conditions(j *batchv1.Job) []string {
	var out []string
	for _, c := range j.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			out = append(out, string(c.Type)+"/"+c.Reason)
		}
	}
	return out
}
