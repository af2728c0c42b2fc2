package kubelet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet/stats"
	"github.com/minik8s/minik8s/pkg/pki"
)

// metricsProvider runs pods (what GetPods answers) and reports a summary
// that a test may change between scrapes.
type metricsProvider struct {
	noPods
	mu      sync.Mutex
	pods    []*corev1.Pod
	summary *stats.Summary
	err     error
}

func (p *metricsProvider) GetPods(context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pods, p.err
}

func (p *metricsProvider) Summary(context.Context) (*stats.Summary, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return nil, p.err
	}
	s := *p.summary
	return &s, nil
}

func (p *metricsProvider) set(summary *stats.Summary, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.summary, p.err = summary, err
}

// metricsServer is a kubelet's server on 127.0.0.1 and clients of it.
type metricsServer struct {
	url    string
	admin  *http.Client
	bundle *pki.Bundle
}

// startMetricsServer runs the server of a kubelet for node "n" (a Node of
// 8 cpus and 16Gi in its API) with pods in its cache.
func startMetricsServer(t *testing.T, p Provider, pods ...*corev1.Pod) *metricsServer {
	t.Helper()
	bundle, err := pki.Ensure(pki.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi")},
		NodeInfo: corev1.NodeSystemInfo{BootID: "boot-1", MachineID: "machine-1", SystemUUID: "uuid-1"},
	}}
	k, err := New(Config{Client: fake.NewClientset(node), NodeName: "n", Provider: p,
		ServerAddress: "127.0.0.1:0", ClientCA: bundle.CAPool, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods {
		if err := k.factory.Core().V1().Pods().Informer().GetIndexer().Add(pod); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if _, err := k.startServer(ctx); err != nil {
		t.Fatal(err)
	}
	return &metricsServer{
		url:    fmt.Sprintf("https://127.0.0.1:%d", k.serverPort),
		admin:  clientWithCert(t, bundle.AdminCertPEM, bundle.AdminKeyPEM),
		bundle: bundle,
	}
}

func clientWithCert(t *testing.T, certPEM, keyPEM []byte) *http.Client {
	t.Helper()
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}}} //nolint:gosec // self-signed test server
}

func (s *metricsServer) get(t *testing.T, client *http.Client, path string) (int, string) {
	t.Helper()
	resp, err := client.Get(s.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// scrape reads path as Prometheus does and parses the text format:
// each series as `name{a="x",b="y"}` (labels sorted, empty ones dropped)
// to its value.
func (s *metricsServer) scrape(t *testing.T, path string) map[string]float64 {
	t.Helper()
	code, body := s.get(t, s.admin, path)
	if code != http.StatusOK {
		t.Fatalf("GET %s = %d %q", path, code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("GET %s: not Prometheus' text format: %v\n%s", path, err, body)
	}
	out := map[string]float64{}
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			out[seriesKey(name, m)] = sampleValue(mf.GetType(), m)
		}
	}
	return out
}

func seriesKey(name string, m *dto.Metric) string {
	var labels []string
	for _, l := range m.GetLabel() {
		if l.GetValue() != "" {
			labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
		}
	}
	sort.Strings(labels)
	return name + "{" + strings.Join(labels, ",") + "}"
}

func sampleValue(t dto.MetricType, m *dto.Metric) float64 {
	switch t {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_UNTYPED:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// twoPods is a summary of two running pods, one of two containers, and
// the pods as the API has them (images and container IDs in their status).
func twoPods(t0 time.Time) (*stats.Summary, []*corev1.Pod) {
	at := metav1.NewTime(t0.Add(time.Hour))
	cpu := func(seconds float64) *stats.CPUStats {
		return &stats.CPUStats{Time: at, UsageNanoCores: ptr.To[uint64](1e8), UsageCoreNanoSeconds: ptr.To(uint64(seconds * 1e9))}
	}
	mem := func(workingSet, usage, rss uint64) *stats.MemoryStats {
		return &stats.MemoryStats{Time: at, WorkingSetBytes: ptr.To(workingSet), UsageBytes: ptr.To(usage), RSSBytes: ptr.To(rss)}
	}
	started := metav1.NewTime(t0)
	summary := &stats.Summary{
		Node: stats.NodeStats{NodeName: "n", StartTime: metav1.NewTime(t0.Add(-24 * time.Hour)), CPU: cpu(5000),
			Memory: &stats.MemoryStats{Time: at, WorkingSetBytes: ptr.To[uint64](4 << 30), UsageBytes: ptr.To[uint64](6 << 30)}},
		Pods: []stats.PodStats{
			{PodRef: stats.PodReference{Namespace: "default", Name: "web", UID: "uid-web"}, StartTime: started,
				CPU: cpu(12.5), Memory: mem(96<<20, 128<<20, 80<<20),
				Containers: []stats.ContainerStats{
					{Name: "app", StartTime: started, CPU: cpu(10), Memory: mem(64<<20, 90<<20, 60<<20)},
					{Name: "sidecar", StartTime: metav1.NewTime(t0.Add(time.Second)), CPU: cpu(2.5), Memory: mem(32<<20, 38<<20, 20<<20)},
				}},
			// A pod the API does not have (yet): no image, no name.
			{PodRef: stats.PodReference{Namespace: "jobs", Name: "batch", UID: "uid-batch"}, StartTime: started,
				CPU:        &stats.CPUStats{Time: at, UsageCoreNanoSeconds: ptr.To[uint64](3e9)},
				Memory:     &stats.MemoryStats{Time: at, WorkingSetBytes: ptr.To[uint64](1 << 20)},
				Containers: []stats.ContainerStats{{Name: "worker", StartTime: started, CPU: &stats.CPUStats{Time: at, UsageCoreNanoSeconds: ptr.To[uint64](3e9)}}}},
		},
	}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
	web := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: types.UID("uid-web")},
		Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{
			{Name: "app", Image: "nginx"}, {Name: "sidecar", Image: "busybox:1.36"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", Image: "docker.io/library/nginx:latest", ContainerID: "containerd://aaa111", State: running},
			// Restarting after it exited.
			{Name: "sidecar", Image: "docker.io/library/busybox:1.36", ContainerID: "containerd://bbb222",
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}},
		}},
	}
	done := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: "done", UID: types.UID("uid-done")},
		Spec:       corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}},
	}
	return summary, []*corev1.Pod{web, done}
}

func TestServerCadvisorMetrics(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	summary, pods := twoPods(t0)
	p := &metricsProvider{summary: summary}
	s := startMetricsServer(t, p, pods...)

	const (
		web     = `namespace="default",pod="web"`
		app     = `container="app",image="docker.io/library/nginx:latest",name="aaa111",` + web
		sidecar = `container="sidecar",image="docker.io/library/busybox:1.36",name="bbb222",` + web
		batch   = `namespace="jobs",pod="batch"`
		worker  = `container="worker",` + batch
		machine = `boot_id="boot-1",machine_id="machine-1",system_uuid="uuid-1"`
	)
	want := map[string]float64{
		"container_scrape_error{}":              0,
		"machine_cpu_cores{" + machine + "}":    8,
		"machine_memory_bytes{" + machine + "}": 16 << 30,
		// The node's root cgroup.
		`container_cpu_usage_seconds_total{cpu="total",id="/"}`: 5000,
		`container_memory_working_set_bytes{id="/"}`:            4 << 30,
		`container_memory_usage_bytes{id="/"}`:                  6 << 30,
		`container_start_time_seconds{id="/"}`:                  float64(t0.Add(-24 * time.Hour).Unix()),
		// The pods' cgroups: container="".
		`container_cpu_usage_seconds_total{cpu="total",` + web + `}`:   12.5,
		`container_memory_working_set_bytes{` + web + `}`:              96 << 20,
		`container_memory_usage_bytes{` + web + `}`:                    128 << 20,
		`container_memory_rss{` + web + `}`:                            80 << 20,
		`container_start_time_seconds{` + web + `}`:                    float64(t0.Unix()),
		`container_cpu_usage_seconds_total{cpu="total",` + batch + `}`: 3,
		`container_memory_working_set_bytes{` + batch + `}`:            1 << 20,
		`container_start_time_seconds{` + batch + `}`:                  float64(t0.Unix()),
		// The containers, with the image and ID of the pod's status.
		`container_cpu_usage_seconds_total{` + app + `,cpu="total"}`:     10,
		`container_memory_working_set_bytes{` + app + `}`:                64 << 20,
		`container_memory_usage_bytes{` + app + `}`:                      90 << 20,
		`container_memory_rss{` + app + `}`:                              60 << 20,
		`container_start_time_seconds{` + app + `}`:                      float64(t0.Unix()),
		`container_cpu_usage_seconds_total{` + sidecar + `,cpu="total"}`: 2.5,
		`container_memory_working_set_bytes{` + sidecar + `}`:            32 << 20,
		`container_memory_usage_bytes{` + sidecar + `}`:                  38 << 20,
		`container_memory_rss{` + sidecar + `}`:                          20 << 20,
		`container_start_time_seconds{` + sidecar + `}`:                  float64(t0.Unix() + 1),
		// Not in the API: no image or name; no memory in its summary.
		`container_cpu_usage_seconds_total{` + worker + `,cpu="total"}`: 3,
		`container_start_time_seconds{` + worker + `}`:                  float64(t0.Unix()),
	}
	got := s.scrape(t, "/metrics/cadvisor")
	for key, v := range want {
		// The wanted keys are written by hand: sort their labels as seriesKey does.
		key = normalizeKey(key)
		if have, ok := got[key]; !ok {
			t.Errorf("no series %s", key)
		} else if have != v {
			t.Errorf("%s = %v, want %v", key, have, v)
		}
	}
	if len(got) != len(want) {
		var keys []string
		for k := range got {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t.Errorf("%d series, want %d:\n%s", len(got), len(want), strings.Join(keys, "\n"))
	}

	t.Run("a pod that goes is gone", func(t *testing.T) {
		next := *summary
		next.Pods = next.Pods[:1]
		p.set(&next, nil)
		for key := range s.scrape(t, "/metrics/cadvisor") {
			if strings.Contains(key, `pod="batch"`) {
				t.Errorf("series of a pod that is gone: %s", key)
			}
		}
	})
	t.Run("values are read on each scrape", func(t *testing.T) {
		next, _ := twoPods(t0)
		next.Pods[0].Containers[0].CPU.UsageCoreNanoSeconds = ptr.To[uint64](11e9)
		p.set(next, nil)
		if v := s.scrape(t, "/metrics/cadvisor")[normalizeKey(`container_cpu_usage_seconds_total{`+app+`,cpu="total"}`)]; v != 11 {
			t.Errorf("app's cpu after it grew = %v, want 11", v)
		}
	})
	t.Run("provider failing", func(t *testing.T) {
		p.set(nil, errors.New("cgroups are gone"))
		got := s.scrape(t, "/metrics/cadvisor")
		if got["container_scrape_error{}"] != 1 || got[normalizeKey("machine_cpu_cores{"+machine+"}")] != 8 {
			t.Errorf("scrape with a failing provider: %v; want container_scrape_error 1 and the machine's series", got)
		}
	})
	t.Run("provider without stats", func(t *testing.T) {
		s := startMetricsServer(t, streamProvider{})
		if code, body := s.get(t, s.admin, "/metrics/cadvisor"); code != http.StatusNotImplemented || !strings.Contains(body, "does not support stats") {
			t.Errorf("GET /metrics/cadvisor = %d %q, want 501", code, body)
		}
	})
}

// normalizeKey sorts the labels of a series written as name{a="x",...}.
func normalizeKey(key string) string {
	name, rest, _ := strings.Cut(key, "{")
	rest = strings.TrimSuffix(rest, "}")
	var labels []string
	if rest != "" {
		labels = strings.Split(rest, ",")
	}
	sort.Strings(labels)
	return name + "{" + strings.Join(labels, ",") + "}"
}

func TestServerKubeletMetrics(t *testing.T) {
	summary, pods := twoPods(time.Now())
	// The provider runs web (one container running, one exited) and the
	// finished pod.
	s := startMetricsServer(t, &metricsProvider{summary: summary, pods: pods}, pods...)
	got := s.scrape(t, "/metrics")
	for key, v := range map[string]float64{
		`kubelet_node_name{node="n"}`:                           1,
		`kubelet_running_pods{}`:                                1,
		`kubelet_running_containers{container_state="running"}`: 1,
		`kubelet_running_containers{container_state="exited"}`:  1,
	} {
		if have, ok := got[key]; !ok || have != v {
			t.Errorf("%s = %v (present %v), want %v", key, have, ok, v)
		}
	}
	// The Go and process collectors.
	for _, key := range []string{"go_goroutines{}", "process_start_time_seconds{}"} {
		if _, ok := got[key]; !ok {
			t.Errorf("no series %s", key)
		}
	}

	t.Run("registries are the kubelet's own", func(t *testing.T) {
		// A second kubelet in the same process registers the same names.
		other := startMetricsServer(t, &metricsProvider{summary: summary})
		if got := other.scrape(t, "/metrics"); got[`kubelet_running_pods{}`] != 0 || got[`kubelet_node_name{node="n"}`] != 1 {
			t.Errorf("second kubelet's /metrics: %v", got)
		}
		if got := s.scrape(t, "/metrics"); got[`kubelet_running_pods{}`] != 1 {
			t.Errorf("first kubelet's running pods after the second started = %v, want 1", got[`kubelet_running_pods{}`])
		}
	})
}

// TestServerMetricsAuthorization: the metrics need the same certificate
// as /stats/summary: the apiserver's or an admin's.
func TestServerMetricsAuthorization(t *testing.T) {
	summary, _ := twoPods(time.Now())
	s := startMetricsServer(t, &metricsProvider{summary: summary})
	apiserverCert, err := s.bundle.KubeletClientCert()
	if err != nil {
		t.Fatal(err)
	}
	apiserver := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, Certificates: []tls.Certificate{apiserverCert}}}} //nolint:gosec // self-signed test server
	certPEM, keyPEM, err := s.bundle.IssueClientCert("prometheus", []string{"monitoring"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	someone := clientWithCert(t, certPEM, keyPEM)
	for _, path := range []string{"/metrics", "/metrics/cadvisor"} {
		if code, body := s.get(t, apiserver, path); code != http.StatusOK {
			t.Errorf("the apiserver's GET %s = %d %q", path, code, body)
		}
		code, body := s.get(t, someone, path)
		if code != http.StatusForbidden || !strings.Contains(body, "user=prometheus, verb=get, resource=nodes, subresource=proxy") {
			t.Errorf("another user's GET %s = %d %q, want 403", path, code, body)
		}
	}
}
