package daemonset

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/history"
	"github.com/minik8s/minik8s/pkg/controller/kit"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

func testNode(name string, mutate ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func taint(key string, effect corev1.TaintEffect) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: effect}) }
}

func testDS(mutate ...func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent", UID: "ds-uid", Generation: 1,
			Annotations: map[string]string{AnnotationTemplateGeneration: "1"}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromInt32(0))}},
			RevisionHistoryLimit: ptr.To[int32](10),
		},
	}
	for _, m := range mutate {
		m(ds)
	}
	return ds
}

func TestShouldRun(t *testing.T) {
	cases := []struct {
		name      string
		ds        *appsv1.DaemonSet
		node      *corev1.Node
		run, keep bool
	}{
		{"plain node", testDS(), testNode("n"), true, true},
		{"nodeSelector matches", testDS(func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		}), testNode("n", func(n *corev1.Node) { n.Labels["disk"] = "ssd" }), true, true},
		{"nodeSelector does not match", testDS(func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		}), testNode("n"), false, false},
		{"required affinity does not match", testDS(func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}},
				}}}}}
		}), testNode("n"), false, false},
		{"template names another node", testDS(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeName = "other" }), testNode("n"), false, false},
		{"NoSchedule taint: no new pod, the old one stays", testDS(), testNode("n", taint("dedicated", corev1.TaintEffectNoSchedule)), false, true},
		{"NoExecute taint: neither", testDS(), testNode("n", taint("dedicated", corev1.TaintEffectNoExecute)), false, false},
		{"PreferNoSchedule is ignored", testDS(), testNode("n", taint("dedicated", corev1.TaintEffectPreferNoSchedule)), true, true},
		{"tolerated taint", testDS(func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}), testNode("n", taint("dedicated", corev1.TaintEffectNoExecute)), true, true},
		{"not-ready and unreachable are tolerated", testDS(), testNode("n",
			taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute), taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)), true, true},
		{"pressure and cordon are tolerated", testDS(), testNode("n",
			taint(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule), taint(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
			taint(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule), taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule),
			func(n *corev1.Node) { n.Spec.Unschedulable = true }), true, true},
		{"network-unavailable only for hostNetwork pods", testDS(), testNode("n", taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), false, true},
		{"hostNetwork tolerates network-unavailable", testDS(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.HostNetwork = true }),
			testNode("n", taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run, keep := shouldRun(tc.ds, tc.node)
			if run != tc.run || keep != tc.keep {
				t.Fatalf("shouldRun = %v, %v; want %v, %v", run, keep, tc.run, tc.keep)
			}
		})
	}
}

// A user's not-ready toleration with a time limit would let the node
// lifecycle controller evict the daemon: it is replaced.
func TestDaemonTolerationsReplaceTheUsers(t *testing.T) {
	ds := testDS(func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)}}
	})
	tpl := podTemplate(ds, "h1")
	n := 0
	for _, tl := range tpl.Spec.Tolerations {
		if tl.Key == corev1.TaintNodeNotReady {
			n++
			if tl.TolerationSeconds != nil {
				t.Errorf("not-ready toleration keeps tolerationSeconds %d", *tl.TolerationSeconds)
			}
		}
	}
	if n != 1 || tpl.Labels[appsv1.ControllerRevisionHashLabelKey] != "h1" || tpl.Labels[LabelTemplateGeneration] != "1" {
		t.Errorf("template %+v", tpl)
	}
	if ds.Spec.Template.Spec.Tolerations[0].TolerationSeconds == nil {
		t.Error("the DaemonSet's own template was changed")
	}
}

func TestLimits(t *testing.T) {
	cases := []struct {
		unavailable, surge string
		desired            int
		wantSurge, wantU   int
	}{
		{"1", "0", 10, 0, 1},
		{"25%", "0", 10, 0, 3}, // rounded up
		{"0", "10%", 5, 1, 0},
		{"0", "0", 4, 0, 1}, // never both zero
		{"0", "0", 0, 0, 0},
	}
	for _, tc := range cases {
		ds := testDS(func(ds *appsv1.DaemonSet) {
			u, s := intstr.Parse(tc.unavailable), intstr.Parse(tc.surge)
			ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &u, MaxSurge: &s}
		})
		if s, u := limits(ds, tc.desired); s != tc.wantSurge || u != tc.wantU {
			t.Errorf("unavailable %s surge %s of %d: got surge %d unavailable %d, want %d %d", tc.unavailable, tc.surge, tc.desired, s, u, tc.wantSurge, tc.wantU)
		}
	}
}

// fixture is a controller on a fake clientset whose caches the test
// fills by hand.
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
	f.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "" {
			pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, f.names.Add(1))
			pod.UID = types.UID(pod.Name)
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

func (f *fixture) cache(obj runtime.Object) {
	f.t.Helper()
	var err error
	switch o := obj.(type) {
	case *appsv1.DaemonSet:
		err = f.factory.Apps().V1().DaemonSets().Informer().GetIndexer().Update(o)
	case *corev1.Pod:
		err = f.factory.Core().V1().Pods().Informer().GetIndexer().Update(o)
	case *corev1.Node:
		err = f.factory.Core().V1().Nodes().Informer().GetIndexer().Update(o)
	case *appsv1.ControllerRevision:
		err = f.factory.Apps().V1().ControllerRevisions().Informer().GetIndexer().Update(o)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

// observe copies the API's pods and revisions into the caches, as the
// informers would, reporting pod adds and deletes to the controller.
func (f *fixture) observe() {
	f.t.Helper()
	ctx := context.Background()
	pods, err := f.client.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	inAPI := map[string]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		inAPI[p.Name] = true
		if _, err := f.c.podLister.Pods("ns").Get(p.Name); err != nil {
			f.cache(p)
			f.c.addPod(p)
		} else {
			f.cache(p)
		}
	}
	cached, _ := f.c.podLister.List(everything())
	for _, p := range cached {
		if !inAPI[p.Name] {
			_ = f.factory.Core().V1().Pods().Informer().GetIndexer().Delete(p)
			f.c.deletePod(p)
		}
	}
	revs, err := f.client.AppsV1().ControllerRevisions("ns").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	for i := range revs.Items {
		f.cache(&revs.Items[i])
	}
}

func (f *fixture) sync() {
	f.t.Helper()
	if err := f.c.Reconcile(context.Background(), "ns/agent"); err != nil {
		f.t.Fatal(err)
	}
	f.observe()
}

func (f *fixture) podsByNode() map[string][]corev1.Pod {
	f.t.Helper()
	list, err := f.client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string][]corev1.Pod{}
	for _, p := range list.Items {
		out[targetNode(&p)] = append(out[targetNode(&p)], p)
	}
	return out
}

// setPod changes a pod in the API and the cache.
func (f *fixture) setPod(p *corev1.Pod, change func(*corev1.Pod)) {
	f.t.Helper()
	p = p.DeepCopy()
	change(p)
	if err := f.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, p.Namespace); err != nil {
		f.t.Fatal(err)
	}
	f.cache(p)
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

// A failed daemon pod is replaced, but a node that keeps failing it is
// retried only as the back-off allows.
func TestFailedPodReplacedWithBackoff(t *testing.T) {
	f := newFixture(t, testDS(), testNode("n1"))
	f.sync()
	pods := f.podsByNode()["n1"]
	if len(pods) != 1 {
		t.Fatalf("pods on n1: %d, want 1", len(pods))
	}
	fail := func(p corev1.Pod) {
		f.setPod(&p, func(p *corev1.Pod) { p.Spec.NodeName = "n1"; p.Status.Phase = corev1.PodFailed })
	}
	fail(pods[0])
	f.sync() // deletes the failed pod
	f.sync() // creates its replacement
	pods = f.podsByNode()["n1"]
	if len(pods) != 1 || pods[0].Status.Phase == corev1.PodFailed {
		t.Fatalf("after the first failure: %v", pods)
	}
	if ev := strings.Join(f.events(), "\n"); !strings.Contains(ev, "FailedDaemonPod") {
		t.Errorf("events %q: want FailedDaemonPod", ev)
	}

	// It fails again at once: within the back-off it stays.
	fail(pods[0])
	f.sync()
	if got := f.podsByNode()["n1"]; len(got) != 1 || got[0].Name != pods[0].Name {
		t.Fatalf("failed pod replaced within its back-off: %v", got)
	}
	f.clock.Step(3 * time.Second)
	f.sync()
	f.sync()
	if got := f.podsByNode()["n1"]; len(got) != 1 || got[0].Name == pods[0].Name {
		t.Fatalf("failed pod not replaced after its back-off: %v", got)
	}
}

// A revision is written for each template, and going back to an earlier
// template renumbers its revision as the newest instead of writing a new
// one.
func TestHistory(t *testing.T) {
	f := newFixture(t, testDS(), testNode("n1"))
	f.sync()
	image := func(img string, gen string) {
		ds, err := f.client.AppsV1().DaemonSets("ns").Get(context.Background(), "agent", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ds.Spec.Template.Spec.Containers[0].Image = img
		ds.Annotations[AnnotationTemplateGeneration] = gen
		ds.Generation++
		if _, err := f.client.AppsV1().DaemonSets("ns").Update(context.Background(), ds, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.cache(ds)
		f.sync()
	}
	image("busybox:2", "2")
	image("busybox", "3")
	revs, err := f.client.AppsV1().ControllerRevisions("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]string{}
	for _, r := range revs.Items {
		tpl, err := templateOf(&r)
		if err != nil {
			t.Fatal(err)
		}
		got[r.Revision] = tpl
	}
	if len(got) != 2 || got[2] != "busybox:2" || got[3] != "busybox" {
		t.Fatalf("revisions %v, want 2: busybox:2 and 3: busybox", got)
	}
}

func everything() labels.Selector { return labels.Everything() }

// templateOf is the image of the template a revision holds.
func templateOf(r *appsv1.ControllerRevision) (string, error) {
	tpl, err := history.Template(r)
	if err != nil {
		return "", err
	}
	return tpl.Spec.Containers[0].Image, nil
}

// readyAll binds every live pod in the API to its node and makes it
// Ready, as the scheduler and kubelets would.
func (f *fixture) readyAll() {
	f.t.Helper()
	for node, pods := range f.podsByNode() {
		for _, p := range pods {
			if p.DeletionTimestamp != nil || podReadyNow(&p) {
				continue
			}
			f.setPod(&p, func(p *corev1.Pod) {
				p.Spec.NodeName = node
				p.Status.Phase = corev1.PodRunning
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(f.clock.Now())}}
			})
		}
	}
	f.observe()
}

func podReadyNow(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setTemplate changes the DaemonSet's image in the API and the cache,
// with the strategy given, as an update through the apiserver would.
func (f *fixture) setTemplate(image string, strategy appsv1.DaemonSetUpdateStrategy) {
	f.t.Helper()
	ds, err := f.client.AppsV1().DaemonSets("ns").Get(context.Background(), "agent", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	ds.Spec.Template.Spec.Containers[0].Image = image
	ds.Spec.UpdateStrategy = strategy
	ds.Annotations[AnnotationTemplateGeneration] = "2"
	ds.Generation++
	if _, err := f.client.AppsV1().DaemonSets("ns").Update(context.Background(), ds, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.cache(ds)
}

// images counts the node's pods per image.
func (f *fixture) images() map[string]map[string]int {
	out := map[string]map[string]int{}
	for node, pods := range f.podsByNode() {
		out[node] = map[string]int{}
		for _, p := range pods {
			out[node][p.Spec.Containers[0].Image]++
		}
	}
	return out
}

func TestRollingUpdateSteps(t *testing.T) {
	rolling := func(unavailable, surge int32) appsv1.DaemonSetUpdateStrategy {
		return appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{
			MaxUnavailable: ptr.To(intstr.FromInt32(unavailable)), MaxSurge: ptr.To(intstr.FromInt32(surge))}}
	}
	t.Run("maxUnavailable deletes first", func(t *testing.T) {
		f := newFixture(t, testDS(), testNode("n1"), testNode("n2"), testNode("n3"))
		f.sync()
		f.readyAll()
		f.setTemplate("busybox:2", rolling(2, 0))
		f.sync()
		old := 0
		for _, imgs := range f.images() {
			old += imgs["busybox"]
		}
		if old != 1 {
			t.Fatalf("after one sync %v: want two old pods deleted at once, one left", f.images())
		}
		f.sync() // the emptied nodes get new pods
		f.readyAll()
		f.sync() // the last old pod goes
		f.sync()
		f.readyAll()
		for node, imgs := range f.images() {
			if imgs["busybox:2"] != 1 || len(imgs) != 1 {
				t.Errorf("node %s runs %v, want one busybox:2", node, imgs)
			}
		}
	})
	t.Run("maxSurge creates first", func(t *testing.T) {
		f := newFixture(t, testDS(), testNode("n1"), testNode("n2"))
		f.sync()
		f.readyAll()
		f.setTemplate("busybox:2", rolling(0, 1))
		f.sync()
		both := 0
		for node, imgs := range f.images() {
			if imgs["busybox"] != 1 {
				t.Fatalf("node %s runs %v: an old pod went before its successor was available", node, imgs)
			}
			if imgs["busybox:2"] == 1 {
				both++
			}
		}
		if both != 1 {
			t.Fatalf("%v: want a new pod beside the old one on exactly one node", f.images())
		}
		f.sync() // the new pod is not ready: nothing more happens
		if got := f.images(); len(got["n1"])+len(got["n2"]) != 3 {
			t.Fatalf("%v: more surged while the first new pod was unavailable", got)
		}
		f.readyAll()
		f.sync() // its old pod goes, the other node surges
		f.readyAll()
		f.sync()
		f.readyAll()
		f.sync()
		for node, imgs := range f.images() {
			if imgs["busybox:2"] != 1 || len(imgs) != 1 {
				t.Errorf("node %s runs %v, want one busybox:2", node, imgs)
			}
		}
	})
}
