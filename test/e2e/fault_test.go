package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/minik8s/minik8s/pkg/controlplane"
)

// A node dies: its kubelet stops (its containers keep running, as on a
// machine cut off from the network). The control plane notices, marks the
// node unreachable and moves its ReplicaSet's pods to the other nodes.
// When the node comes back, its kubelet stops the pods that were moved
// away, and exactly the desired number of pods remain.
func TestNodeFailure(t *testing.T) {
	const grace = 8 * time.Second
	c := newClusterWith(t, 3, func(cfg *controlplane.Config) {
		cfg.Controllers.NodeMonitorGracePeriod = grace
	})
	c.deleteWorkloadsAtCleanup()
	ctx := context.Background()

	// The apiserver would give the pods 300s tolerations of an unreachable
	// or not-ready node; these tolerate one for 3s only.
	c.apply(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      tolerations:
      - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 3}
      - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 3}
      containers:
      - {name: web, image: busybox, command: ["sleep", "3600"]}
`)
	var pods []corev1.Pod
	c.waitFor(2*time.Minute, "6 web pods Running", func(ctx context.Context) (bool, error) {
		pods = c.podsOf(ctx, "app=web")
		return len(pods) == 6 && all(pods, running), nil
	})
	// The victim is the node running the most of them.
	perNode := map[string][]string{}
	for _, p := range pods {
		perNode[p.Spec.NodeName] = append(perNode[p.Spec.NodeName], p.Name)
	}
	var victim *testNode
	for name, n := range c.nodes {
		if victim == nil || len(perNode[name]) > len(perNode[victim.name]) {
			victim = n
		}
	}
	moved := perNode[victim.name]
	t.Logf("pods per node: %v; stopping %s", perNode, victim.name)

	start := time.Now()
	c.stopNode(victim)
	c.waitFor(grace+time.Minute, victim.name+" Ready=Unknown and tainted unreachable", func(ctx context.Context) (bool, error) {
		n, err := c.client.CoreV1().Nodes().Get(ctx, victim.name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return readyStatus(n) == corev1.ConditionUnknown &&
			hasTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) &&
			hasTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule), nil
	})
	t.Logf("%s unreachable %v after its kubelet stopped (grace period %v)", victim.name, since(start), grace)

	// Its pods are evicted once their 3s toleration has passed and
	// replaced on the two other nodes. The evicted ones stay Terminating:
	// only their kubelet can say their containers have stopped.
	c.waitFor(2*time.Minute, "6 web pods Running on the other nodes", func(ctx context.Context) (bool, error) {
		pods = active(c.podsOf(ctx, "app=web"))
		return len(pods) == 6 && all(pods, func(p *corev1.Pod) bool {
			return running(p) && p.Spec.NodeName != victim.name
		}), nil
	})
	t.Logf("6 pods Running on the other nodes %v after the kubelet stopped", since(start))
	for _, name := range moved {
		p, err := c.client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp == nil {
			t.Errorf("evicted pod %s, while its node is down: %v, want it Terminating (err %v)", name, describeStatus(p), err)
		}
	}
	if ev := c.kubectl.OK(t, "get", "events", "--field-selector", "involvedObject.name="+victim.name); !strings.Contains(ev, "NodeNotReady") {
		t.Errorf("no NodeNotReady event for %s:\n%s", victim.name, ev)
	}
	if ev := c.kubectl.OK(t, "get", "events", "--field-selector", "involvedObject.name="+moved[0]); !strings.Contains(ev, "TaintManagerEviction") {
		t.Errorf("no TaintManagerEviction event for %s:\n%s", moved[0], ev)
	}
	if left := containersOfPods(c.containersOf(ctx), moved); len(left) == 0 {
		t.Errorf("the stopped node's containers are gone while its kubelet is down; want them running until it returns")
	}

	// The node returns: Ready, untainted; it stops the evicted pods and
	// their objects go.
	start = time.Now()
	c.startNode(victim)
	c.waitFor(time.Minute, victim.name+" Ready without the unreachable and not-ready taints", func(ctx context.Context) (bool, error) {
		n, err := c.client.CoreV1().Nodes().Get(ctx, victim.name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return nodeReady(n) && !hasTaint(n, corev1.TaintNodeUnreachable, "") && !hasTaint(n, corev1.TaintNodeNotReady, ""), nil
	})
	t.Logf("%s Ready and untainted %v after its kubelet started", victim.name, since(start))
	c.waitFor(time.Minute, "the evicted pods' objects to go", func(ctx context.Context) (bool, error) {
		for _, name := range moved {
			if _, err := c.client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
	t.Logf("evicted pods gone %v after the kubelet started", since(start))

	// No duplicates, now or a few controller rounds later.
	for range 2 {
		pods = c.podsOf(ctx, "app=web")
		if len(pods) != 6 || !all(pods, running) {
			var got []string
			for _, p := range pods {
				got = append(got, p.Name+" on "+p.Spec.NodeName+": "+describeStatus(&p))
			}
			t.Fatalf("%d web pods after the node returned, want 6 Running:\n%s", len(pods), strings.Join(got, "\n"))
		}
		time.Sleep(3 * time.Second)
	}
	d, err := c.client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.Replicas != 6 || d.Status.ReadyReplicas != 6 {
		t.Errorf("deployment web: %d replicas, %d ready, want 6 and 6", d.Status.Replicas, d.Status.ReadyReplicas)
	}
	// The returned kubelet removed the evicted pods' containers.
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	for _, ct := range c.containersOf(ctx) {
		if pod := strings.Split(ct, "/")[1]; !slices.Contains(names, pod) {
			t.Errorf("container %s belongs to no pod any more", ct)
		}
	}
}

// deleteWorkloadsAtCleanup deletes, when the test ends and before the
// framework's teardown deletes the pods, the Deployments, ReplicaSets and
// Jobs that would otherwise replace them.
func (c *cluster) deleteWorkloadsAtCleanup() {
	c.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		bg := metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationBackground)}
		apps, batch := c.client.AppsV1(), c.client.BatchV1()
		nss, err := c.client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			c.t.Errorf("list namespaces: %v", err)
			return
		}
		for _, ns := range nss.Items {
			for _, err := range []error{
				apps.Deployments(ns.Name).DeleteCollection(ctx, bg, metav1.ListOptions{}),
				apps.ReplicaSets(ns.Name).DeleteCollection(ctx, bg, metav1.ListOptions{}),
				batch.Jobs(ns.Name).DeleteCollection(ctx, bg, metav1.ListOptions{}),
			} {
				if err != nil {
					c.t.Errorf("delete workloads in %s: %v", ns.Name, err)
				}
			}
		}
		err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			rs, err1 := apps.ReplicaSets("").List(ctx, metav1.ListOptions{})
			jobs, err2 := batch.Jobs("").List(ctx, metav1.ListOptions{})
			return err1 == nil && err2 == nil && len(rs.Items) == 0 && len(jobs.Items) == 0, nil
		})
		if err != nil {
			c.t.Errorf("workloads not gone a minute after deletion: %v", err)
		}
	})
}

// podsOf lists the default namespace's pods with the label selector.
func (c *cluster) podsOf(ctx context.Context, selector string) []corev1.Pod {
	list, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil
	}
	return list.Items
}

// active drops the pods being deleted.
func active(pods []corev1.Pod) []corev1.Pod {
	return slices.DeleteFunc(pods, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
}

func all(pods []corev1.Pod, ok func(*corev1.Pod) bool) bool {
	for i := range pods {
		if !ok(&pods[i]) {
			return false
		}
	}
	return true
}

// containersOfPods keeps the containersOf entries (node/pod/id) of the
// named pods.
func containersOfPods(containers, pods []string) []string {
	var out []string
	for _, ct := range containers {
		if slices.Contains(pods, strings.Split(ct, "/")[1]) {
			out = append(out, ct)
		}
	}
	return out
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status
		}
	}
	return ""
}

// hasTaint reports whether the node has the taint key with effect (any
// effect when empty).
func hasTaint(n *corev1.Node, key string, effect corev1.TaintEffect) bool {
	for _, taint := range n.Spec.Taints {
		if taint.Key == key && (effect == "" || taint.Effect == effect) {
			return true
		}
	}
	return false
}

func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }
