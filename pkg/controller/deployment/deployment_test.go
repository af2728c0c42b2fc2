package deployment

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
// test fills by hand (refresh copies the API's state in, as the
// informers would); no ReplicaSet controller runs, so the test plays
// its part (settle).
type fixture struct {
	t        *testing.T
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	c        *Controller
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, client: fake.NewClientset(objs...), clock: clocktesting.NewFakeClock(t0), recorder: record.NewFakeRecorder(1000)}
	// The fake tracker sets no UIDs or creation times.
	f.client.PrependReactor("create", "replicasets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		rs := a.(k8stesting.CreateAction).GetObject().(*appsv1.ReplicaSet)
		rs.UID = types.UID("uid-" + rs.Name)
		rs.CreationTimestamp = metav1.NewTime(f.clock.Now())
		f.clock.Step(time.Second)
		return false, nil, nil
	})
	f.factory = informers.NewSharedInformerFactory(f.client, 0)
	kc := &kit.Context{Client: f.client, Factory: f.factory, Clock: f.clock, Logger: slog.New(slog.DiscardHandler), Recorder: f.recorder}
	c, err := New(kc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.refresh()
	return f
}

// refresh makes the caches what the API holds.
func (f *fixture) refresh() {
	f.t.Helper()
	ctx := context.Background()
	ds, err := f.client.AppsV1().Deployments("ns").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	rss, err := f.client.AppsV1().ReplicaSets("ns").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	pods, err := f.client.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var dObjs, rsObjs, podObjs []any
	for i := range ds.Items {
		dObjs = append(dObjs, &ds.Items[i])
	}
	for i := range rss.Items {
		rsObjs = append(rsObjs, &rss.Items[i])
	}
	for i := range pods.Items {
		podObjs = append(podObjs, &pods.Items[i])
	}
	if err := f.factory.Apps().V1().Deployments().Informer().GetIndexer().Replace(dObjs, ""); err != nil {
		f.t.Fatal(err)
	}
	if err := f.factory.Apps().V1().ReplicaSets().Informer().GetIndexer().Replace(rsObjs, ""); err != nil {
		f.t.Fatal(err)
	}
	if err := f.factory.Core().V1().Pods().Informer().GetIndexer().Replace(podObjs, ""); err != nil {
		f.t.Fatal(err)
	}
}

// settle plays the ReplicaSet controller with instant, ready pods:
// every ReplicaSet's status becomes its spec.
func (f *fixture) settle() {
	f.t.Helper()
	for _, rs := range f.replicaSets() {
		n := replicas(rs)
		rs.Status = appsv1.ReplicaSetStatus{Replicas: n, ReadyReplicas: n, AvailableReplicas: n, FullyLabeledReplicas: n,
			ObservedGeneration: rs.Generation}
		if _, err := f.client.AppsV1().ReplicaSets("ns").UpdateStatus(context.Background(), rs, metav1.UpdateOptions{}); err != nil {
			f.t.Fatal(err)
		}
	}
}

// sync refreshes the caches and runs one Reconcile.
func (f *fixture) sync() {
	f.t.Helper()
	f.refresh()
	if err := f.c.Reconcile(context.Background(), "ns/web"); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) deployment() *appsv1.Deployment {
	f.t.Helper()
	d, err := f.client.AppsV1().Deployments("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

func (f *fixture) replicaSets() []*appsv1.ReplicaSet {
	f.t.Helper()
	list, err := f.client.AppsV1().ReplicaSets("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []*appsv1.ReplicaSet
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return byAge(out)
}

// updateDeployment changes the stored Deployment's spec (generation
// included, as the apiserver would).
func (f *fixture) updateDeployment(mutate func(*appsv1.Deployment)) {
	f.t.Helper()
	d := f.deployment()
	mutate(d)
	d.Generation++
	if _, err := f.client.AppsV1().Deployments("ns").Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
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

// ownedRS is a ReplicaSet of d for template, as the controller would
// have made it, settled at n replicas.
func ownedRS(d *appsv1.Deployment, template corev1.PodTemplateSpec, n int32, rev string, age time.Duration) *appsv1.ReplicaSet {
	hash := computeHash(&template, nil)
	template.Labels = withLabel(template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: d.Name + "-" + hash, UID: types.UID("uid-" + hash), Labels: template.Labels,
			CreationTimestamp: metav1.NewTime(t0.Add(-age)),
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)},
			Annotations: map[string]string{AnnotationRevision: rev,
				AnnotationDesiredReplicas: strconv.Itoa(int(desired(d))), AnnotationMaxReplicas: strconv.Itoa(int(desired(d) + maxSurge(d)))},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(n), Template: template,
			Selector: selectorWithLabel(d.Spec.Selector, appsv1.DefaultDeploymentUniqueLabelKey, hash)},
		Status: appsv1.ReplicaSetStatus{Replicas: n, ReadyReplicas: n, AvailableReplicas: n},
	}
}

func withImage(t corev1.PodTemplateSpec, image string) corev1.PodTemplateSpec {
	t = *t.DeepCopy()
	t.Spec.Containers[0].Image = image
	return t
}

func TestNewDeploymentCreatesReplicaSet(t *testing.T) {
	d := rollingDeployment(3, "1", "0")
	f := newFixture(t, d)
	f.sync()
	rss := f.replicaSets()
	if len(rss) != 1 {
		t.Fatalf("%d replicasets, want 1", len(rss))
	}
	rs := rss[0]
	hash := computeHash(&d.Spec.Template, nil)
	if rs.Name != "web-"+hash || rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash ||
		rs.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != hash ||
		rs.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || rs.Spec.Template.Labels["app"] != "web" {
		t.Errorf("replicaset not named and labeled by its hash %s: %+v", hash, rs.ObjectMeta)
	}
	if !metav1.IsControlledBy(rs, d) || !ptr.Deref(metav1.GetControllerOf(rs).BlockOwnerDeletion, false) {
		t.Errorf("owner references %+v", rs.OwnerReferences)
	}
	if replicas(rs) != 3 || rs.Annotations[AnnotationRevision] != "1" ||
		rs.Annotations[AnnotationDesiredReplicas] != "3" || rs.Annotations[AnnotationMaxReplicas] != "4" {
		t.Errorf("replicas %d, annotations %v", replicas(rs), rs.Annotations)
	}
	if evs := f.events(); len(evs) != 1 || evs[0] != "Normal ScalingReplicaSet Scaled up replica set "+rs.Name+" from 0 to 3" {
		t.Errorf("events %q", evs)
	}
	got := f.deployment()
	if got.Annotations[AnnotationRevision] != "1" {
		t.Errorf("deployment revision %q, want 1", got.Annotations[AnnotationRevision])
	}
	if c := kit.GetCondition(got.Status.Conditions, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonNewReplicaSetCreated {
		t.Errorf("Progressing = %+v, want NewReplicaSetCreated", c)
	}

	// Pods come up: the Deployment is complete and available.
	f.settle()
	f.sync()
	st := f.deployment().Status
	if st.Replicas != 3 || st.UpdatedReplicas != 3 || st.AvailableReplicas != 3 || st.ReadyReplicas != 3 ||
		st.UnavailableReplicas != 0 || st.ObservedGeneration != 1 {
		t.Errorf("status %+v", st)
	}
	if c := kit.GetCondition(st.Conditions, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonNewReplicaSetAvailable || c.Status != corev1.ConditionTrue {
		t.Errorf("Progressing = %+v, want NewReplicaSetAvailable", c)
	}
	if c := kit.GetCondition(st.Conditions, appsv1.DeploymentAvailable); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("Available = %+v", c)
	}
}

func TestRollingUpdateKeepsAvailability(t *testing.T) {
	d := rollingDeployment(3, "1", "0")
	d.Annotations = map[string]string{AnnotationRevision: "1"}
	old := ownedRS(d, d.Spec.Template, 3, "1", time.Hour)
	d.Spec.Template = withImage(d.Spec.Template, "nginx:2")
	d.Generation = 2
	f := newFixture(t, d, old)

	for step := 0; step < 20; step++ {
		f.sync()
		var total, available int32
		for _, rs := range f.replicaSets() {
			total += replicas(rs)
			available += rs.Status.AvailableReplicas
		}
		if total > 4 {
			t.Fatalf("step %d: %d replicas wanted, above 3 + maxSurge 1", step, total)
		}
		if available < 3 {
			t.Fatalf("step %d: %d available, below 3 - maxUnavailable 0", step, available)
		}
		f.settle()
		if st := f.deployment().Status; st.UpdatedReplicas == 3 && st.Replicas == 3 && st.AvailableReplicas == 3 {
			break
		}
	}
	f.sync()
	rss := f.replicaSets()
	if len(rss) != 2 || replicas(rss[0]) != 0 || replicas(rss[1]) != 3 {
		t.Fatalf("replicasets at the end: %v", rsSummary(rss))
	}
	if rss[1].Annotations[AnnotationRevision] != "2" || f.deployment().Annotations[AnnotationRevision] != "2" {
		t.Errorf("revisions: new rs %q, deployment %q", rss[1].Annotations[AnnotationRevision], f.deployment().Annotations[AnnotationRevision])
	}
	if c := kit.GetCondition(f.deployment().Status.Conditions, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonNewReplicaSetAvailable {
		t.Errorf("Progressing = %+v", c)
	}
	var ups, downs int
	for _, e := range f.events() {
		switch {
		case strings.Contains(e, "Scaled up replica set "+rss[1].Name):
			ups++
		case strings.Contains(e, "Scaled down replica set "+rss[0].Name):
			downs++
		}
	}
	if ups != 3 || downs != 3 {
		t.Errorf("%d scale-ups and %d scale-downs, want 3 each (one pod at a time)", ups, downs)
	}
}

func rsSummary(rss []*appsv1.ReplicaSet) []string {
	var out []string
	for _, rs := range rss {
		out = append(out, rs.Name+"="+string(rune('0'+replicas(rs))))
	}
	return out
}

func TestRecreate(t *testing.T) {
	d := rollingDeployment(3, "1", "0")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	old := ownedRS(d, d.Spec.Template, 3, "1", time.Hour)
	d.Spec.Template = withImage(d.Spec.Template, "nginx:2")
	// A pod of the old ReplicaSet, still shutting down.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "old-pod", Labels: old.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(old, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	f := newFixture(t, d, old, pod)

	f.sync()
	if rss := f.replicaSets(); len(rss) != 1 || replicas(rss[0]) != 0 {
		t.Fatalf("after the first step: %v, want only the old one, at 0", rsSummary(rss))
	}
	f.settle() // old status: 0 replicas, but its pod still runs
	f.sync()
	if rss := f.replicaSets(); len(rss) != 1 {
		t.Fatalf("new replicaset created while an old pod runs: %v", rsSummary(rss))
	}
	if err := f.client.CoreV1().Pods("ns").Delete(context.Background(), "old-pod", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync()
	rss := f.replicaSets()
	if len(rss) != 2 || replicas(rss[1]) != 3 {
		t.Fatalf("after the old pods went: %v, want a new replicaset of 3", rsSummary(rss))
	}
}

func TestProportionalScalingMidRollout(t *testing.T) {
	d := rollingDeployment(10, "3", "2")
	d.Annotations = map[string]string{AnnotationRevision: "2"}
	old := ownedRS(d, d.Spec.Template, 8, "1", time.Hour)
	d.Spec.Template = withImage(d.Spec.Template, "nginx:2")
	newRS := ownedRS(d, d.Spec.Template, 5, "2", time.Minute)
	for _, rs := range []*appsv1.ReplicaSet{old, newRS} {
		rs.Annotations[AnnotationDesiredReplicas], rs.Annotations[AnnotationMaxReplicas] = "10", "13"
	}
	newRS.Status.AvailableReplicas = 0
	d.Spec.Replicas = ptr.To[int32](15)
	f := newFixture(t, d, old, newRS)
	f.sync()
	got := map[string]int32{}
	for _, rs := range f.replicaSets() {
		got[rs.Name] = replicas(rs)
		if rs.Annotations[AnnotationDesiredReplicas] != "15" || rs.Annotations[AnnotationMaxReplicas] != "18" {
			t.Errorf("%s annotations %v", rs.Name, rs.Annotations)
		}
	}
	if got[old.Name] != 11 || got[newRS.Name] != 7 {
		t.Fatalf("sizes %v, want old 11 and new 7", got)
	}
}

func TestPausedDeploymentScalesButDoesNotRoll(t *testing.T) {
	d := rollingDeployment(3, "1", "0")
	d.Annotations = map[string]string{AnnotationRevision: "1"}
	rs := ownedRS(d, d.Spec.Template, 3, "1", time.Hour)
	d.Spec.Paused = true
	d.Spec.Template = withImage(d.Spec.Template, "nginx:2")
	f := newFixture(t, d, rs)
	f.sync()
	if rss := f.replicaSets(); len(rss) != 1 {
		t.Fatalf("paused deployment rolled out: %v", rsSummary(rss))
	}
	if c := kit.GetCondition(f.deployment().Status.Conditions, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonDeploymentPaused || c.Status != corev1.ConditionUnknown {
		t.Fatalf("Progressing = %+v, want Unknown DeploymentPaused", c)
	}
	f.updateDeployment(func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) })
	f.sync()
	if rss := f.replicaSets(); len(rss) != 1 || replicas(rss[0]) != 5 || rss[0].Annotations[AnnotationDesiredReplicas] != "5" {
		t.Fatalf("after scaling the paused deployment: %v", rsSummary(rss))
	}
	f.updateDeployment(func(d *appsv1.Deployment) { d.Spec.Paused = false })
	f.sync()
	resumed := false
	for _, a := range f.client.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetSubresource() == "status" {
			if d, ok := u.GetObject().(*appsv1.Deployment); ok {
				c := kit.GetCondition(d.Status.Conditions, appsv1.DeploymentProgressing)
				resumed = resumed || (c != nil && c.Reason == ReasonDeploymentResumed)
			}
		}
	}
	if !resumed {
		t.Error("Progressing never said DeploymentResumed")
	}
	if rss := f.replicaSets(); len(rss) != 2 {
		t.Fatalf("resumed deployment did not roll out: %v", rsSummary(rss))
	}
	if c := kit.GetCondition(f.deployment().Status.Conditions, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonNewReplicaSetCreated {
		t.Fatalf("Progressing = %+v, want NewReplicaSetCreated", c)
	}
}

func TestProgressDeadlineExceeded(t *testing.T) {
	d := rollingDeployment(2, "1", "0")
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](10)
	f := newFixture(t, d)
	f.sync() // creates the ReplicaSet; its pods never become available
	f.clock.Step(5 * time.Second)
	f.sync()
	if c := kit.GetCondition(f.deployment().Status.Conditions, appsv1.DeploymentProgressing); c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("Progressing before the deadline = %+v", c)
	}
	f.clock.Step(10 * time.Second)
	f.sync()
	c := kit.GetCondition(f.deployment().Status.Conditions, appsv1.DeploymentProgressing)
	if c == nil || c.Status != corev1.ConditionFalse || c.Reason != ReasonProgressDeadlineExceeded {
		t.Fatalf("Progressing after the deadline = %+v, want False ProgressDeadlineExceeded", c)
	}
}

func TestCleansUpOldRevisions(t *testing.T) {
	d := rollingDeployment(1, "1", "0")
	d.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	d.Annotations = map[string]string{AnnotationRevision: "3"}
	objs := []runtime.Object{d}
	for i, image := range []string{"nginx:1", "nginx:2"} {
		objs = append(objs, ownedRS(d, withImage(d.Spec.Template, image), 0, string(rune('1'+i)), time.Duration(3-i)*time.Hour))
	}
	d.Spec.Template = withImage(d.Spec.Template, "nginx:3")
	cur := ownedRS(d, d.Spec.Template, 1, "3", time.Hour)
	objs = append(objs, cur)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1, ReadyReplicas: 1}
	f := newFixture(t, objs...)
	f.sync()
	var names []string
	for _, rs := range f.replicaSets() {
		names = append(names, rs.Annotations[AnnotationRevision])
	}
	if strings.Join(names, ",") != "2,3" {
		t.Fatalf("revisions left %v, want 2,3 (history limit 1)", names)
	}
}

func TestAdoptsAndReleasesReplicaSets(t *testing.T) {
	d := rollingDeployment(2, "1", "0")
	orphan := ownedRS(d, d.Spec.Template, 2, "1", time.Hour)
	orphan.OwnerReferences = nil
	stray := ownedRS(d, withImage(d.Spec.Template, "other"), 0, "", time.Hour)
	stray.Labels = map[string]string{"app": "other"}
	f := newFixture(t, d, orphan, stray)
	f.sync()
	for _, rs := range f.replicaSets() {
		switch rs.Name {
		case orphan.Name:
			if !metav1.IsControlledBy(rs, d) {
				t.Errorf("orphan not adopted: %+v", rs.OwnerReferences)
			}
		case stray.Name:
			if len(rs.OwnerReferences) != 0 {
				t.Errorf("relabeled replicaset not released: %+v", rs.OwnerReferences)
			}
		default:
			t.Errorf("unexpected replicaset %s: the adopted one has the template", rs.Name)
		}
	}
}

func TestHashCollisionBumpsCollisionCount(t *testing.T) {
	d := rollingDeployment(1, "1", "0")
	// Someone else's ReplicaSet holds the name.
	squatter := ownedRS(d, d.Spec.Template, 0, "", time.Hour)
	squatter.OwnerReferences = nil
	squatter.Labels = map[string]string{"app": "squatter"}
	f := newFixture(t, d, squatter)
	f.refresh()
	if err := f.c.Reconcile(context.Background(), "ns/web"); err == nil {
		t.Fatal("sync succeeded despite the name being taken")
	}
	if cc := f.deployment().Status.CollisionCount; cc == nil || *cc != 1 {
		t.Fatalf("collisionCount = %v, want 1", cc)
	}
	f.sync()
	if rss := f.replicaSets(); len(rss) != 2 || !metav1.IsControlledBy(rss[1], d) {
		t.Fatalf("replicasets %v, want a second one under a new hash", rsSummary(rss))
	}
}
