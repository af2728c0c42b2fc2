package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/minik8s/minik8s/pkg/hostservice"
	"github.com/minik8s/minik8s/pkg/node"
	"github.com/minik8s/minik8s/pkg/prometheus"
	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
)

// promProxy is Prometheus' HTTP API through the apiserver's service
// proxy, as a user reaches it with kubectl.
const promProxy = "/api/v1/namespaces/" + prometheus.ServiceNamespace + "/services/" + prometheus.ServiceName + ":9090/proxy"

// TestMonitoring: on a cluster with the add-ons `minik8s up` runs, with
// Prometheus as the monitoring add-on runs it (its Service
// kube-system/prometheus at the host), a user reads Prometheus' targets
// through the apiserver's service proxy (kubectl get --raw) and finds the
// apiserver, both nodes' kubelets and their cAdvisor series, both nodes'
// node exporters (each node agent runs one on its InternalIP) and CoreDNS
// (kube-dns annotated for scraping) up; then a PromQL query for a running
// pod's container_memory_working_set_bytes returns a value.
func TestMonitoring(t *testing.T) {
	if _, err := prometheus.FindBinary(); err != nil {
		t.Skipf("needs prometheus with Kubernetes discovery (make deps builds it): %v", err)
	}
	if _, err := node.FindNodeExporter(); err != nil {
		t.Skipf("needs the node exporter: %v", err)
	}
	c := newClusterWithAddons(t, 2)
	startMonitoring(t, c)
	c.apply(clientPod("watched", c.tag+"-n1"))
	c.waitPod("default", "watched", time.Minute, "Running", running)

	want := []struct {
		job    string
		labels map[string]string
	}{
		{prometheus.JobAPIServer, nil},
		{prometheus.JobKubelet, map[string]string{"node": c.tag + "-n1"}},
		{prometheus.JobKubelet, map[string]string{"node": c.tag + "-n2"}},
		{prometheus.JobKubeletCadvisor, map[string]string{"node": c.tag + "-n1"}},
		{prometheus.JobKubeletCadvisor, map[string]string{"node": c.tag + "-n2"}},
		{prometheus.JobNodeExporter, map[string]string{"node": c.tag + "-n1"}},
		{prometheus.JobNodeExporter, map[string]string{"node": c.tag + "-n2"}},
		{prometheus.JobServiceEndpoints, map[string]string{"namespace": "kube-system", "service": "kube-dns"}},
	}
	var targets []promTarget
	var last string // why the last poll was not done, for a failure
	defer func() {
		if t.Failed() {
			t.Logf("last poll: %s", last)
		}
	}()
	c.waitFor(90*time.Second, "every target up through the service proxy", func(context.Context) (bool, error) {
		var err error
		if targets, err = c.promTargets(); err != nil {
			last = err.Error()
			return false, nil
		}
		for _, w := range want {
			switch tg := findPromTarget(targets, w.job, w.labels); {
			case tg == nil:
				last = fmt.Sprintf("no %s target labelled %v", w.job, w.labels)
				return false, nil
			case tg.Health != "up":
				last = fmt.Sprintf("%s target %s is %s: %s", w.job, tg.ScrapeURL, tg.Health, tg.LastError)
				return false, nil
			}
		}
		return true, nil
	})
	for _, tg := range targets {
		t.Logf("target %s %s %s", tg.Labels["job"], tg.ScrapeURL, tg.Health)
	}
	// The harness runs no functions add-on; where one runs, its router
	// is a service-endpoints target too.
	if findPromTarget(targets, prometheus.JobServiceEndpoints, map[string]string{"service": fnmeta.RouterService}) == nil {
		t.Logf("no function router target: this harness runs no functions add-on")
	}

	query := `container_memory_working_set_bytes{namespace="default",pod="watched",container="sh"}`
	c.waitFor(60*time.Second, "the pod's working set in Prometheus", func(context.Context) (bool, error) {
		v, err := c.promQuery(query)
		if err != nil {
			last = fmt.Sprintf("%s: %v", query, err)
			return false, nil
		}
		bytes, err := strconv.ParseFloat(v, 64)
		if err != nil || bytes <= 0 {
			return false, fmt.Errorf("%s = %q, want bytes", query, v)
		}
		t.Logf("%s = %s", query, v)
		return true, nil
	})
}

// startMonitoring runs Prometheus on the host as the monitoring add-on
// does (pkg/cli's monitoringAddon), listening on the host's LAN address,
// and publishes kube-system/prometheus there, until the test ends.
func startMonitoring(t *testing.T, c *cluster) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(c.lan.gateway.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	_ = ln.Close()
	_, port, _ := net.SplitHostPort(listen)
	targetPort, _ := strconv.Atoi(port)
	dir := t.TempDir()
	client := kubernetes.NewForConfigOrDie(c.config)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() {
		done <- prometheus.Run(ctx, prometheus.Config{Dir: dir, APIServer: c.cp.URL, Bundle: c.cp.Bundle, Listen: listen,
			ScrapeInterval: 2 * time.Second, Logger: c.logger()})
	}()
	go func() {
		done <- hostservice.Publish(ctx, hostservice.PublishConfig{Client: client, Service: prometheus.Service(int32(targetPort)),
			Address: c.lan.gateway, Logger: slog.New(slog.DiscardHandler)})
	}()
	// Registered after the cluster's teardown, so it runs first.
	t.Cleanup(func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Errorf("monitoring: %v", err)
			}
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, prometheus.LogFile))
			t.Logf("prometheus log:\n%s", b)
		}
	})
	c.waitFor(time.Minute, "service kube-system/prometheus", func(ctx context.Context) (bool, error) {
		_, err := client.DiscoveryV1().EndpointSlices(prometheus.ServiceNamespace).Get(ctx, hostservice.SliceName(prometheus.ServiceName), metav1.GetOptions{})
		return err == nil, nil
	})
}

// promTarget is one of Prometheus' active targets.
type promTarget struct {
	Labels    map[string]string `json:"labels"`
	ScrapeURL string            `json:"scrapeUrl"`
	Health    string            `json:"health"`
	LastError string            `json:"lastError"`
}

// promAPI GETs path of Prometheus' API through the apiserver's service
// proxy with kubectl get --raw and decodes its data into data.
func (c *cluster) promAPI(path string, data any) error {
	out, stderr, err := c.kubectl.Run(c.t, "get", "--raw", promProxy+path)
	if err != nil {
		return fmt.Errorf("kubectl get --raw %s: %v: %s", path, err, stderr)
	}
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &body); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if body.Status != "success" {
		return fmt.Errorf("%s: %s", path, body.Error)
	}
	return json.Unmarshal(body.Data, data)
}

func (c *cluster) promTargets() ([]promTarget, error) {
	var data struct {
		ActiveTargets []promTarget `json:"activeTargets"`
	}
	err := c.promAPI("/api/v1/targets?state=active", &data)
	return data.ActiveTargets, err
}

// promQuery is the value of an instant query that finds one series.
func (c *cluster) promQuery(q string) (string, error) {
	var data struct {
		Result []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	if err := c.promAPI("/api/v1/query?query="+neturl.QueryEscape(q), &data); err != nil {
		return "", err
	}
	if len(data.Result) != 1 {
		return "", fmt.Errorf("%d series, want 1", len(data.Result))
	}
	v, _ := data.Result[0].Value[1].(string)
	return v, nil
}

// findPromTarget is the target of job whose labels include labels.
func findPromTarget(targets []promTarget, job string, labels map[string]string) *promTarget {
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
