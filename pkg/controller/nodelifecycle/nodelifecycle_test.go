package nodelifecycle

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func cond(t corev1.NodeConditionType, s corev1.ConditionStatus, heartbeat time.Time) corev1.NodeCondition {
	return corev1.NodeCondition{Type: t, Status: s, LastHeartbeatTime: metav1.NewTime(heartbeat), LastTransitionTime: metav1.NewTime(heartbeat)}
}

func taint(key string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Effect: effect}
}

func taintKeys(ts []corev1.Taint) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	slices.Sort(out)
	return out
}

func TestMarkUnknown(t *testing.T) {
	now := metav1.NewTime(t0.Add(time.Minute))
	created := metav1.NewTime(t0)
	for _, tc := range []struct {
		name         string
		conditions   []corev1.NodeCondition
		wantChanged  bool
		wantWasReady bool
		wantReasons  map[corev1.NodeConditionType]string
	}{
		{name: "ready node", conditions: []corev1.NodeCondition{
			cond(corev1.NodeReady, corev1.ConditionTrue, t0), cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, t0),
			cond(corev1.NodeDiskPressure, corev1.ConditionFalse, t0), cond(corev1.NodePIDPressure, corev1.ConditionFalse, t0)},
			wantChanged: true, wantWasReady: true,
			wantReasons: map[corev1.NodeConditionType]string{corev1.NodeReady: reasonNodeStatusUnknown, corev1.NodePIDPressure: reasonNodeStatusUnknown}},
		{name: "not ready node", conditions: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse, t0)},
			wantChanged: true,
			wantReasons: map[corev1.NodeConditionType]string{corev1.NodeReady: reasonNodeStatusUnknown, corev1.NodeMemoryPressure: reasonNodeStatusNeverUpdated}},
		{name: "never posted", wantChanged: true,
			wantReasons: map[corev1.NodeConditionType]string{corev1.NodeReady: reasonNodeStatusNeverUpdated}},
		{name: "already unknown", conditions: []corev1.NodeCondition{
			cond(corev1.NodeReady, corev1.ConditionUnknown, t0), cond(corev1.NodeMemoryPressure, corev1.ConditionUnknown, t0),
			cond(corev1.NodeDiskPressure, corev1.ConditionUnknown, t0), cond(corev1.NodePIDPressure, corev1.ConditionUnknown, t0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: created},
				Status: corev1.NodeStatus{Conditions: tc.conditions}}
			got, changed, wasReady := markUnknown(node, now)
			if changed != tc.wantChanged || wasReady != tc.wantWasReady {
				t.Fatalf("changed=%v wasReady=%v, want %v %v", changed, wasReady, tc.wantChanged, tc.wantWasReady)
			}
			for _, ct := range monitoredConditions {
				c := condition(got, ct)
				if c == nil || c.Status != corev1.ConditionUnknown {
					t.Errorf("%s = %+v, want Unknown", ct, c)
					continue
				}
				if want, ok := tc.wantReasons[ct]; ok && c.Reason != want {
					t.Errorf("%s reason = %q, want %q", ct, c.Reason, want)
				}
				if c.Reason == reasonNodeStatusUnknown && (c.Message != "Kubelet stopped posting node status." || !c.LastHeartbeatTime.Equal(&metav1.Time{Time: t0}) || !c.LastTransitionTime.Equal(&now)) {
					t.Errorf("%s = %+v: want the kubelet's heartbeat kept and a new transition time", ct, c)
				}
			}
			if len(node.Status.Conditions) != len(tc.conditions) {
				t.Error("markUnknown changed its input")
			}
		})
	}
}

func TestTaints(t *testing.T) {
	now := metav1.NewTime(t0)
	earlier := metav1.NewTime(t0.Add(-time.Hour))
	user := corev1.Taint{Key: "example.com/dedicated", Value: "gpu", Effect: corev1.TaintEffectNoExecute}
	for _, tc := range []struct {
		name          string
		conditions    []corev1.NodeCondition
		unschedulable bool
		current       []corev1.Taint
		want          []string
		wantChanged   bool
	}{
		{name: "ready node, no taints",
			conditions: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionTrue, t0)}},
		{name: "unknown: unreachable", wantChanged: true,
			conditions: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionUnknown, t0)},
			want:       []string{"node.kubernetes.io/unreachable:NoExecute", "node.kubernetes.io/unreachable:NoSchedule"}},
		{name: "not ready: not-ready", wantChanged: true,
			conditions: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse, t0)},
			want:       []string{"node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/not-ready:NoSchedule"}},
		{name: "unknown to not ready: taints swapped", wantChanged: true,
			conditions: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse, t0)},
			current:    []corev1.Taint{taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule), taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)},
			want:       []string{"node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/not-ready:NoSchedule"}},
		{name: "ready again: taints removed, others kept", wantChanged: true,
			conditions: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionTrue, t0)},
			current:    []corev1.Taint{user, taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule), taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)},
			want:       []string{"example.com/dedicated:NoExecute"}},
		{name: "pressure and cordon", wantChanged: true, unschedulable: true,
			conditions: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionTrue, t0),
				cond(corev1.NodeMemoryPressure, corev1.ConditionTrue, t0), cond(corev1.NodeDiskPressure, corev1.ConditionTrue, t0),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, t0)},
			want: []string{"node.kubernetes.io/disk-pressure:NoSchedule", "node.kubernetes.io/memory-pressure:NoSchedule", "node.kubernetes.io/unschedulable:NoSchedule"}},
		{name: "already tainted: unchanged",
			conditions: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionUnknown, t0)},
			current: []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &earlier},
				{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &earlier}},
			want: []string{"node.kubernetes.io/unreachable:NoExecute", "node.kubernetes.io/unreachable:NoSchedule"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := &corev1.Node{Spec: corev1.NodeSpec{Unschedulable: tc.unschedulable, Taints: tc.current},
				Status: corev1.NodeStatus{Conditions: tc.conditions}}
			got, changed := reconcileTaints(node.Spec.Taints, desiredTaints(node), now)
			if changed != tc.wantChanged || !slices.Equal(taintKeys(got), tc.want) {
				t.Fatalf("taints = %v (changed %v), want %v (changed %v)", taintKeys(got), changed, tc.want, tc.wantChanged)
			}
			for _, g := range got {
				if g.TimeAdded == nil && managed(g) {
					t.Errorf("taint %s has no timeAdded", g.ToString())
				}
				for _, c := range tc.current {
					if c.MatchTaint(&g) && c.TimeAdded != nil && !c.TimeAdded.Equal(g.TimeAdded) {
						t.Errorf("taint %s lost its timeAdded", g.ToString())
					}
				}
			}
		})
	}
}

func TestTolerationWindow(t *testing.T) {
	unreachable := taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)
	notReady := taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)
	tol := func(key string, seconds *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
	}
	for _, tc := range []struct {
		name        string
		tolerations []corev1.Toleration
		taints      []corev1.Taint
		wantEvict   bool
		wantAfter   time.Duration
	}{
		{name: "no taints", tolerations: nil, taints: nil},
		{name: "not tolerated: at once", taints: []corev1.Taint{unreachable}, wantEvict: true},
		{name: "tolerated forever", tolerations: []corev1.Toleration{tol(corev1.TaintNodeUnreachable, nil)}, taints: []corev1.Taint{unreachable}},
		{name: "tolerated for 300s", tolerations: []corev1.Toleration{tol(corev1.TaintNodeUnreachable, ptr.To[int64](300)), tol(corev1.TaintNodeNotReady, ptr.To[int64](300))},
			taints: []corev1.Taint{unreachable}, wantEvict: true, wantAfter: 300 * time.Second},
		{name: "most lenient matching toleration wins", tolerations: []corev1.Toleration{tol(corev1.TaintNodeUnreachable, ptr.To[int64](2)), {Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](60)}},
			taints: []corev1.Taint{unreachable}, wantEvict: true, wantAfter: 60 * time.Second},
		{name: "first taint to run out", tolerations: []corev1.Toleration{tol(corev1.TaintNodeUnreachable, ptr.To[int64](30)), tol(corev1.TaintNodeNotReady, ptr.To[int64](5))},
			taints: []corev1.Taint{unreachable, notReady}, wantEvict: true, wantAfter: 5 * time.Second},
		{name: "one of two taints not tolerated", tolerations: []corev1.Toleration{tol(corev1.TaintNodeUnreachable, nil)},
			taints: []corev1.Taint{unreachable, notReady}, wantEvict: true},
		{name: "negative seconds: at once", tolerations: []corev1.Toleration{tol(corev1.TaintNodeUnreachable, ptr.To[int64](-1))},
			taints: []corev1.Taint{unreachable}, wantEvict: true},
		{name: "wildcard toleration", tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			taints: []corev1.Taint{unreachable, notReady}},
		{name: "value must match", tolerations: []corev1.Toleration{{Key: "k", Value: "a", Effect: corev1.TaintEffectNoExecute}},
			taints: []corev1.Taint{{Key: "k", Value: "b", Effect: corev1.TaintEffectNoExecute}}, wantEvict: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			after, evict := tolerationWindow(tc.tolerations, tc.taints)
			if evict != tc.wantEvict || after != tc.wantAfter {
				t.Errorf("tolerationWindow = %v, %v; want %v, %v", after, evict, tc.wantAfter, tc.wantEvict)
			}
		})
	}
}

// harness is a controller on a fake clientset whose informer stores are
// filled from the clientset by refresh, so a test steps through time and
// reconciles without goroutines.
type harness struct {
	t       *testing.T
	c       *Controller
	client  *fake.Clientset
	factory informers.SharedInformerFactory
	clock   *testingclock.FakeClock
	events  *record.FakeRecorder
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := testingclock.NewFakeClock(t0)
	events := record.NewFakeRecorder(100)
	kc := &kit.Context{Client: client, Factory: factory, Clock: clk, Logger: slog.New(slog.DiscardHandler), Recorder: events}
	c, err := New(kc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Queue.ShutDown(); c.podQueue.ShutDown() })
	return &harness{t: t, c: c, client: client, factory: factory, clock: clk, events: events}
}

// refresh copies the clientset's objects into the informer stores.
func (h *harness) refresh() {
	h.t.Helper()
	ctx := context.Background()
	nodes, _ := h.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	store := h.factory.Core().V1().Nodes().Informer().GetStore()
	for _, o := range store.List() {
		_ = store.Delete(o)
	}
	for i := range nodes.Items {
		_ = store.Add(&nodes.Items[i])
	}
	pods, _ := h.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	pstore := h.factory.Core().V1().Pods().Informer().GetStore()
	for _, o := range pstore.List() {
		_ = pstore.Delete(o)
	}
	for i := range pods.Items {
		_ = pstore.Add(&pods.Items[i])
	}
	leases, _ := h.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
	lstore := h.factory.Coordination().V1().Leases().Informer().GetStore()
	for i := range leases.Items {
		_ = lstore.Update(&leases.Items[i])
	}
}

// kubeletPosts writes a Ready condition with a fresh heartbeat.
func (h *harness) kubeletPosts(name string, ready corev1.ConditionStatus) {
	h.t.Helper()
	ctx := context.Background()
	now := h.clock.Now()
	node, err := h.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		node, err = h.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now)}}, metav1.CreateOptions{})
	}
	if err != nil {
		h.t.Fatal(err)
	}
	node.Status.Conditions = []corev1.NodeCondition{cond(corev1.NodeReady, ready, now),
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, now), cond(corev1.NodeDiskPressure, corev1.ConditionFalse, now),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, now)}
	if _, err := h.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// renewLease is the kubelet's heartbeat.
func (h *harness) renewLease(name string) {
	h.t.Helper()
	ctx := context.Background()
	leases := h.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(h.clock.Now())
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
			Spec: coordinationv1.LeaseSpec{RenewTime: &now}}, metav1.CreateOptions{})
	} else if err == nil {
		l.Spec.RenewTime = &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) reconcile(name string) *corev1.Node {
	h.t.Helper()
	h.refresh()
	if err := h.c.Reconcile(context.Background(), name); err != nil {
		h.t.Fatalf("Reconcile: %v", err)
	}
	node, err := h.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return node
}

func (h *harness) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-h.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestNodeHealth(t *testing.T) {
	h := newHarness(t, Config{NodeMonitorGracePeriod: 40 * time.Second})
	ctx := context.Background()
	h.kubeletPosts("n1", corev1.ConditionTrue)
	h.renewLease("n1")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1",
		Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		name      string
		advance   time.Duration
		lease     bool
		post      corev1.ConditionStatus
		wantReady corev1.ConditionStatus
		wantTaint []string
		wantEvent string
		podReady  corev1.ConditionStatus
	}{
		{name: "fresh", wantReady: corev1.ConditionTrue, podReady: corev1.ConditionTrue},
		{name: "lease renewed after 30s", advance: 30 * time.Second, lease: true, wantReady: corev1.ConditionTrue, podReady: corev1.ConditionTrue},
		{name: "39s after the renewal", advance: 39 * time.Second, wantReady: corev1.ConditionTrue, podReady: corev1.ConditionTrue},
		{name: "41s after the renewal", advance: 2 * time.Second, wantReady: corev1.ConditionUnknown,
			wantTaint: []string{"node.kubernetes.io/unreachable:NoExecute", "node.kubernetes.io/unreachable:NoSchedule"},
			wantEvent: "Normal NodeNotReady Node n1 status is now: NodeNotReady", podReady: corev1.ConditionFalse},
		{name: "still gone", advance: time.Minute, wantReady: corev1.ConditionUnknown,
			wantTaint: []string{"node.kubernetes.io/unreachable:NoExecute", "node.kubernetes.io/unreachable:NoSchedule"}, podReady: corev1.ConditionFalse},
		{name: "kubelet back, ready", advance: time.Second, lease: true, post: corev1.ConditionTrue, wantReady: corev1.ConditionTrue, podReady: corev1.ConditionFalse},
		{name: "kubelet says not ready", advance: time.Second, post: corev1.ConditionFalse, wantReady: corev1.ConditionFalse,
			wantTaint: []string{"node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/not-ready:NoSchedule"}, podReady: corev1.ConditionFalse},
	}
	for _, s := range steps {
		h.clock.Step(s.advance)
		if s.lease {
			h.renewLease("n1")
		}
		if s.post != "" {
			h.kubeletPosts("n1", s.post)
		}
		node := h.reconcile("n1")
		if c := condition(node, corev1.NodeReady); c == nil || c.Status != s.wantReady {
			t.Errorf("%s: Ready = %+v, want %s", s.name, c, s.wantReady)
		}
		if got := taintKeys(node.Spec.Taints); !slices.Equal(got, s.wantTaint) {
			t.Errorf("%s: taints = %v, want %v", s.name, got, s.wantTaint)
		}
		events := h.drainEvents()
		if s.wantEvent != "" && !slices.Contains(events, s.wantEvent) {
			t.Errorf("%s: events = %v, want %q", s.name, events, s.wantEvent)
		}
		if s.wantEvent == "" && len(events) > 0 {
			t.Errorf("%s: unexpected events %v", s.name, events)
		}
		p, err := h.client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Status.Conditions[0].Status; got != s.podReady {
			t.Errorf("%s: pod Ready = %s, want %s", s.name, got, s.podReady)
		}
	}
}

func TestNodeNeverPosted(t *testing.T) {
	h := newHarness(t, Config{NodeStartupGracePeriod: time.Minute})
	if _, err := h.client.CoreV1().Nodes().Create(context.Background(),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(t0)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(59 * time.Second)
	if node := h.reconcile("n1"); len(node.Status.Conditions) != 0 {
		t.Fatalf("conditions set before the startup grace period: %+v", node.Status.Conditions)
	}
	h.clock.Step(2 * time.Second)
	node := h.reconcile("n1")
	c := condition(node, corev1.NodeReady)
	if c == nil || c.Status != corev1.ConditionUnknown || c.Reason != reasonNodeStatusNeverUpdated {
		t.Fatalf("Ready = %+v, want Unknown NodeStatusNeverUpdated", c)
	}
	if got := taintKeys(node.Spec.Taints); len(got) != 2 {
		t.Errorf("taints = %v, want unreachable", got)
	}
	if events := h.drainEvents(); len(events) != 0 {
		t.Errorf("NodeNotReady recorded for a node that never was ready: %v", events)
	}
}

func TestTaintEviction(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := context.Background()
	if _, err := h.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
			taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule)}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tolerate := func(seconds *int64) []corev1.Toleration {
		return []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}}
	}
	for name, tolerations := range map[string][]corev1.Toleration{
		"intolerant": nil, "two-seconds": tolerate(ptr.To[int64](2)), "forever": tolerate(nil), "five-minutes": tolerate(ptr.To[int64](300)),
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: corev1.PodSpec{NodeName: "n1", Tolerations: tolerations}}
		if _, err := h.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h.refresh()

	steps := []struct {
		advance   time.Duration
		wantGone  []string
		wantAfter map[string]time.Duration
	}{
		{wantGone: []string{"intolerant"}, wantAfter: map[string]time.Duration{"two-seconds": 2 * time.Second, "five-minutes": 300 * time.Second}},
		{advance: 1500 * time.Millisecond, wantAfter: map[string]time.Duration{"two-seconds": 500 * time.Millisecond, "five-minutes": 298500 * time.Millisecond}},
		{advance: 500 * time.Millisecond, wantGone: []string{"two-seconds"}, wantAfter: map[string]time.Duration{"five-minutes": 298 * time.Second}},
	}
	for i, s := range steps {
		h.clock.Step(s.advance)
		h.refresh()
		for _, name := range []string{"intolerant", "two-seconds", "forever", "five-minutes"} {
			if _, err := h.client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				continue
			}
			after, err := h.c.ReconcilePod(ctx, "default/"+name)
			if err != nil {
				t.Fatal(err)
			}
			if after != s.wantAfter[name] {
				t.Errorf("step %d: %s requeued after %v, want %v", i, name, after, s.wantAfter[name])
			}
			_, err = h.client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if gone := apierrors.IsNotFound(err); gone != slices.Contains(s.wantGone, name) {
				t.Errorf("step %d: %s gone = %v", i, name, gone)
			}
		}
	}
	events := strings.Join(h.drainEvents(), "\n")
	for _, want := range []string{"Normal TaintManagerEviction Marking for deletion Pod default/intolerant",
		"Normal TaintManagerEviction Marking for deletion Pod default/two-seconds"} {
		if !strings.Contains(events, want) {
			t.Errorf("events %q lack %q", events, want)
		}
	}

	// The node recovers: the pending eviction is cancelled.
	node, _ := h.client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	node.Spec.Taints = nil
	if _, err := h.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.refresh()
	if after, err := h.c.ReconcilePod(ctx, "default/five-minutes"); err != nil || after != 0 {
		t.Fatalf("ReconcilePod = %v, %v", after, err)
	}
	if events := h.drainEvents(); !slices.Contains(events, "Normal TaintManagerEviction Cancelling deletion of Pod default/five-minutes") {
		t.Errorf("events = %v, want the cancellation", events)
	}
	h.clock.Step(time.Hour)
	h.refresh()
	if _, err := h.c.ReconcilePod(ctx, "default/five-minutes"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.CoreV1().Pods("default").Get(ctx, "five-minutes", metav1.GetOptions{}); err != nil {
		t.Errorf("pod on a recovered node was evicted: %v", err)
	}
}
