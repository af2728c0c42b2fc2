package apiserver

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// /metrics serves the apiserver's own series, the Go runtime's and the
// process's once each, and what other parts of the process register on
// the default registry (the workflow engine's series).
func TestMetricsGatherDefaultRegistry(t *testing.T) {
	m := newMetrics()
	m.requests.WithLabelValues("get", "", "pods", "", "200").Inc()
	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "minik8s_test_apiserver_gathers_default_total", Help: "test"})
	prometheus.MustRegister(other)
	defer prometheus.Unregister(other)
	other.Inc()
	families, err := m.registry.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	seen := map[string]int{}
	for _, mf := range families {
		seen[mf.GetName()]++
	}
	for _, name := range []string{"apiserver_request_total", "go_goroutines", "process_cpu_seconds_total", "minik8s_test_apiserver_gathers_default_total"} {
		if seen[name] != 1 {
			t.Errorf("%s gathered %d times, want once", name, seen[name])
		}
	}
}
