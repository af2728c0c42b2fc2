package integration

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet"
	"github.com/minik8s/minik8s/pkg/kubelet/simulated"
	"github.com/minik8s/minik8s/pkg/scheduler"
)

// schedNode is a fake, Ready node: nothing runs on it, the scheduler only
// needs the Node object.
func schedNode(name, cpu string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Capacity: alloc, Allocatable: alloc,
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
			}},
		},
	}
}

type schedPodOpt func(*corev1.Pod)

// schedTestName is the schedulerName of the tests' pods and schedulers, so
// that a default scheduler the control plane may run leaves them alone.
const schedTestName = "test-scheduler"

func schedPod(ns, name, cpu string, opts ...schedPodOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{SchedulerName: schedTestName, Containers: []corev1.Container{{
			Name: "c", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// schedRun starts a scheduler in-process against the cluster, with its own
// client (so its requests can be counted), until the test ends.
func schedRun(t *testing.T, c *cluster, cfg scheduler.Config, bindings *atomic.Int64) (stop func()) {
	t.Helper()
	rc := rest.CopyConfig(c.config)
	rc.QPS, rc.Burst = -1, 0
	if bindings != nil {
		rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return schedRoundTripper(func(r *http.Request) (*http.Response, error) {
				if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/binding") {
					bindings.Add(1)
				}
				return rt.RoundTrip(r)
			})
		})
	}
	cfg.Client = kubernetes.NewForConfigOrDie(rc)
	cfg.SchedulerName = schedTestName
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	stop = func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("scheduler stopped with error: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("scheduler did not stop in 30s")
		}
	}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			stop()
		}
	})
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatalf("scheduler exited: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("scheduler not ready after 30s")
	}
	return stop
}

type schedRoundTripper func(*http.Request) (*http.Response, error)

func (f schedRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// schedWaitBound waits for a pod to be bound and returns its node.
func schedWaitBound(t *testing.T, ctx context.Context, c *cluster, ns, name string, within time.Duration) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		p, err := c.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return p.Spec.NodeName != "", nil
	})
	if err != nil {
		var conds []corev1.PodCondition
		if pod != nil {
			conds = pod.Status.Conditions
		}
		t.Fatalf("pod %s/%s not bound within %s: %v (conditions %+v)", ns, name, within, err, conds)
	}
	return pod
}

// schedCondition returns the pod's PodScheduled conditions.
func schedConditions(p *corev1.Pod) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			out = append(out, c)
		}
	}
	return out
}

// schedEvents lists the events of one pod with a reason.
func schedEvents(t *testing.T, ctx context.Context, c *cluster, ns, pod, reason string) []corev1.Event {
	t.Helper()
	list, err := c.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.name": pod, "reason": reason,
	}.String()})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func schedWaitEvent(t *testing.T, ctx context.Context, c *cluster, ns, pod, reason, message string) {
	t.Helper()
	var got []corev1.Event
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		got = schedEvents(t, ctx, c, ns, pod, reason)
		for _, e := range got {
			if e.Message == message && e.Source.Component != "" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event %q for %s/%s; events: %+v", reason, message, ns, pod, got)
	}
}

func TestScheduler(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A long first back-off: a pod bound sooner was moved by an event.
	schedRun(t, c, scheduler.Config{Backoff: scheduler.BackoffConfig{Initial: 8 * time.Second, Max: 30 * time.Second}}, nil)

	gpuTaint := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	for _, n := range []*corev1.Node{
		schedNode("node-a", "4", map[string]string{"zone": "a"}),
		schedNode("node-b", "4", map[string]string{"zone": "b"}),
		schedNode("node-gpu", "4", map[string]string{"zone": "b"}, gpuTaint),
	} {
		if _, err := c.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ns := "sched"
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create := func(p *corev1.Pod) {
		t.Helper()
		if _, err := c.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("pods spread over the untainted nodes", func(t *testing.T) {
		for i := range 6 {
			create(schedPod(ns, fmt.Sprintf("web-%d", i), "100m"))
		}
		perNode := map[string]int{}
		for i := range 6 {
			p := schedWaitBound(t, ctx, c, ns, fmt.Sprintf("web-%d", i), 10*time.Second)
			perNode[p.Spec.NodeName]++
			conds := schedConditions(p)
			if len(conds) != 1 || conds[0].Status != corev1.ConditionTrue {
				t.Errorf("pod %s: PodScheduled conditions %+v, want one, True", p.Name, conds)
			}
		}
		if perNode["node-a"] != 3 || perNode["node-b"] != 3 {
			t.Errorf("pods per node = %v, want 3 on node-a and 3 on node-b (LeastAllocated)", perNode)
		}
		schedWaitEvent(t, ctx, c, ns, "web-0", "Scheduled", fmt.Sprintf("Successfully assigned %s/web-0 to %s", ns, schedWaitBound(t, ctx, c, ns, "web-0", time.Second).Spec.NodeName))
	})

	t.Run("nodeSelector", func(t *testing.T) {
		create(schedPod(ns, "in-zone-a", "100m", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} }))
		if got := schedWaitBound(t, ctx, c, ns, "in-zone-a", 10*time.Second).Spec.NodeName; got != "node-a" {
			t.Errorf("pod with nodeSelector zone=a on %s, want node-a", got)
		}
	})

	onGPUNode := func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-gpu"}}},
			}}},
		}}
	}
	t.Run("a tainted node is avoided unless tolerated", func(t *testing.T) {
		create(schedPod(ns, "gpu-untolerated", "100m", onGPUNode))
		want := "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 node(s) didn't match Pod's node affinity/selector."
		schedWaitEvent(t, ctx, c, ns, "gpu-untolerated", "FailedScheduling", want)
		create(schedPod(ns, "gpu-tolerated", "100m", onGPUNode, func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		}))
		if got := schedWaitBound(t, ctx, c, ns, "gpu-tolerated", 10*time.Second).Spec.NodeName; got != "node-gpu" {
			t.Errorf("tolerating pod on %s, want node-gpu", got)
		}
		if p, _ := c.client.CoreV1().Pods(ns).Get(ctx, "gpu-untolerated", metav1.GetOptions{}); p.Spec.NodeName != "" {
			t.Errorf("untolerating pod bound to %s", p.Spec.NodeName)
		}
		if err := c.client.CoreV1().Pods(ns).Delete(ctx, "gpu-untolerated", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a pod too big stays pending, then fits a new node", func(t *testing.T) {
		create(schedPod(ns, "big", "10"))
		want := "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 Insufficient cpu."
		var pod *corev1.Pod
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
			p, err := c.client.CoreV1().Pods(ns).Get(ctx, "big", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			pod = p
			conds := schedConditions(p)
			return len(conds) == 1 && conds[0].Status == corev1.ConditionFalse, nil
		})
		if err != nil {
			t.Fatalf("no PodScheduled=False on the big pod: %v (%+v)", err, pod)
		}
		cond := schedConditions(pod)[0]
		if cond.Reason != corev1.PodReasonUnschedulable || cond.Message != want {
			t.Errorf("PodScheduled = %s/%q, want Unschedulable/%q", cond.Reason, cond.Message, want)
		}
		if pod.Spec.NodeName != "" || pod.Status.Phase != corev1.PodPending {
			t.Errorf("big pod: node %q, phase %s; want unbound, Pending", pod.Spec.NodeName, pod.Status.Phase)
		}
		schedWaitEvent(t, ctx, c, ns, "big", "FailedScheduling", want)
		if evs := schedEvents(t, ctx, c, ns, "big", "FailedScheduling"); evs[0].Type != corev1.EventTypeWarning {
			t.Errorf("FailedScheduling event type %s, want Warning", evs[0].Type)
		}

		// A node big enough appears: the pod is retried at once, well
		// before its 8s back-off.
		start := time.Now()
		if _, err := c.client.CoreV1().Nodes().Create(ctx, schedNode("node-big", "16", map[string]string{"zone": "c"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := schedWaitBound(t, ctx, c, ns, "big", 6*time.Second)
		if p.Spec.NodeName != "node-big" {
			t.Errorf("big pod on %s, want node-big", p.Spec.NodeName)
		}
		t.Logf("big pod bound %s after the node appeared", time.Since(start).Round(time.Millisecond))
		if conds := schedConditions(p); len(conds) != 1 || conds[0].Status != corev1.ConditionTrue {
			t.Errorf("after binding: PodScheduled conditions %+v, want one, True (the binding must replace the False one)", conds)
		}
		schedWaitEvent(t, ctx, c, ns, "big", "Scheduled", fmt.Sprintf("Successfully assigned %s/big to node-big", ns))
	})

	t.Run("a deleted pod frees its node", func(t *testing.T) {
		// node-big has 6 cpus left: fill them, then free them.
		create(schedPod(ns, "filler", "6", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "c"} }))
		schedWaitBound(t, ctx, c, ns, "filler", 10*time.Second)
		create(schedPod(ns, "waiter", "6", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "c"} }))
		schedWaitEvent(t, ctx, c, ns, "waiter", "FailedScheduling",
			"0/4 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: gpu}, 2 node(s) didn't match Pod's node affinity/selector.")
		// No kubelet: delete at once.
		zero := int64(0)
		if err := c.client.CoreV1().Pods(ns).Delete(ctx, "filler", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		if got := schedWaitBound(t, ctx, c, ns, "waiter", 6*time.Second).Spec.NodeName; got != "node-big" {
			t.Errorf("waiter on %s, want node-big", got)
		}
	})

	t.Run("other schedulers' pods are left alone", func(t *testing.T) {
		create(schedPod(ns, "not-mine", "100m", func(p *corev1.Pod) { p.Spec.SchedulerName = "someone-else" }))
		time.Sleep(time.Second)
		p, err := c.client.CoreV1().Pods(ns).Get(ctx, "not-mine", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" || len(p.Status.Conditions) != 0 {
			t.Errorf("pod of another scheduler touched: node %q, conditions %+v", p.Spec.NodeName, p.Status.Conditions)
		}
	})
}

func TestSchedulerLeaderElection(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, n := range []string{"node-1", "node-2"} {
		if _, err := c.client.CoreV1().Nodes().Create(ctx, schedNode(n, "8", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ns := "elected"
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	le := func(id string) scheduler.Config {
		return scheduler.Config{LeaderElection: scheduler.LeaderElectionConfig{
			Enabled: true, Identity: id, LeaseName: "test-scheduler",
			LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
		}}
	}
	var firstBinds, secondBinds atomic.Int64
	stopFirst := schedRun(t, c, le("first"), &firstBinds)
	// The first takes the lease before the second starts.
	var holder string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := c.client.CoordinationV1().Leases("kube-system").Get(ctx, "test-scheduler", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return holder != "", nil
	})
	if err != nil || holder != "first" {
		t.Fatalf("lease holder %q (%v), want first", holder, err)
	}
	schedRun(t, c, le("second"), &secondBinds)

	for i := range 10 {
		if _, err := c.client.CoreV1().Pods(ns).Create(ctx, schedPod(ns, fmt.Sprintf("p-%d", i), "100m"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		schedWaitBound(t, ctx, c, ns, fmt.Sprintf("p-%d", i), 15*time.Second)
	}
	if f, s := firstBinds.Load(), secondBinds.Load(); f != 10 || s != 0 {
		t.Errorf("bindings: leader %d, follower %d; want 10 and 0", f, s)
	}

	// The leader stops (and releases the lease): the other takes over.
	stopFirst()
	for i := 10; i < 15; i++ {
		if _, err := c.client.CoreV1().Pods(ns).Create(ctx, schedPod(ns, fmt.Sprintf("p-%d", i), "100m"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 10; i < 15; i++ {
		schedWaitBound(t, ctx, c, ns, fmt.Sprintf("p-%d", i), 20*time.Second)
	}
	if f, s := firstBinds.Load(), secondBinds.Load(); f != 10 || s != 5 {
		t.Errorf("after failover, bindings: first %d, second %d; want 10 and 5", f, s)
	}
	l, err := c.client.CoordinationV1().Leases("kube-system").Get(ctx, "test-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "second" {
		t.Errorf("lease holder after failover = %v, want second", l.Spec.HolderIdentity)
	}
}

// schedRack is the label the tests' simulated nodes are grouped by. It is
// no zone: Kubernetes' default spreading weighs zones, with two nodes in
// one zone and one in another it ties 2/1/2.
const schedRack = "example.com/rack"

// schedSimulatedNodes joins simulated nodes sim-0, sim-1, ... labelled by
// rack (32 cpu and 64Gi each: a few pods without requests leave their
// resource scores equal) and waits for them to be Ready.
func schedSimulatedNodes(t *testing.T, c *cluster, racks ...string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var names []string
	for i, rack := range racks {
		name := fmt.Sprintf("sim-%d", i)
		names = append(names, name)
		p, err := simulated.New(simulated.Config{NodeName: name, NodeIP: fmt.Sprintf("172.31.0.%d", i+1), PodCIDR: fmt.Sprintf("10.244.%d.0/24", i)})
		if err != nil {
			t.Fatal(err)
		}
		k, err := kubelet.New(kubelet.Config{Client: kubernetes.NewForConfigOrDie(c.config), NodeName: name, Provider: p,
			HeartbeatInterval: time.Second, Labels: map[string]string{schedRack: rack}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = k.Start(ctx) }()
	}
	waitFor(t, "the simulated nodes Ready", func(ctx context.Context) (bool, error) {
		nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(nodes.Items) != len(racks) {
			return false, err
		}
		for _, n := range nodes.Items {
			if !nodeReady(&n) {
				return false, nil
			}
		}
		return true, nil
	})
	return names
}

// schedReplicaSet creates a ReplicaSet of busybox pods labelled app=name,
// for the test scheduler, with their spec changed by spec.
func schedReplicaSet(t *testing.T, c *cluster, ns, name string, replicas int32, spec func(*corev1.PodSpec)) {
	t.Helper()
	rs := rsNew(name, replicas)
	rs.Spec.Template.Spec.SchedulerName = schedTestName
	if spec != nil {
		spec(&rs.Spec.Template.Spec)
	}
	if _, err := c.client.AppsV1().ReplicaSets(ns).Create(ctxT(t), rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// schedPlacement waits until, of the pods labelled app=name, running ones
// run and pending ones have PodScheduled=False, Unschedulable, with the
// message; it returns how many run on each node.
func schedPlacement(t *testing.T, c *cluster, ns, name string, running, pending int, message string) map[string]int {
	t.Helper()
	perNode := map[string]int{}
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 45*time.Second, true, func(ctx context.Context) (bool, error) {
		clear(perNode)
		pods := rsActivePods(t, ctx, c, ns, map[string]string{"app": name})
		var r, p int
		var states []string
		for i := range pods {
			pod := &pods[i]
			conds := schedConditions(pod)
			states = append(states, fmt.Sprintf("%s on %q %s %+v", pod.Name, pod.Spec.NodeName, pod.Status.Phase, conds))
			switch {
			case pod.Status.Phase == corev1.PodRunning:
				r++
				perNode[pod.Spec.NodeName]++
			case pod.Spec.NodeName == "" && len(conds) == 1 && conds[0].Status == corev1.ConditionFalse &&
				conds[0].Reason == corev1.PodReasonUnschedulable && conds[0].Message == message:
				p++
			}
		}
		last = strings.Join(states, "; ")
		return len(pods) == running+pending && r == running && p == pending, nil
	})
	if err != nil {
		t.Fatalf("want %d pods of %s running and %d pending with %q; have %s", running, name, pending, message, last)
	}
	return perNode
}

// TestSchedulerPodAffinityAndSpreading: on three simulated nodes (two in
// rack a, one in rack b), ReplicaSets are placed as Kubernetes places
// them: required anti-affinity by hostname leaves a fourth replica
// pending, DoNotSchedule spreading evens racks (not nodes) out, or keeps
// replicas pending, and replicas without requests spread evenly by
// default.
func TestSchedulerPodAffinityAndSpreading(t *testing.T) {
	c := startCluster(t)
	rsStartControllers(t, c, false)
	nodes := schedSimulatedNodes(t, c, "a", "a", "b")
	schedRun(t, c, scheduler.Config{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	namespace := func(name string) string {
		if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return name
	}
	each := func(perNode map[string]int, want int) bool {
		for _, n := range nodes {
			if perNode[n] != want {
				return false
			}
		}
		return true
	}
	byRack := func(app string) corev1.TopologySpreadConstraint {
		return corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: schedRack, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		}
	}

	t.Run("required anti-affinity on hostname: 3 of 4 replicas run", func(t *testing.T) {
		ns := namespace("anti")
		schedReplicaSet(t, c, ns, "web", 4, func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					TopologyKey:   corev1.LabelHostname,
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				}},
			}}
		})
		const msg = "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."
		if perNode := schedPlacement(t, c, ns, "web", 3, 1, msg); !each(perNode, 1) {
			t.Errorf("replicas per node %v, want 1 on each", perNode)
		}
		for _, p := range rsActivePods(t, ctx, c, ns, map[string]string{"app": "web"}) {
			if p.Spec.NodeName == "" {
				schedWaitEvent(t, ctx, c, ns, p.Name, "FailedScheduling", msg)
			}
		}
	})

	t.Run("topology spread DoNotSchedule evens racks out", func(t *testing.T) {
		ns := namespace("racked")
		schedReplicaSet(t, c, ns, "racked", 4, func(s *corev1.PodSpec) {
			s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{byRack("racked")}
		})
		perNode := schedPlacement(t, c, ns, "racked", 4, 0, "")
		if a, b := perNode[nodes[0]]+perNode[nodes[1]], perNode[nodes[2]]; a != 2 || b != 2 {
			t.Errorf("replicas per node %v: %d in rack a, %d in rack b; want 2 and 2", perNode, a, b)
		}
	})

	t.Run("topology spread DoNotSchedule counting a rack the pods may not use keeps them pending", func(t *testing.T) {
		// Pinned to rack a, with nodeAffinityPolicy Ignore: rack b counts,
		// with none, so rack a may take one.
		ns := namespace("pinned")
		schedReplicaSet(t, c, ns, "pinned", 3, func(s *corev1.PodSpec) {
			s.NodeSelector = map[string]string{schedRack: "a"}
			s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{byRack("pinned")}
			s.TopologySpreadConstraints[0].NodeAffinityPolicy = ptr.To(corev1.NodeInclusionPolicyIgnore)
		})
		schedPlacement(t, c, ns, "pinned", 1, 2,
			"0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 node(s) didn't match pod topology spread constraints.")
	})

	t.Run("replicas without requests spread evenly by default", func(t *testing.T) {
		ns := namespace("plain")
		schedReplicaSet(t, c, ns, "plain", 6, nil)
		if perNode := schedPlacement(t, c, ns, "plain", 6, 0, ""); !each(perNode, 2) {
			t.Errorf("replicas per node %v, want 2 on each", perNode)
		}
	})
}
