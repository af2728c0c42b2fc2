package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet/simulated"
	"github.com/minik8s/minik8s/pkg/prometheus"
)

// TestPrometheusFindsItsTargets runs the real Prometheus against the
// apiserver, as its own user, and watches it find its targets through
// kubernetes_sd_configs: a Node (its kubelet through the apiserver's
// proxy, its node exporter at its InternalIP), a Pod and a Service
// annotated prometheus.io/scrape, and the apiserver itself. The pod's and
// the node exporter's metrics are test servers on 127.0.0.1. Deleting the
// objects removes their targets without a restart. CI builds Prometheus
// with hack/install-deps.sh.
func TestPrometheusFindsItsTargets(t *testing.T) {
	if _, err := prometheus.FindBinary(); err != nil {
		t.Skipf("no prometheus with Kubernetes service discovery (hack/install-deps.sh builds it, CI has it): %v", err)
	}
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)

	podMetrics := metricsServer(t, "/custom/metrics", "minik8s_prometheus_test_pod 42\n")
	exporter := metricsServer(t, "/metrics", "minik8s_prometheus_test_node 7\n")
	prom := startPrometheus(t, c, exporter.port)

	const nodeName, podName, svcName = "prom-node", "prom-pod", "prom-svc"
	node, err := c.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: nodeName}}
	if _, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := c.client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName, Labels: map[string]string{"app": "prom-test"}, Annotations: map[string]string{
			"prometheus.io/scrape": "true", "prometheus.io/port": strconv.Itoa(podMetrics.port), "prometheus.io/path": "/custom/metrics"}},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1", PodIPs: []corev1.PodIP{{IP: "127.0.0.1"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}}
	if _, err := c.client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Its endpoints come from the EndpointSlice controller.
	if _, err := c.client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: svcName, Annotations: map[string]string{
			"prometheus.io/scrape": "true", "prometheus.io/path": "/custom/metrics"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "prom-test"}, Ports: []corev1.ServicePort{
			{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt(podMetrics.port)}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	api, err := neturl.Parse(c.cp.URL)
	if err != nil {
		t.Fatal(err)
	}
	ofNode := map[string]string{"node": nodeName}
	ofPod := map[string]string{"namespace": "default", "pod": podName, "container": "app"}
	ofService := map[string]string{"namespace": "default", "service": svcName, "pod": podName, "node": nodeName}
	want := []struct {
		job       string
		labels    map[string]string
		scrapeURL string
		up        bool
	}{
		{prometheus.JobAPIServer, nil, "https://" + api.Host + "/metrics", true},
		{prometheus.JobKubelet, ofNode, "https://" + api.Host + "/api/v1/nodes/" + nodeName + "/proxy/metrics", false},
		{prometheus.JobKubeletCadvisor, ofNode, "https://" + api.Host + "/api/v1/nodes/" + nodeName + "/proxy/metrics/cadvisor", false},
		{prometheus.JobNodeExporter, ofNode, "http://127.0.0.1:" + strconv.Itoa(exporter.port) + "/metrics", true},
		{prometheus.JobPods, ofPod, "http://127.0.0.1:" + strconv.Itoa(podMetrics.port) + "/custom/metrics", true},
		{prometheus.JobServiceEndpoints, ofService, "http://127.0.0.1:" + strconv.Itoa(podMetrics.port) + "/custom/metrics", true},
	}
	var found []promTarget
	promEventually(t, ctx, "every target discovered and scraped", func() error {
		targets, err := prom.targets(ctx)
		if err != nil {
			return err
		}
		found = targets
		for _, w := range want {
			tg := findTarget(targets, w.job, w.labels)
			switch {
			case tg == nil:
				return fmt.Errorf("no %s target labelled %v in %s", w.job, w.labels, targetsString(targets))
			case tg.ScrapeURL != w.scrapeURL:
				return fmt.Errorf("%s target %v scrapes %s, want %s", w.job, tg.Labels, tg.ScrapeURL, w.scrapeURL)
			case w.up && tg.Health != "up":
				return fmt.Errorf("%s target %s is %q (%s), want up", w.job, tg.ScrapeURL, tg.Health, tg.LastError)
			case tg.Health == "unknown":
				return fmt.Errorf("%s target %s not scraped yet", w.job, tg.ScrapeURL)
			case strings.Contains(tg.LastError, "403"):
				// Down (no kubelet answers) is fine; refused is not.
				return fmt.Errorf("%s target %s: the apiserver refuses Prometheus: %s", w.job, tg.ScrapeURL, tg.LastError)
			}
		}
		return nil
	})
	t.Logf("targets:%s", targetsString(found))
	promEventually(t, ctx, "the pod's metric queryable", func() error {
		got, err := prom.query(ctx, `minik8s_prometheus_test_pod{job="pods",pod="`+podName+`"}`)
		if err != nil {
			return err
		}
		if got != "42" {
			return fmt.Errorf("minik8s_prometheus_test_pod = %q, want 42", got)
		}
		return nil
	})

	if err := c.client.CoreV1().Services("default").Delete(ctx, svcName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.client.CoreV1().Pods("default").Delete(ctx, podName, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if err := c.client.CoreV1().Nodes().Delete(ctx, nodeName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	promEventually(t, ctx, "the deleted objects' targets gone", func() error {
		targets, err := prom.targets(ctx)
		if err != nil {
			return err
		}
		for _, w := range want {
			if w.labels == nil {
				continue
			}
			if tg := findTarget(targets, w.job, w.labels); tg != nil {
				return fmt.Errorf("%s target %s is still there", w.job, tg.ScrapeURL)
			}
		}
		if findTarget(targets, prometheus.JobAPIServer, nil) == nil {
			return fmt.Errorf("the apiserver's target went too: %s", targetsString(targets))
		}
		return nil
	})
}

// TestPrometheusMatchesKubectlTop: a PromQL query for a pod's
// container_memory_working_set_bytes, which Prometheus scrapes from the
// kubelet's /metrics/cadvisor through the apiserver's node proxy, returns
// what metrics.k8s.io's PodMetrics (what kubectl top pod reads) says of
// the same container, within 10% (the simulated kubelet reports its
// annotation's figure to both, so they are equal).
func TestPrometheusMatchesKubectlTop(t *testing.T) {
	if _, err := prometheus.FindBinary(); err != nil {
		t.Skipf("no prometheus with Kubernetes service discovery (hack/install-deps.sh builds it, CI has it): %v", err)
	}
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	const nodeName, podName = "top-node", "top-pod"
	startServingNode(t, c, nodeName)
	if _, err := c.client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName, Annotations: map[string]string{
			simulated.AnnotationCPUUsage: "250m", simulated.AnnotationMemoryUsage: "64Mi"}},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	prom := startPrometheus(t, c, metricsServer(t, "/metrics", "").port)

	// What kubectl top pod reads.
	var top float64
	promEventually(t, ctx, "the pod's PodMetrics", func() error {
		raw, err := c.client.CoreV1().RESTClient().Get().
			AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/" + podName).DoRaw(ctx)
		if err != nil {
			return err
		}
		var pm metricsv1beta1.PodMetrics
		if err := json.Unmarshal(raw, &pm); err != nil {
			return err
		}
		for _, ct := range pm.Containers {
			if ct.Name == "app" {
				top = float64(ct.Usage.Memory().Value())
			}
		}
		if top == 0 {
			return fmt.Errorf("no memory of container app in %s", raw)
		}
		return nil
	})
	var got float64
	query := `container_memory_working_set_bytes{job="` + prometheus.JobKubeletCadvisor + `",namespace="default",pod="` + podName + `",container="app"}`
	promEventually(t, ctx, "the container's working set in Prometheus", func() error {
		v, err := prom.query(ctx, query)
		if err != nil {
			return err
		}
		got, err = strconv.ParseFloat(v, 64)
		return err
	})
	if diff := math.Abs(got-top) / top; diff > 0.1 {
		t.Errorf("Prometheus: %s = %.0f; kubectl top's PodMetrics: %.0f bytes (%.1f%% apart, want within 10%%)", query, got, top, 100*diff)
	}
	t.Logf("working set: Prometheus %.0f, PodMetrics %.0f bytes", got, top)
}

// testMetrics is a test server of metrics on 127.0.0.1.
type testMetrics struct{ port int }

// metricsServer serves body in Prometheus' text format at path.
func metricsServer(t *testing.T, path, body string) testMetrics {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = io.WriteString(w, body)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(port)
	return testMetrics{port: n}
}

// promServer is a Prometheus of the test's.
type promServer struct{ base string }

// startPrometheus runs Prometheus on a free loopback port with a 1s
// scrape interval until the test ends, and waits until it is ready.
func startPrometheus(t *testing.T, c *cluster, exporterPort int) promServer {
	t.Helper()
	start := time.Now()
	dir := t.TempDir()
	listen := freeLoopbackTCP(t)
	ready := make(chan struct{})
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- prometheus.Run(runCtx, prometheus.Config{
			Dir: dir, APIServer: c.cp.URL, Bundle: c.cp.Bundle, Listen: listen, ScrapeInterval: time.Second,
			NodeExporterPort: exporterPort, RestartBackoff: 100 * time.Millisecond, Ready: func() { close(ready) },
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		})
	}()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("prometheus: %v", err)
		}
		if t.Failed() {
			if out, err := os.ReadFile(filepath.Join(dir, prometheus.LogFile)); err == nil {
				t.Logf("prometheus log:\n%s", out)
			}
		}
	})
	select {
	case <-ready:
		t.Logf("prometheus ready after %s", time.Since(start).Round(time.Millisecond))
	case err := <-done:
		t.Fatalf("prometheus exited: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("prometheus not ready after 60s")
	}
	return promServer{base: "http://" + listen}
}

// promTarget is one of /api/v1/targets' active targets.
type promTarget struct {
	Labels    map[string]string `json:"labels"`
	ScrapeURL string            `json:"scrapeUrl"`
	Health    string            `json:"health"`
	LastError string            `json:"lastError"`
}

func (p promServer) get(ctx context.Context, path string, data any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("GET %s: %s: %w", path, resp.Status, err)
	}
	if body.Status != "success" {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, body.Error)
	}
	return json.Unmarshal(body.Data, data)
}

func (p promServer) targets(ctx context.Context) ([]promTarget, error) {
	var data struct {
		ActiveTargets []promTarget `json:"activeTargets"`
	}
	err := p.get(ctx, "/api/v1/targets?state=active", &data)
	return data.ActiveTargets, err
}

// query is the value of an instant query that must find one series.
func (p promServer) query(ctx context.Context, q string) (string, error) {
	var data struct {
		Result []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	if err := p.get(ctx, "/api/v1/query?query="+neturl.QueryEscape(q), &data); err != nil {
		return "", err
	}
	if len(data.Result) != 1 {
		return "", fmt.Errorf("%s: %d series, want 1", q, len(data.Result))
	}
	v, _ := data.Result[0].Value[1].(string)
	return v, nil
}

// findTarget is the target of job whose labels include labels.
func findTarget(targets []promTarget, job string, labels map[string]string) *promTarget {
	for i, tg := range targets {
		if tg.Labels["job"] != job {
			continue
		}
		match := true
		for k, v := range labels {
			match = match && tg.Labels[k] == v
		}
		if match {
			return &targets[i]
		}
	}
	return nil
}

func targetsString(targets []promTarget) string {
	var b strings.Builder
	for _, tg := range targets {
		fmt.Fprintf(&b, "\n  %s %s %s %v %s", tg.Labels["job"], tg.ScrapeURL, tg.Health, tg.Labels, tg.LastError)
	}
	return b.String()
}

// promEventually retries f until it succeeds or ctx ends; Prometheus
// applies discovery's changes every few seconds.
func promEventually(t *testing.T, ctx context.Context, what string, f func() error) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(90 * time.Second)
	for {
		err := f()
		if err == nil {
			t.Logf("%s after %s", what, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s: %v", what, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}
