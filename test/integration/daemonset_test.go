package integration

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/minik8s/minik8s/pkg/controlplane"
	"github.com/minik8s/minik8s/pkg/kubelet"
	"github.com/minik8s/minik8s/pkg/kubelet/simulated"
)

// dsNodes are simulated nodes a test can add and remove.
type dsNodes struct {
	t      *testing.T
	c      *cluster
	client kubernetes.Interface
	mu     sync.Mutex
	stops  map[string]func()
	n      int
}

func dsStartNodes(t *testing.T, c *cluster, names ...string) *dsNodes {
	t.Helper()
	nodes := &dsNodes{t: t, c: c, client: kubernetes.NewForConfigOrDie(c.config), stops: map[string]func(){}}
	t.Cleanup(func() {
		nodes.mu.Lock()
		defer nodes.mu.Unlock()
		for _, stop := range nodes.stops {
			stop()
		}
	})
	for _, name := range names {
		nodes.add(name)
	}
	return nodes
}

// add joins a simulated node and waits until it is Ready.
func (d *dsNodes) add(name string) {
	d.t.Helper()
	d.mu.Lock()
	d.n++
	i := d.n
	d.mu.Unlock()
	p, err := simulated.New(simulated.Config{NodeName: name, NodeIP: fmt.Sprintf("172.31.2.%d", i), PodCIDR: fmt.Sprintf("10.244.%d.0/24", 150+i)})
	if err != nil {
		d.t.Fatal(err)
	}
	k, err := kubelet.New(kubelet.Config{Client: d.client, NodeName: name, Provider: p, HeartbeatInterval: time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		d.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = k.Start(ctx)
	}()
	d.mu.Lock()
	d.stops[name] = func() { cancel(); <-done }
	d.mu.Unlock()
	waitFor(d.t, "node "+name+" Ready", func(ctx context.Context) (bool, error) {
		n, err := d.c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err == nil && nodeReady(n), nil
	})
}

// remove stops the node's kubelet and deletes the Node, as an admin
// taking a machine out of the cluster does.
func (d *dsNodes) remove(name string) {
	d.t.Helper()
	d.mu.Lock()
	stop := d.stops[name]
	delete(d.stops, name)
	d.mu.Unlock()
	stop()
	if err := d.c.client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		d.t.Fatal(err)
	}
}

// patchNode applies a merge patch to a node.
func dsPatchNode(t *testing.T, c *cluster, name, patch string) {
	t.Helper()
	if _, err := c.client.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func dsNew(name, image string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: rsTemplate(name, image),
		},
	}
}

func dsCreate(t *testing.T, c *cluster, ds *appsv1.DaemonSet) {
	t.Helper()
	if _, err := c.client.AppsV1().DaemonSets("default").Create(context.Background(), ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// dsUpdate changes the DaemonSet with f, retrying on conflicts.
func dsUpdate(t *testing.T, c *cluster, name string, f func(*appsv1.DaemonSet)) {
	t.Helper()
	for {
		ds, err := c.client.AppsV1().DaemonSets("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f(ds)
		_, err = c.client.AppsV1().DaemonSets("default").Update(context.Background(), ds, metav1.UpdateOptions{})
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
	}
}

// dsLivePods maps each node to the DaemonSet's pods on it that are not
// terminating or finished.
func dsLivePods(ctx context.Context, c *cluster, name string) (map[string][]corev1.Pod, error) {
	list, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return nil, err
	}
	out := map[string][]corev1.Pod{}
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		out[p.Spec.NodeName] = append(out[p.Spec.NodeName], p)
	}
	return out, nil
}

// dsWaitOn waits until the DaemonSet has exactly one ready pod on each of
// nodes and none elsewhere, its status says so for its current
// generation, and every pod runs image; it returns the pods by node.
func dsWaitOn(t *testing.T, c *cluster, name, image string, nodes ...string) map[string]corev1.Pod {
	t.Helper()
	var got map[string]corev1.Pod
	var last string
	sort.Strings(nodes)
	what := fmt.Sprintf("daemonset %s running %s on exactly %v", name, image, nodes)
	waitFor(t, what, func(ctx context.Context) (bool, error) {
		byNode, err := dsLivePods(ctx, c, name)
		if err != nil {
			return false, err
		}
		ds, err := c.client.AppsV1().DaemonSets("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		var on []string
		got = map[string]corev1.Pod{}
		for node, pods := range byNode {
			on = append(on, fmt.Sprintf("%s:%d", node, len(pods)))
			if len(pods) != 1 || !podReady(&pods[0]) || pods[0].Spec.Containers[0].Image != image {
				last = fmt.Sprintf("pods %v", on)
				return false, nil
			}
			got[node] = pods[0]
		}
		sort.Strings(on)
		st, n := ds.Status, int32(len(nodes))
		last = fmt.Sprintf("pods %v, status %+v", on, st)
		if len(got) != len(nodes) {
			return false, nil
		}
		for _, node := range nodes {
			if _, ok := got[node]; !ok {
				return false, nil
			}
		}
		return st.ObservedGeneration >= ds.Generation && st.DesiredNumberScheduled == n && st.CurrentNumberScheduled == n &&
			st.NumberReady == n && st.NumberAvailable == n && st.UpdatedNumberScheduled == n &&
			st.NumberUnavailable == 0 && st.NumberMisscheduled == 0, nil
	})
	if t.Failed() {
		t.Log(last)
	}
	return got
}

func TestDaemonSetRunsOnePodPerNode(t *testing.T) {
	// A deleted node's pods are collected after a quarantine (40s by
	// default, in case the node registers again); 1s here.
	c := startClusterWith(t, func(cfg *controlplane.Config) { cfg.Controllers.PodGCQuarantine = time.Second })
	nodes := dsStartNodes(t, c, "ds-a", "ds-b")

	dsCreate(t, c, dsNew("agent", "busybox"))
	pods := dsWaitOn(t, c, "agent", "busybox", "ds-a", "ds-b")
	ds, err := c.client.AppsV1().DaemonSets("default").Get(context.Background(), "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for node, p := range pods {
		if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != ds.UID || ref.Kind != "DaemonSet" {
			t.Errorf("pod %s on %s: controller %+v, want the DaemonSet", p.Name, node, ref)
		}
		if p.Labels[appsv1.ControllerRevisionHashLabelKey] == "" || p.Labels["pod-template-generation"] != "1" {
			t.Errorf("pod %s labels %v: want controller-revision-hash and pod-template-generation=1", p.Name, p.Labels)
		}
		terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) != 1 || len(terms[0].MatchFields) != 1 || terms[0].MatchFields[0].Values[0] != node {
			t.Errorf("pod %s on %s: node affinity %+v, want metadata.name In [%s]", p.Name, node, terms, node)
		}
		if !slices.ContainsFunc(p.Spec.Tolerations, func(tl corev1.Toleration) bool {
			return tl.Key == corev1.TaintNodeUnreachable && tl.Effect == corev1.TaintEffectNoExecute && tl.TolerationSeconds == nil
		}) {
			t.Errorf("pod %s tolerations %+v: want unreachable:NoExecute forever", p.Name, p.Spec.Tolerations)
		}
	}
	waitFor(t, "a SuccessfulCreate event per pod", func(ctx context.Context) (bool, error) {
		return len(rsEvents(t, ctx, c, "default", "DaemonSet", "agent", "SuccessfulCreate")) >= 2, nil
	})

	// A node that joins gets a pod; one that leaves loses it (the pod
	// garbage collector removes pods bound to a deleted node).
	nodes.add("ds-c")
	dsWaitOn(t, c, "agent", "busybox", "ds-a", "ds-b", "ds-c")
	gone := pods["ds-b"].Name
	nodes.remove("ds-b")
	dsWaitOn(t, c, "agent", "busybox", "ds-a", "ds-c")
	waitFor(t, "pod "+gone+" of the deleted node to be deleted", func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().Pods("default").Get(ctx, gone, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	// A deleted pod comes back.
	if err := c.client.CoreV1().Pods("default").Delete(context.Background(), pods["ds-a"].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again := dsWaitOn(t, c, "agent", "busybox", "ds-a", "ds-c")
	if again["ds-a"].Name == pods["ds-a"].Name {
		t.Errorf("pod %s was not replaced", pods["ds-a"].Name)
	}
}

func TestDaemonSetNodeSelectorTaintsTolerations(t *testing.T) {
	c := startCluster(t)
	dsStartNodes(t, c, "ds-a", "ds-b", "ds-c")
	dsPatchNode(t, c, "ds-b", `{"metadata":{"labels":{"role":"edge"}}}`)
	dsPatchNode(t, c, "ds-c", `{"spec":{"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"}]}}`)

	edge := dsNew("edge", "busybox")
	edge.Spec.Template.Spec.NodeSelector = map[string]string{"role": "edge"}
	dsCreate(t, c, edge)
	plain := dsNew("plain", "busybox")
	dsCreate(t, c, plain)
	tolerant := dsNew("tolerant", "busybox")
	tolerant.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	dsCreate(t, c, tolerant)

	dsWaitOn(t, c, "edge", "busybox", "ds-b")
	dsWaitOn(t, c, "plain", "busybox", "ds-a", "ds-b")
	dsWaitOn(t, c, "tolerant", "busybox", "ds-a", "ds-b", "ds-c")

	// The label goes: so does the pod that needed it.
	dsPatchNode(t, c, "ds-b", `{"metadata":{"labels":{"role":null}}}`)
	dsWaitOn(t, c, "edge", "busybox")

	// A NoExecute taint evicts what does not tolerate it.
	dsPatchNode(t, c, "ds-a", `{"spec":{"taints":[{"key":"maintenance","effect":"NoExecute"}]}}`)
	dsWaitOn(t, c, "plain", "busybox", "ds-b")
	dsWaitOn(t, c, "tolerant", "busybox", "ds-b", "ds-c")

	// A NoSchedule taint keeps new pods out but leaves the running one:
	// it counts as misscheduled, not as desired.
	dsPatchNode(t, c, "ds-b", `{"spec":{"taints":[{"key":"dedicated","value":"other","effect":"NoSchedule"}]}}`)
	waitFor(t, "plain's pod on ds-b kept but misscheduled", func(ctx context.Context) (bool, error) {
		ds, err := c.client.AppsV1().DaemonSets("default").Get(ctx, "plain", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		byNode, err := dsLivePods(ctx, c, "plain")
		return err == nil && len(byNode["ds-b"]) == 1 && ds.Status.DesiredNumberScheduled == 0 && ds.Status.NumberMisscheduled == 1, err
	})
}

// dsRolloutWatch watches the DaemonSet's pods on nodes during a rollout
// and records the most nodes without a ready pod and the most nodes with
// two live pods seen at once.
func dsRolloutWatch(t *testing.T, c *cluster, name string, nodes []string) (stop func() (maxUnavailable, maxSurge int)) {
	t.Helper()
	var mu sync.Mutex
	unavailable, surge := 0, 0
	halt := deployWatchPods(t, context.Background(), c, name, func(pods map[string]*corev1.Pod) {
		ready, live := map[string]int{}, map[string]int{}
		for _, p := range pods {
			if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			live[p.Spec.NodeName]++
			if podReady(p) {
				ready[p.Spec.NodeName]++
			}
		}
		u, s := 0, 0
		for _, n := range nodes {
			if ready[n] == 0 {
				u++
			}
			if live[n] > 1 {
				s++
			}
		}
		mu.Lock()
		unavailable, surge = max(unavailable, u), max(surge, s)
		mu.Unlock()
	})
	return func() (int, int) {
		halt()
		mu.Lock()
		defer mu.Unlock()
		return unavailable, surge
	}
}

func TestDaemonSetRollingUpdate(t *testing.T) {
	c := startCluster(t)
	names := []string{"ds-a", "ds-b", "ds-c", "ds-d"}
	dsStartNodes(t, c, names...)
	dsCreate(t, c, dsNew("agent", "busybox"))
	before := dsWaitOn(t, c, "agent", "busybox", names...)

	t.Run("maxUnavailable 1", func(t *testing.T) {
		stop := dsRolloutWatch(t, c, "agent", names)
		dsUpdate(t, c, "agent", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = "busybox:2" })
		after := dsWaitOn(t, c, "agent", "busybox:2", names...)
		unavailable, surge := stop()
		t.Logf("at most %d nodes without a ready pod, %d with two", unavailable, surge)
		if unavailable > 1 || surge > 0 {
			t.Errorf("during the rollout up to %d nodes lacked a ready pod and %d ran two; want at most 1 and 0", unavailable, surge)
		}
		for node, p := range after {
			if p.Name == before[node].Name || p.Labels["pod-template-generation"] != "2" {
				t.Errorf("pod on %s: %s with labels %v, want a new pod of generation 2", node, p.Name, p.Labels)
			}
		}
	})

	t.Run("maxSurge 1", func(t *testing.T) {
		stop := dsRolloutWatch(t, c, "agent", names)
		dsUpdate(t, c, "agent", func(ds *appsv1.DaemonSet) {
			zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
			ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &zero, MaxSurge: &one}
			ds.Spec.Template.Spec.Containers[0].Image = "busybox:3"
		})
		dsWaitOn(t, c, "agent", "busybox:3", names...)
		unavailable, surge := stop()
		t.Logf("at most %d nodes without a ready pod, %d with two", unavailable, surge)
		if unavailable > 0 || surge > 1 {
			t.Errorf("during the rollout up to %d nodes lacked a ready pod and %d ran two; want 0 and at most 1", unavailable, surge)
		}
		if surge == 0 {
			t.Error("no node ever ran the new pod beside the old one")
		}
	})

	t.Run("OnDelete", func(t *testing.T) {
		dsUpdate(t, c, "agent", func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
			ds.Spec.Template.Spec.Containers[0].Image = "busybox:4"
		})
		var ds *appsv1.DaemonSet
		waitFor(t, "the controller to see the OnDelete template", func(ctx context.Context) (bool, error) {
			var err error
			ds, err = c.client.AppsV1().DaemonSets("default").Get(ctx, "agent", metav1.GetOptions{})
			return err == nil && ds.Status.ObservedGeneration >= ds.Generation, err
		})
		if ds.Status.UpdatedNumberScheduled != 0 {
			t.Errorf("updatedNumberScheduled %d right after an OnDelete change, want 0", ds.Status.UpdatedNumberScheduled)
		}
		old, err := dsLivePods(context.Background(), c, "agent")
		if err != nil {
			t.Fatal(err)
		}
		victim := old["ds-a"][0]
		if err := c.client.CoreV1().Pods("default").Delete(context.Background(), victim.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "ds-a's pod recreated from the new template", func(ctx context.Context) (bool, error) {
			byNode, err := dsLivePods(ctx, c, "agent")
			if err != nil || len(byNode["ds-a"]) != 1 {
				return false, err
			}
			p := byNode["ds-a"][0]
			return p.Name != victim.Name && p.Spec.Containers[0].Image == "busybox:4" && podReady(&p), nil
		})
		now, err := dsLivePods(context.Background(), c, "agent")
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names[1:] {
			if len(now[n]) != 1 || now[n][0].Name != old[n][0].Name {
				t.Errorf("pod on %s changed under OnDelete: %v", n, rsPodNames(now[n]))
			}
		}
		waitFor(t, "status: 1 of 4 updated", func(ctx context.Context) (bool, error) {
			ds, err := c.client.AppsV1().DaemonSets("default").Get(ctx, "agent", metav1.GetOptions{})
			return err == nil && ds.Status.UpdatedNumberScheduled == 1 && ds.Status.NumberAvailable == 4, err
		})
	})
}

func TestDaemonSetKubectlRollout(t *testing.T) {
	c := startCluster(t)
	dsStartNodes(t, c, "ds-a", "ds-b")
	k := newKubectl(t, c)
	dir := t.TempDir()
	manifest := func(image string) string {
		return writeTestFile(t, dir, "ds.yaml", `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: logger
spec:
  selector:
    matchLabels: {app: logger}
  template:
    metadata:
      labels: {app: logger}
    spec:
      containers:
      - name: c
        image: `+image+"\n")
	}
	k.ok(t, "apply", "-f", manifest("busybox"))
	if out := k.ok(t, "rollout", "status", "daemonset/logger", "--timeout=60s"); !strings.Contains(out, `daemon set "logger" successfully rolled out`) {
		t.Fatalf("rollout status: %q", out)
	}
	get := k.ok(t, "get", "ds", "logger")
	if h := tableHeader(get); !slices.Equal(h, []string{"NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE", "SELECTOR", "AGE"}) {
		t.Errorf("kubectl get ds header %v", h)
	}
	if f := strings.Fields(outputLines(get)[1]); len(f) < 6 || !slices.Equal(f[1:6], []string{"2", "2", "2", "2", "2"}) {
		t.Errorf("kubectl get ds row %v, want 2 desired, current, ready, up-to-date, available", f)
	}

	wide := k.ok(t, "get", "ds", "logger", "-o", "wide")
	if h := tableHeader(wide); !slices.Equal(h[len(h)-3:], []string{"CONTAINERS", "IMAGES", "SELECTOR"}) {
		t.Errorf("kubectl get ds -o wide header %v", h)
	}
	if desc := k.ok(t, "describe", "ds", "logger"); !strings.Contains(desc, "Pods Status:") || !strings.Contains(desc, "2 Running") {
		t.Errorf("kubectl describe ds:\n%s", desc)
	}

	k.ok(t, "apply", "-f", manifest("busybox:2"))
	if out := k.ok(t, "rollout", "status", "daemonset/logger", "--timeout=60s"); !strings.Contains(out, "successfully rolled out") {
		t.Fatalf("rollout status: %q", out)
	}
	dsWaitOn(t, c, "logger", "busybox:2", "ds-a", "ds-b")
	revisions := func() []string {
		var revs []string
		for _, l := range outputLines(k.ok(t, "rollout", "history", "daemonset/logger"))[1:] {
			if f := strings.Fields(l); len(f) > 0 && f[0] != "REVISION" {
				revs = append(revs, f[0])
			}
		}
		return revs
	}
	if got := revisions(); !slices.Equal(got, []string{"1", "2"}) {
		t.Fatalf("rollout history revisions %v, want [1 2]", got)
	}
	if out := k.ok(t, "rollout", "history", "daemonset/logger", "--revision=1"); !strings.Contains(out, "busybox") || strings.Contains(out, "busybox:2") {
		t.Errorf("revision 1 should show the first template:\n%s", out)
	}

	if out := k.ok(t, "rollout", "undo", "daemonset/logger"); !strings.Contains(out, "rolled back") {
		t.Fatalf("rollout undo: %q", out)
	}
	dsWaitOn(t, c, "logger", "busybox", "ds-a", "ds-b")
	// The template of revision 1 is now the newest: revision 3.
	waitFor(t, "history [2 3]", func(context.Context) (bool, error) { return slices.Equal(revisions(), []string{"2", "3"}), nil })
	ds, err := c.client.AppsV1().DaemonSets("default").Get(context.Background(), "logger", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Annotations["deprecated.daemonset.template.generation"] != "3" {
		t.Errorf("template generation %q after two changes, want 3", ds.Annotations["deprecated.daemonset.template.generation"])
	}
}

func TestDaemonSetBadInput(t *testing.T) {
	c := startClusterWith(t, apiServerOnly)
	dss := c.client.AppsV1().DaemonSets("default")
	ctx := context.Background()
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	cases := []struct {
		name   string
		mutate func(*appsv1.DaemonSet)
		field  string
	}{
		{"no selector", func(ds *appsv1.DaemonSet) { ds.Spec.Selector = nil }, "spec.selector"},
		{"selector not matching the template", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Labels = map[string]string{"app": "other"} }, "spec.template.metadata.labels"},
		{"restartPolicy OnFailure", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure }, "spec.template.spec.restartPolicy"},
		{"unknown strategy", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.Type = "Recreate" }, "spec.updateStrategy.type"},
		{"both surge and unavailable", func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &one, MaxSurge: &one}
		}, "spec.updateStrategy.rollingUpdate.maxSurge"},
		{"neither surge nor unavailable", func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &zero, MaxSurge: &zero}
		}, "spec.updateStrategy.rollingUpdate.maxUnavailable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds := dsNew("bad", "busybox")
			tc.mutate(ds)
			_, err := dss.Create(ctx, ds, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("create: %v; want 422 Invalid naming %s", err, tc.field)
			}
		})
	}
	t.Run("selector changed", func(t *testing.T) {
		dsCreate(t, c, dsNew("fixed", "busybox"))
		ds, err := dss.Get(ctx, "fixed", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ds.Spec.Selector.MatchLabels["tier"] = "x"
		ds.Spec.Template.Labels["tier"] = "x"
		if _, err := dss.Update(ctx, ds, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.selector") {
			t.Fatalf("update: %v; want 422 Invalid naming spec.selector", err)
		}
	})
}
