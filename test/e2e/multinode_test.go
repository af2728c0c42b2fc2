package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Three nodes, each a kubelet in its own network namespace: the scheduler
// spreads pods, pods reach each other by IP across nodes, nodeSelector and
// taints are respected, and a pod that fits nowhere says why.
func TestMultiNode(t *testing.T) {
	c := newCluster(t, 3)
	k := c.kubectl
	ctx := context.Background()
	names := []string{c.tag + "-n1", c.tag + "-n2", c.tag + "-n3"}

	nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cidrs := map[string]bool{}
	minCPU := int64(-1)
	for _, n := range nodes.Items {
		cidrs[n.Spec.PodCIDR] = true
		if m := n.Status.Allocatable.Cpu().MilliValue(); minCPU < 0 || m < minCPU {
			minCPU = m
		}
	}
	if len(cidrs) != 3 {
		t.Fatalf("nodes' pod CIDRs %v, want three distinct ones", cidrs)
	}

	// Requests of 40% of a node's CPU fit two pods a node: six pods spread
	// over all three.
	request := resource.NewMilliQuantity(minCPU*2/5, resource.DecimalSI).String()
	for i := range 6 {
		c.apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: web-%d, labels: {app: web}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: busybox
    command: ["sh", "-c", "mkdir -p /tmp/www && hostname > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"]
    resources: {requests: {cpu: %s}}
`, i, request))
	}
	perNode := map[string][]*corev1.Pod{}
	for i := range 6 {
		p := c.waitPod("default", fmt.Sprintf("web-%d", i), 2*time.Minute, "Running", running)
		perNode[p.Spec.NodeName] = append(perNode[p.Spec.NodeName], p)
	}
	for _, n := range names {
		if len(perNode[n]) != 2 {
			t.Errorf("node %s runs %d web pods, want 2 (spread: %v)", n, len(perNode[n]), podsByNode(perNode))
		}
	}

	// Every pod answers, by its IP, a client pod on every other node.
	for _, client := range names {
		if len(perNode[client]) == 0 {
			continue
		}
		from := perNode[client][0]
		for _, server := range names {
			if server == client {
				continue
			}
			for _, target := range perNode[server] {
				got, stderr, err := k.Run(t, "exec", from.Name, "--", "wget", "-qO-", "http://"+target.Status.PodIP+":8080")
				if err != nil || strings.TrimSpace(got) != target.Name {
					t.Errorf("%s on %s -> %s (%s) on %s: %q, %v %s", from.Name, client, target.Name, target.Status.PodIP, server, got, err, stderr)
				}
			}
		}
		// Pod egress to its own node works.
		if _, stderr, err := k.Run(t, "exec", from.Name, "--", "ping", "-c", "1", "-W", "3", c.nodes[client].ip.String()); err != nil {
			t.Errorf("ping the node %s from %s: %v %s", c.nodes[client].ip, from.Name, err, stderr)
		}
	}
	k.OK(t, "delete", "pods", "-l", "app=web", "--grace-period=1")

	// nodeSelector.
	k.OK(t, "label", "node", names[1], "disk=ssd")
	c.apply(`apiVersion: v1
kind: Pod
metadata: {name: on-ssd}
spec:
  nodeSelector: {disk: ssd}
  containers: [{name: c, image: busybox, command: ["sleep", "3600"]}]
`)
	if p := c.waitPod("default", "on-ssd", time.Minute, "Running", running); p.Spec.NodeName != names[1] {
		t.Errorf("nodeSelector disk=ssd: pod on %s, want %s", p.Spec.NodeName, names[1])
	}

	// Taints: with two nodes tainted, untolerating pods go to the third;
	// a toleration lets a pod onto a tainted node.
	k.OK(t, "taint", "node", names[0], "dedicated=gpu:NoSchedule")
	k.OK(t, "taint", "node", names[1], "dedicated=gpu:NoSchedule")
	for i := range 2 {
		c.apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: plain-%d}
spec:
  containers: [{name: c, image: busybox, command: ["sleep", "3600"]}]
`, i))
	}
	c.apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: tolerant}
spec:
  nodeSelector: {kubernetes.io/hostname: %s}
  tolerations: [{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}]
  containers: [{name: c, image: busybox, command: ["sleep", "3600"]}]
`, names[0]))
	for i := range 2 {
		if p := c.waitPod("default", fmt.Sprintf("plain-%d", i), time.Minute, "Running", running); p.Spec.NodeName != names[2] {
			t.Errorf("plain-%d went to tainted node %s", i, p.Spec.NodeName)
		}
	}
	if p := c.waitPod("default", "tolerant", time.Minute, "Running", running); p.Spec.NodeName != names[0] {
		t.Errorf("tolerant pod on %s, want %s", p.Spec.NodeName, names[0])
	}

	// A pod that fits nowhere explains itself.
	c.apply(`apiVersion: v1
kind: Pod
metadata: {name: too-big}
spec:
  containers:
  - {name: c, image: busybox, command: ["sleep", "3600"], resources: {requests: {cpu: "1000"}}}
`)
	p := c.waitPod("default", "too-big", time.Minute, "PodScheduled=False", func(p *corev1.Pod) bool {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				return true
			}
		}
		return false
	})
	var msg string
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled {
			msg = cond.Message
		}
	}
	if !strings.HasPrefix(msg, "0/3 nodes are available:") || !strings.Contains(msg, "Insufficient cpu") {
		t.Errorf("unschedulable message %q, want 0/3 nodes are available: ... Insufficient cpu", msg)
	}
	if d := k.OK(t, "describe", "pod", "too-big"); !strings.Contains(d, "FailedScheduling") || !strings.Contains(d, "Insufficient cpu") {
		t.Errorf("kubectl describe pod too-big shows no FailedScheduling event:\n%s", d)
	}
}

func podsByNode(m map[string][]*corev1.Pod) string {
	var parts []string
	for n, ps := range m {
		var names []string
		for _, p := range ps {
			names = append(names, p.Name)
		}
		parts = append(parts, n+": "+strings.Join(names, ","))
	}
	return strings.Join(parts, "; ")
}
