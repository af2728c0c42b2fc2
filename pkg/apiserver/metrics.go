package apiserver

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the apiserver's Prometheus series, named as Kubernetes names them.
type metrics struct {
	// registry is what /metrics serves: own's series, then those of the
	// process-wide prometheus.DefaultRegisterer: the Go runtime's and the
	// process's (client_golang registers them there) and those of the
	// parts of this process that serve no /metrics of their own (the
	// workflow engine in the controller manager, pkg/workflow/engine).
	// own holds no Go or process collector: one family from two gatherers
	// is an error.
	registry prometheus.Gatherer
	own      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	watchers *prometheus.GaugeVec
}

func newMetrics() *metrics {
	m := &metrics{
		own: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Counter of apiserver requests broken out for each verb, group, resource and HTTP response code.",
		}, []string{"verb", "group", "resource", "subresource", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Response latency distribution in seconds for each verb, group and resource (watches excluded).",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}, []string{"verb", "group", "resource", "subresource"}),
		watchers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_registered_watchers",
			Help: "Number of currently open watches for a given resource.",
		}, []string{"group", "resource"}),
	}
	m.own.MustRegister(m.requests, m.latency, m.watchers)
	m.registry = prometheus.Gatherers{m.own, prometheus.DefaultGatherer}
	return m
}
