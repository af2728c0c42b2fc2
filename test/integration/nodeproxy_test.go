package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/minik8s/minik8s/pkg/kubelet/simulated"
)

// TestNodeProxyMetrics scrapes a kubelet the way Prometheus'
// kubernetes_sd "kubernetes-nodes" and "kubernetes-nodes-cadvisor" jobs do:
// GET /api/v1/nodes/<node>/proxy/metrics[/cadvisor] through the apiserver,
// which reaches the node's kubelet with its kubelet client certificate. A
// user needs get on nodes/proxy for it.
func TestNodeProxyMetrics(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	startServingNode(t, c, "scraped")

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Annotations: map[string]string{
			simulated.AnnotationCPUUsage: "250m", simulated.AnnotationMemoryUsage: "64Mi"}},
		Spec: corev1.PodSpec{NodeName: "scraped", Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}
	if _, err := c.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var uid string
	waitFor(t, "web Running", func(ctx context.Context) (bool, error) {
		p, err := c.client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodRunning {
			return false, nil
		}
		uid = string(p.UID)
		return true, nil
	})

	scrape := func(t *testing.T, client kubernetes.Interface, path string) ([]sample, error) {
		t.Helper()
		res := client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/scraped/proxy" + path).Do(ctx)
		// Error, not Raw's error: it reads the apiserver's Status.
		if err := res.Error(); err != nil {
			return nil, err
		}
		body, _ := res.Raw()
		return parseMetrics(t, body), nil
	}

	t.Run("cadvisor", func(t *testing.T) {
		samples, err := scrape(t, c.client, "/metrics/cadvisor")
		if err != nil {
			t.Fatal(err)
		}
		app := map[string]string{"namespace": "default", "pod": "web", "container": "app", "image": "nginx:1.27", "name": uid + "/app"}
		podCgroup := map[string]string{"namespace": "default", "pod": "web", "container": ""}
		for _, tc := range []struct {
			name   string
			labels map[string]string
			want   float64 // 0: any value
		}{
			{"container_memory_working_set_bytes", app, 64 << 20},
			{"container_memory_usage_bytes", app, 64 << 20},
			{"container_memory_rss", app, 64 << 20},
			{"container_cpu_usage_seconds_total", app, 0},
			{"container_start_time_seconds", app, 0},
			{"container_memory_working_set_bytes", podCgroup, 64 << 20},
			{"container_memory_working_set_bytes", map[string]string{"id": "/"}, 64 << 20},
			{"machine_cpu_cores", nil, 32},
			{"machine_memory_bytes", nil, 64 << 30},
		} {
			got, ok := metricValue(samples, tc.name, tc.labels)
			if !ok || (tc.want != 0 && got != tc.want) {
				t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, got, ok, tc.want)
			}
		}
		if cpu, _ := metricValue(samples, "container_cpu_usage_seconds_total", map[string]string{"container": "app", "cpu": "total"}); cpu < 0 {
			t.Errorf("app's cpu seconds = %v", cpu)
		}
	})

	t.Run("kubelet", func(t *testing.T) {
		samples, err := scrape(t, c.client, "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name   string
			labels map[string]string
			want   float64
		}{
			{"kubelet_node_name", map[string]string{"node": "scraped"}, 1},
			{"kubelet_running_pods", nil, 1},
			{"kubelet_running_containers", map[string]string{"container_state": "running"}, 1},
		} {
			if got, ok := metricValue(samples, tc.name, tc.labels); !ok || got != tc.want {
				t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, got, ok, tc.want)
			}
		}
	})

	t.Run("authorization", func(t *testing.T) {
		prometheus := clientAs(t, c, "prometheus")
		_, err := scrape(t, prometheus, "/metrics/cadvisor")
		wantForbidden(t, "prometheus, unbound, scrapes", err, `User "prometheus" cannot get resource "nodes/proxy" in API group "" at the cluster scope`)

		// What Prometheus' example ClusterRole grants.
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "prometheus"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes", "nodes/proxy", "services", "endpoints", "pods"}, Verbs: []string{"get", "list", "watch"}},
		}}
		if _, err := c.client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "prometheus"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "prometheus"}}}
		if _, err := c.client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitAllowed(t, "prometheus scrapes with nodes/proxy", func() error {
			_, err := scrape(t, prometheus, "/metrics/cadvisor")
			return err
		})
		// A node reaches no kubelet through the apiserver, not even one
		// on its own behalf: the apiserver's certificate opens them all.
		other := clientAs(t, c, "system:node:other", "system:nodes")
		_, err = scrape(t, other, "/metrics")
		wantForbidden(t, "another node scrapes through the proxy", err, `cannot get resource "nodes/proxy"`)
		// get is not create: the kubelet's exec stays out of reach.
		err = prometheus.CoreV1().RESTClient().Post().AbsPath("/api/v1/nodes/scraped/proxy/exec/default/web/app").
			Param("command", "ls").Param("output", "1").Do(ctx).Error()
		wantForbidden(t, "prometheus posts to nodes/proxy", err, `cannot create resource "nodes/proxy"`)
	})
}
