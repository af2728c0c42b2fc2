package engine

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

// metrics are the engine's Prometheus series. The engine serves no HTTP
// of its own: it registers them on Config.Registerer, by default
// prometheus.DefaultRegisterer, which the apiserver's /metrics of the
// same process gathers too (pkg/apiserver). A second engine in the
// process (tests run several control planes) finds the series registered
// and counts into them: the series are the process's.
type metrics struct {
	runs        *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	transitions *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	runs, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "minik8s_workflow_runs_total",
		Help: "WorkflowRuns that ended, by namespace, workflow (empty for an inline definition) and final phase.",
	}, []string{"namespace", "workflow", "phase"}))
	if err != nil {
		return nil, err
	}
	duration, err := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "minik8s_workflow_run_duration_seconds",
		Help:    "Time from a WorkflowRun's start to its end, by namespace, workflow and final phase.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
	}, []string{"namespace", "workflow", "phase"}))
	if err != nil {
		return nil, err
	}
	transitions, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "minik8s_workflow_state_transitions_total",
		Help: "States WorkflowRuns entered, by namespace, workflow, state name and state type.",
	}, []string{"namespace", "workflow", "state", "type"}))
	if err != nil {
		return nil, err
	}
	return &metrics{runs: runs, duration: duration, transitions: transitions}, nil
}

// register registers c on reg, or returns the collector of the same
// description registered already.
func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	var already prometheus.AlreadyRegisteredError
	switch {
	case err == nil:
		return c, nil
	case errors.As(err, &already):
		if existing, ok := already.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	var zero T
	return zero, fmt.Errorf("workflow engine metrics: %w", err)
}

// entered counts the states run entered since it had made before
// transitions: the last ones of its history (which keeps the latest
// asl.MaxHistory).
func (m *metrics) entered(run *minik8sv1.WorkflowRun, before int64) {
	h := run.Status.History
	n := int(min(max(run.Status.Transitions-before, 0), int64(len(h))))
	for _, e := range h[len(h)-n:] {
		m.transitions.WithLabelValues(run.Namespace, run.Spec.Workflow, e.Name, e.Type).Inc()
	}
}

// ended counts run, which has just ended, and its duration.
func (m *metrics) ended(run *minik8sv1.WorkflowRun) {
	st := run.Status
	m.runs.WithLabelValues(run.Namespace, run.Spec.Workflow, st.Phase).Inc()
	if st.StartTime != nil && st.CompletionTime != nil {
		m.duration.WithLabelValues(run.Namespace, run.Spec.Workflow, st.Phase).
			Observe(max(0, st.CompletionTime.Sub(st.StartTime.Time).Seconds()))
	}
}
