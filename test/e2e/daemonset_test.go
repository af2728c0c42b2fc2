package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A user applies examples/daemonset.yaml: every node runs one node-agent
// pod, which knows its node, and a node that joins later gets one too.
func TestDaemonSetCoversEveryNode(t *testing.T) {
	c := newCluster(t, 2)
	k := c.kubectl
	example := func(name string) string { return filepath.Join("..", "..", "examples", name) }
	k.OK(t, "apply", "-f", example("00-namespace.yaml"))
	k.OK(t, "apply", "-f", example("daemonset.yaml"))
	if out := k.OK(t, "rollout", "status", "-n", "demo", "daemonset/node-agent", "--timeout=3m"); !strings.Contains(out, "successfully rolled out") {
		t.Fatalf("rollout status: %q", out)
	}
	c.waitAgents(c.tag+"-n1", c.tag+"-n2")

	// A node joins: it gets its agent without anyone touching the
	// DaemonSet.
	joined := c.addNode(c.tag+"-n3", nil)
	t.Cleanup(func() {
		// Before the joined node's network namespace goes (its cleanup
		// was registered after the cluster's teardown): the agents go,
		// then the node, so the teardown finds nothing of it.
		_, _, _ = k.Run(t, "delete", "-f", example("daemonset.yaml"), "--wait=true")
		c.waitFor(2*time.Minute, "node-agent pods gone", func(ctx context.Context) (bool, error) {
			pods, err := c.client.CoreV1().Pods("demo").List(ctx, metav1.ListOptions{LabelSelector: "app=node-agent"})
			return err == nil && len(pods.Items) == 0, nil
		})
		c.stopNode(joined)
		delete(c.nodes, joined.name)
	})
	c.waitNodesReady(3)
	c.waitAgents(c.tag+"-n1", c.tag+"-n2", c.tag+"-n3")
	if out := k.OK(t, "rollout", "status", "-n", "demo", "daemonset/node-agent", "--timeout=3m"); !strings.Contains(out, "successfully rolled out") {
		t.Fatalf("rollout status after the join: %q", out)
	}
	get := k.OK(t, "get", "daemonset", "-n", "demo", "node-agent")
	if f := strings.Fields(strings.Split(strings.TrimSpace(get), "\n")[1]); len(f) < 6 || f[1] != "3" || f[5] != "3" {
		t.Errorf("kubectl get daemonset:\n%s\nwant 3 desired and 3 available", get)
	}
}

// waitAgents waits until each of nodes runs exactly one Running, ready
// node-agent pod, whose log names the node, and no other node runs one.
func (c *cluster) waitAgents(nodes ...string) {
	t := c.t
	t.Helper()
	var byNode map[string][]corev1.Pod
	c.waitFor(3*time.Minute, "a ready node-agent on each of "+strings.Join(nodes, ", "), func(ctx context.Context) (bool, error) {
		pods, err := c.client.CoreV1().Pods("demo").List(ctx, metav1.ListOptions{LabelSelector: "app=node-agent"})
		if err != nil {
			return false, nil
		}
		byNode = map[string][]corev1.Pod{}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
			}
		}
		if len(byNode) != len(nodes) {
			return false, nil
		}
		for _, n := range nodes {
			if len(byNode[n]) != 1 || !running(&byNode[n][0]) {
				return false, nil
			}
		}
		return true, nil
	})
	for _, n := range nodes {
		p := byNode[n][0]
		c.waitFor(time.Minute, "the agent on "+n+" to log its node", func(context.Context) (bool, error) {
			out, _, err := c.kubectl.Run(t, "logs", "-n", "demo", p.Name)
			return err == nil && strings.Contains(out, "agent on "+n), nil
		})
	}
}
