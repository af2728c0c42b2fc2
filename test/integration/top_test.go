package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/kubelet/simulated"
)

// TestTop is `kubectl top` against the built-in metrics.k8s.io API: two
// simulated nodes whose kubelets serve /stats/summary, pods that "use" what
// their annotations say, and the rows kubectl prints for them.
func TestTop(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startServingNode(t, c, "top-a")
	startServingNode(t, c, "top-b")
	k := newKubectl(t, c)

	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tools"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	usage := func(cpu, memory string) map[string]string {
		return map[string]string{simulated.AnnotationCPUUsage: cpu, simulated.AnnotationMemoryUsage: memory}
	}
	for _, pod := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{"app": "web"}, Annotations: usage("250m", "64Mi")},
			Spec: corev1.PodSpec{NodeName: "top-a", Containers: []corev1.Container{{Name: "app", Image: "busybox"}, {Name: "proxy", Image: "busybox"}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db", Labels: map[string]string{"app": "db"}, Annotations: usage("1500m", "1Gi")},
			Spec: corev1.PodSpec{NodeName: "top-b", Containers: []corev1.Container{{Name: "postgres", Image: "busybox"}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "tools", Name: "idle"},
			Spec: corev1.PodSpec{NodeName: "top-a", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
	} {
		if _, err := c.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, pod.Name+" Running", func(ctx context.Context) (bool, error) {
			p, err := c.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning, nil
		})
	}

	// Each simulated node has 32 cpus and 64Gi.
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"top", "nodes"}, []string{
			"NAME CPU(cores) CPU(%) MEMORY(bytes) MEMORY(%)",
			"top-a 500m 1% 128Mi 0%",
			"top-b 1500m 4% 1024Mi 1%",
		}},
		{[]string{"top", "node", "top-b", "--no-headers"}, []string{"top-b 1500m 4% 1024Mi 1%"}},
		{[]string{"top", "nodes", "-l", "type=simulated", "--sort-by=cpu", "--no-headers"}, []string{
			"top-b 1500m 4% 1024Mi 1%",
			"top-a 500m 1% 128Mi 0%",
		}},
		{[]string{"top", "pods"}, []string{
			"NAME CPU(cores) MEMORY(bytes)",
			"db 1500m 1024Mi",
			"web 500m 128Mi",
		}},
		{[]string{"top", "pods", "-A", "--sort-by=memory"}, []string{
			"NAMESPACE NAME CPU(cores) MEMORY(bytes)",
			"default db 1500m 1024Mi",
			"default web 500m 128Mi",
			"tools idle 0m 0Mi",
		}},
		{[]string{"top", "pod", "web", "--containers"}, []string{
			"POD NAME CPU(cores) MEMORY(bytes)",
			"web app 250m 64Mi",
			"web proxy 250m 64Mi",
		}},
		{[]string{"top", "pods", "-l", "app=db", "--no-headers"}, []string{"db 1500m 1024Mi"}},
		{[]string{"top", "pods", "--field-selector", "spec.nodeName=top-a", "-A", "--no-headers"}, []string{
			"default web 500m 128Mi",
			"tools idle 0m 0Mi",
		}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var got []string
			for _, line := range outputLines(k.ok(t, tc.args...)) {
				got = append(got, strings.Join(strings.Fields(line), " "))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("kubectl %s:\n%s\nwant:\n%s", strings.Join(tc.args, " "), strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}

	t.Run("errors", func(t *testing.T) {
		if out := k.fails(t, "top", "pod", "nope"); !strings.Contains(out, `podmetrics.metrics.k8s.io "nope" not found`) {
			t.Errorf("kubectl top pod nope: %s", out)
		}
		if out := k.fails(t, "top", "node", "nope"); !strings.Contains(out, `nodemetrics.metrics.k8s.io "nope" not found`) {
			t.Errorf("kubectl top node nope: %s", out)
		}
	})

	t.Run("kubectl get", func(t *testing.T) {
		got := outputLines(k.ok(t, "get", "podmetrics", "web"))
		if len(got) != 2 || strings.Join(strings.Fields(got[1]), " ") != "web 500m 128Mi 10s" {
			t.Errorf("kubectl get podmetrics web:\n%s", strings.Join(got, "\n"))
		}
		got = outputLines(k.ok(t, "get", "nodes.metrics.k8s.io", "-o", "name"))
		if !slices.Equal(got, []string{"nodemetrics.metrics.k8s.io/top-a", "nodemetrics.metrics.k8s.io/top-b"}) {
			t.Errorf("kubectl get nodes.metrics.k8s.io -o name: %q", got)
		}
	})
}
