package engine

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

// Two engines in one process share the series (the second registration
// reuses the first's collectors, without a panic); states entered are
// counted once each, from the run's transitions, even past the history's
// cap; an ended run is counted with its duration.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m1, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := newMetrics(reg)
	if err != nil {
		t.Fatalf("second engine: %v", err)
	}
	if m1.runs != m2.runs || m1.duration != m2.duration || m1.transitions != m2.transitions {
		t.Error("the second engine did not reuse the registered series")
	}

	start := metav1.NewTime(time.Unix(1000, 0))
	run := &minik8sv1.WorkflowRun{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"}, Spec: minik8sv1.WorkflowRunSpec{Workflow: "wf"}}
	run.Status.History = []minik8sv1.WorkflowRunState{{Name: "A", Type: "Pass"}, {Name: "B", Type: "Task"}}
	run.Status.Transitions = 2
	m1.entered(run, 0)
	// A write that entered no state (a Task's answer awaited).
	m1.entered(run, 2)
	// Past the cap: history holds the last two of five transitions.
	run.Status.History = []minik8sv1.WorkflowRunState{{Name: "B", Type: "Task"}, {Name: "C", Type: "Succeed"}}
	run.Status.Transitions = 5
	m2.entered(run, 3)
	for _, tc := range []struct {
		state, typ string
		want       float64
	}{{"A", "Pass", 1}, {"B", "Task", 2}, {"C", "Succeed", 1}} {
		if got := value(t, reg, "minik8s_workflow_state_transitions_total", map[string]string{"state": tc.state, "type": tc.typ}); got != tc.want {
			t.Errorf("transitions into %s = %v, want %v", tc.state, got, tc.want)
		}
	}

	run.Status.Phase = minik8sv1.WorkflowRunSucceeded
	run.Status.StartTime, run.Status.CompletionTime = &start, &metav1.Time{Time: start.Add(3 * time.Second)}
	m2.ended(run)
	labels := map[string]string{"namespace": "ns", "workflow": "wf", "phase": minik8sv1.WorkflowRunSucceeded}
	if got := value(t, reg, "minik8s_workflow_runs_total", labels); got != 1 {
		t.Errorf("runs_total = %v, want 1", got)
	}
	if got := value(t, reg, "minik8s_workflow_run_duration_seconds", labels); got != 3 {
		t.Errorf("run duration sum = %v, want 3", got)
	}
}

// value is the counter's value, or the histogram's sum, of the series
// named name in reg whose labels include labels.
func value(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			if h := m.GetHistogram(); h != nil {
				return h.GetSampleSum()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Errorf("no %s%v", name, labels)
	return 0
}
