package router

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the router's Prometheus series, per function.
type metrics struct {
	invocations *prometheus.CounterVec
	errors      *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	coldStarts  *prometheus.CounterVec
	inFlight    *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	labels := []string{"namespace", "function"}
	m := &metrics{
		invocations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "minik8s_function_invocations_total",
			Help: "Requests to each function, by HTTP response code.",
		}, append(labels, "code")),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "minik8s_function_errors_total",
			Help: "Requests to each function answered with a 5xx code.",
		}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "minik8s_function_request_duration_seconds",
			Help:    "Time from a request's arrival at the router to the end of its response, waiting for an instance included.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, labels),
		coldStarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "minik8s_function_cold_starts_total",
			Help: "Requests that waited for an instance of their function to become usable.",
		}, labels),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "minik8s_function_in_flight",
			Help: "Requests of each function in the router now, held or forwarded.",
		}, labels),
	}
	for _, c := range []prometheus.Collector{m.invocations, m.errors, m.duration, m.coldStarts, m.inFlight} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe records one finished request.
func (m *metrics) observe(namespace, name string, code int, took time.Duration, cold bool) {
	m.invocations.WithLabelValues(namespace, name, strconv.Itoa(code)).Inc()
	if code >= 500 {
		m.errors.WithLabelValues(namespace, name).Inc()
	}
	m.duration.WithLabelValues(namespace, name).Observe(took.Seconds())
	if cold {
		m.coldStarts.WithLabelValues(namespace, name).Inc()
	}
}
