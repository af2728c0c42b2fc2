package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeCluster is a fake clientset whose pods/binding sets spec.nodeName,
// as the apiserver does.
func fakeCluster(t *testing.T, objs ...runtime.Object) *fake.Clientset {
	t.Helper()
	client := fake.NewClientset(objs...)
	client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := action.(k8stesting.CreateAction).GetObject().(*v1.Binding)
		obj, err := client.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), b.Namespace, b.Name)
		if err != nil {
			return true, nil, err
		}
		p := obj.(*v1.Pod).DeepCopy()
		p.Spec.NodeName = b.Target.Name
		return true, nil, client.Tracker().Update(v1.SchemeGroupVersion.WithResource("pods"), p, b.Namespace)
	})
	return client
}

func startFake(t *testing.T, cfg Config) *Scheduler {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	select {
	case <-s.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("not ready")
	}
	return s
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestBackoffAndRetryOnNodeAdd(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	client := fakeCluster(t, node("small", "1", "1Gi", 10), pod("big", "2", ""))
	s := startFake(t, Config{Client: client, Clock: clk})

	waitFor(t, "the first attempt", func() bool { return s.attempts.Load() == 1 })
	// The reason is on the pod.
	waitFor(t, "PodScheduled=False", func() bool {
		p, _ := client.CoreV1().Pods("default").Get(context.Background(), "big", metav1.GetOptions{})
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == "Unschedulable" &&
				c.Message == "0/1 nodes are available: 1 Insufficient cpu." {
				return true
			}
		}
		return false
	})
	// Back-off: 1s, then 2s, on the scheduler's clock.
	time.Sleep(100 * time.Millisecond)
	if n := s.attempts.Load(); n != 1 {
		t.Fatalf("%d attempts before the back-off elapsed", n)
	}
	clk.Step(time.Second)
	waitFor(t, "the second attempt, after 1s", func() bool { return s.attempts.Load() == 2 })
	clk.Step(time.Second)
	time.Sleep(100 * time.Millisecond)
	if n := s.attempts.Load(); n != 2 {
		t.Fatalf("%d attempts 1s into a 2s back-off", n)
	}
	clk.Step(time.Second)
	waitFor(t, "the third attempt, after 2s more", func() bool { return s.attempts.Load() == 3 })

	// A node that fits: retried at once, without the clock moving.
	if _, err := client.CoreV1().Nodes().Create(context.Background(), node("large", "4", "8Gi", 10), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pod bound to the new node", func() bool {
		p, _ := client.CoreV1().Pods("default").Get(context.Background(), "big", metav1.GetOptions{})
		return p.Spec.NodeName == "large"
	})
}

func TestHeartbeatsDoNotRetry(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	n := node("small", "1", "1Gi", 10)
	client := fakeCluster(t, n, pod("big", "2", ""))
	s := startFake(t, Config{Client: client, Clock: clk})
	waitFor(t, "the first attempt", func() bool { return s.attempts.Load() == 1 })
	// A status update that changes nothing the filters look at.
	n = n.DeepCopy()
	n.Status.Conditions[0].LastHeartbeatTime = metav1.Now()
	if _, err := client.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if got := s.attempts.Load(); got != 1 {
		t.Errorf("%d attempts after a heartbeat, want 1", got)
	}
	// A label change may matter.
	n = n.DeepCopy()
	n.Labels["zone"] = "a"
	if _, err := client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an attempt after a label change", func() bool { return s.attempts.Load() == 2 })
}

func TestNodeChanges(t *testing.T) {
	base := node("n", "1", "1Gi", 10)
	cases := []struct {
		name   string
		change func(*v1.Node)
		want   bool
	}{
		{"heartbeat", func(n *v1.Node) { n.Status.Conditions[0].LastHeartbeatTime = metav1.Now() }, false},
		{"annotation", func(n *v1.Node) { n.Annotations = map[string]string{"a": "b"} }, false},
		{"cordon", cordoned, true},
		{"label", withLabels("zone", "a"), true},
		{"taint", withTaints(noSchedule), true},
		{"allocatable", withAllocatable(v1.ResourceCPU, "2"), true},
		{"not ready", withReady(v1.ConditionFalse), true},
	}
	for _, tc := range cases {
		n := base.DeepCopy()
		tc.change(n)
		if got := nodeSchedulingChanged(base, n); got != tc.want {
			t.Errorf("%s: changed = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestResponsible(t *testing.T) {
	s, err := New(Config{Client: fake.NewClientset()})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	cases := []struct {
		name string
		pod  *v1.Pod
		want bool
	}{
		{"pending", pod("p", "", ""), true},
		{"empty scheduler name means default", pod("p", "", "", func(p *v1.Pod) { p.Spec.SchedulerName = "" }), true},
		{"another scheduler", pod("p", "", "", func(p *v1.Pod) { p.Spec.SchedulerName = "other" }), false},
		{"bound", pod("p", "", "", onNode("n")), false},
		{"terminating", pod("p", "", "", func(p *v1.Pod) { p.DeletionTimestamp = &now }), false},
		{"gated", pod("p", "", "", func(p *v1.Pod) { p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "wait"}} }), false},
		{"failed", pod("p", "", "", func(p *v1.Pod) { p.Status.Phase = v1.PodFailed }), false},
	}
	for _, tc := range cases {
		if got := s.responsible(tc.pod); got != tc.want {
			t.Errorf("%s: responsible = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestWithCondition(t *testing.T) {
	t0, t1 := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	ready := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse}
	unsched := v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "Unschedulable", Message: "m1", LastTransitionTime: t0}

	got, changed := withCondition([]v1.PodCondition{ready}, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "Unschedulable", Message: "m1"}, t0)
	if !changed || len(got) != 2 || got[1].LastTransitionTime != t0 {
		t.Errorf("added: %v %+v", changed, got)
	}
	if _, changed := withCondition([]v1.PodCondition{ready, unsched}, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "Unschedulable", Message: "m1"}, t1); changed {
		t.Error("same condition reported as a change")
	}
	got, changed = withCondition([]v1.PodCondition{unsched, ready}, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "Unschedulable", Message: "m2"}, t1)
	if !changed || len(got) != 2 || got[0].Message != "m2" || got[0].LastTransitionTime != t0 {
		t.Errorf("new message, same status: %v %+v (transition time must stay)", changed, got)
	}
	patch, err := conditionsPatch([]v1.PodCondition{unsched, ready}, got)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"status":{"$setElementOrder/conditions":[{"type":"PodScheduled"},{"type":"Ready"}],"conditions":[{"message":"m2","type":"PodScheduled"}]}}`; string(patch) != want {
		t.Errorf("patch = %s\nwant    %s", patch, want)
	}
}

// podScheduledFalse returns the message of the pod's PodScheduled=False
// Unschedulable condition, if it has one.
func podScheduledFalse(t *testing.T, client *fake.Clientset, name string) string {
	t.Helper()
	p, err := client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == "Unschedulable" {
			return c.Message
		}
	}
	return ""
}

// boundTo lists the pods' nodes ("" for a pod not bound).
func boundTo(t *testing.T, client *fake.Clientset, names ...string) []string {
	t.Helper()
	var out []string
	for _, n := range names {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Spec.NodeName)
	}
	return out
}

func TestAntiAffineBurst(t *testing.T) {
	// Five replicas at once that must not share a node, on three nodes:
	// the pods assumed but not yet bound count, so three are placed, one
	// a node, and two wait, saying why.
	objs := []runtime.Object{node("a", "4", "8Gi", 110), node("b", "4", "8Gi", 110), node("c", "4", "8Gi", 110)}
	var names []string
	for i := range 5 {
		names = append(names, fmt.Sprintf("web-%d", i))
		objs = append(objs, webPod(names[i], avoidPods(podTerm(hostname, "app", "web"))))
	}
	client := fakeCluster(t, objs...)
	clk := clocktesting.NewFakeClock(time.Now())
	startFake(t, Config{Client: client, Clock: clk})

	const msg = "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."
	var pending []string
	waitFor(t, "3 pods bound and 2 unschedulable", func() bool {
		pending = pending[:0]
		nodes := map[string]bool{}
		for i, n := range boundTo(t, client, names...) {
			if n != "" {
				nodes[n] = true
			} else if podScheduledFalse(t, client, names[i]) == msg {
				pending = append(pending, names[i])
			}
		}
		return len(nodes) == 3 && len(pending) == 2
	})

	// A replica goes away: one of the waiting ones takes its node, at once.
	var gone string
	for i, n := range boundTo(t, client, names...) {
		if n != "" {
			gone = names[i]
			break
		}
	}
	if err := client.CoreV1().Pods("default").Delete(context.Background(), gone, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a waiting pod bound", func() bool {
		bound := 0
		for _, n := range boundTo(t, client, pending...) {
			if n != "" {
				bound++
			}
		}
		return bound == 1
	})
}

func TestAssignedPodRetriesPodsWaitingForIt(t *testing.T) {
	// The pod wants to be next to a db pod; none exists yet. When one is
	// assigned (here by its spec), the pod is retried at once: the fake
	// clock never lets its back-off end.
	clk := clocktesting.NewFakeClock(time.Now())
	client := fakeCluster(t, node("a", "4", "8Gi", 110), node("b", "4", "8Gi", 110),
		webPod("web", requirePods(podTerm(hostname, "app", "db"))))
	s := startFake(t, Config{Client: client, Clock: clk})
	waitFor(t, "the first attempt", func() bool { return s.attempts.Load() == 1 })
	waitFor(t, "the pod unschedulable", func() bool {
		return podScheduledFalse(t, client, "web") == "0/2 nodes are available: 2 node(s) didn't match pod affinity rules."
	})
	if _, err := client.CoreV1().Pods("default").Create(context.Background(), pod("db", "", "", labelled("app", "db"), onNode("b")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pod bound next to the db", func() bool { return boundTo(t, client, "web")[0] == "b" })
	if n := s.attempts.Load(); n != 2 {
		t.Errorf("%d attempts, want 2", n)
	}
}

func TestDefaultSpreadingOfAStatefulSet(t *testing.T) {
	// Big nodes, pods without requests: only the default spreading keeps
	// the replicas apart. The apiserver serves StatefulSets, so the
	// scheduler watches them.
	ss := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	objs := []runtime.Object{node("a", "32", "64Gi", 110), node("b", "32", "64Gi", 110), node("c", "32", "64Gi", 110), ss}
	var names []string
	for i := range 6 {
		names = append(names, fmt.Sprintf("web-%d", i))
		objs = append(objs, webPod(names[i], ownedBy("apps/v1", "StatefulSet", "web")))
	}
	client := fakeCluster(t, objs...)
	client.Resources = []*metav1.APIResourceList{{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "statefulsets", Kind: "StatefulSet", Namespaced: true}}}}
	s := startFake(t, Config{Client: client})
	if s.listers.StatefulSets == nil || s.listers.ReplicationControllers != nil {
		t.Errorf("watching StatefulSets %v, ReplicationControllers %v; want the served one only",
			s.listers.StatefulSets != nil, s.listers.ReplicationControllers != nil)
	}
	perNode := map[string]int{}
	waitFor(t, "6 pods bound", func() bool {
		clear(perNode)
		for _, n := range boundTo(t, client, names...) {
			perNode[n]++
		}
		return perNode[""] == 0
	})
	if perNode["a"] != 2 || perNode["b"] != 2 || perNode["c"] != 2 {
		t.Errorf("replicas per node %v, want 2 on each", perNode)
	}
}
