package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A user places replicas by other pods on three nodes: a Deployment of 4
// whose pods must not share a node runs 3 and leaves one Pending, saying
// why in kubectl describe; scaled to 3, it runs one pod on every node; a
// pod that must sit next to a cache goes to the cache's node.
func TestScheduling(t *testing.T) {
	c := newCluster(t, 3)
	k := c.kubectl

	c.apply(`apiVersion: apps/v1
kind: Deployment
metadata: {name: apart}
spec:
  replicas: 4
  selector: {matchLabels: {app: apart}}
  template:
    metadata: {labels: {app: apart}}
    spec:
      terminationGracePeriodSeconds: 1
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: kubernetes.io/hostname
            labelSelector: {matchLabels: {app: apart}}
      containers:
      - {name: c, image: busybox, command: ["sleep", "3600"]}
`)
	const why = "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."
	var pending string
	perNode := map[string]int{}
	c.waitFor(2*time.Minute, "3 pods of apart running, one a node, and 1 pending", func(ctx context.Context) (bool, error) {
		pods, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=apart"})
		if err != nil {
			return false, nil
		}
		clear(perNode)
		pending = ""
		for i := range pods.Items {
			p := &pods.Items[i]
			switch {
			case p.DeletionTimestamp != nil:
			case running(p):
				perNode[p.Spec.NodeName]++
			case p.Spec.NodeName == "" && unschedulable(p) == why:
				pending = p.Name
			default:
				return false, nil
			}
		}
		return len(perNode) == 3 && pending != "", nil
	})
	for n, count := range perNode {
		if count != 1 {
			t.Errorf("node %s runs %d apart pods, want 1", n, count)
		}
	}
	if out := k.OK(t, "describe", "pod", pending); !strings.Contains(out, "FailedScheduling") || !strings.Contains(out, "didn't match pod anti-affinity rules") {
		t.Errorf("kubectl describe pod %s does not say why it is pending:\n%s", pending, out)
	}

	k.OK(t, "scale", "deployment/apart", "--replicas=3")
	onNodes := map[string]bool{}
	for _, p := range c.waitReady(t, "app=apart", 3) {
		onNodes[p.Spec.NodeName] = true
	}
	if len(onNodes) != 3 {
		t.Errorf("3 apart pods on %d nodes, want 3", len(onNodes))
	}

	c.apply(`apiVersion: v1
kind: Pod
metadata: {name: cache, labels: {app: cache}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: busybox, command: ["sleep", "3600"]}]
`)
	cache := c.waitPod("default", "cache", time.Minute, "Running", running)
	c.apply(`apiVersion: v1
kind: Pod
metadata: {name: near-cache}
spec:
  terminationGracePeriodSeconds: 1
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: kubernetes.io/hostname
        labelSelector: {matchLabels: {app: cache}}
  containers: [{name: c, image: busybox, command: ["sleep", "3600"]}]
`)
	if p := c.waitPod("default", "near-cache", time.Minute, "Running", running); p.Spec.NodeName != cache.Spec.NodeName {
		t.Errorf("near-cache on %s, the cache on %s", p.Spec.NodeName, cache.Spec.NodeName)
	}
}

// unschedulable is the message of the pod's PodScheduled=False
// Unschedulable condition, "" without one.
func unschedulable(p *corev1.Pod) string {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
			return cond.Message
		}
	}
	return ""
}
