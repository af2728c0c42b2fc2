package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

func TestPerState(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(us int) metav1.MicroTime {
		return metav1.NewMicroTime(t0.Add(time.Duration(us) * time.Microsecond))
	}
	history := func(n, stepUs int, lastExited bool) []minik8sv1.WorkflowRunState {
		var h []minik8sv1.WorkflowRunState
		for i := range n {
			s := minik8sv1.WorkflowRunState{Name: "s", Entered: at(i * stepUs)}
			if i < n-1 || lastExited {
				exited := at((i + 1) * stepUs)
				s.Exited = &exited
			}
			h = append(h, s)
		}
		return h
	}
	for _, tc := range []struct {
		name    string
		history []minik8sv1.WorkflowRunState
		n       int
		want    time.Duration
		wantErr string
	}{
		{"20 states of 1.5ms", history(20, 1500, true), 20, 1500 * time.Microsecond, ""},
		{"one state", history(1, 700, true), 1, 700 * time.Microsecond, ""},
		{"fewer states than the chain", history(19, 1000, true), 20, 0, "went through 19 states, want 20"},
		{"last state not exited", history(20, 1000, false), 20, 0, "no exit time"},
		{"no history", nil, 20, 0, "went through 0 states"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := &minik8sv1.WorkflowRun{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Status: minik8sv1.WorkflowRunStatus{History: tc.history}}
			got, err := perState(run, tc.n)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("perState = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestChainDefinition(t *testing.T) {
	def := chainDefinition("Task", 3)
	if def["StartAt"] != "Task01" {
		t.Errorf("StartAt = %v", def["StartAt"])
	}
	states := def["States"].(map[string]any)
	want := map[string]map[string]any{
		"Task01": {"Type": "Task", "Resource": "function:" + benchFunction, "Next": "Task02"},
		"Task02": {"Type": "Task", "Resource": "function:" + benchFunction, "Next": "Task03"},
		"Task03": {"Type": "Task", "Resource": "function:" + benchFunction, "End": true},
	}
	got, _ := json.Marshal(states)
	exp, _ := json.Marshal(want)
	if !bytes.Equal(got, exp) {
		t.Errorf("states = %s, want %s", got, exp)
	}
	// Unstructured objects must deep-copy (only JSON types inside).
	_ = workflowObject("w", chainDefinition("Pass", 20)).DeepCopy()
	_ = workflowObject("w", mixedDefinition()).DeepCopy()
}

func TestRunWaiter(t *testing.T) {
	w := newRunWaiter()
	run := func(name, phase string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "minik8s.io/v1", "kind": "WorkflowRun",
			"metadata": map[string]any{"name": name, "namespace": "default"},
			"status":   map[string]any{"phase": phase},
		}}
	}
	ch := w.expect("a")
	w.observe(run("a", minik8sv1.WorkflowRunRunning))
	w.observe(run("b", minik8sv1.WorkflowRunSucceeded)) // not awaited
	select {
	case e := <-ch:
		t.Fatalf("got %+v before the run ended", e)
	default:
	}
	w.observe(run("a", minik8sv1.WorkflowRunFailed))
	w.observe(run("a", minik8sv1.WorkflowRunFailed)) // a second event: nobody waits
	select {
	case e := <-ch:
		if e.run.Name != "a" || e.run.Status.Phase != minik8sv1.WorkflowRunFailed || e.seen.IsZero() {
			t.Errorf("got %s %s at %v", e.run.Name, e.run.Status.Phase, e.seen)
		}
	default:
		t.Fatal("no end delivered")
	}
}

func TestWorkflowsReport(t *testing.T) {
	r := &WorkflowsReport{
		Nodes: "1: n1", Engine: "in-process", Function: "default/bench", Client: "host", ChainLength: 20,
		Targets: WorkflowsTargets{PassTransitionMs: 5, TaskOverheadMs: 10},
		Rows: []WorkflowsRow{
			{Key: KeyWfFunction, LatencyRow: latencyRow(RowWfFunction, millis(3, 4, 4, 5), 1, time.Second)},
			{Key: KeyWfPassState, LatencyRow: latencyRow("20 Pass states: per state", millis(1, 2, 2, 3), 1, 0)},
			{Key: KeyWfPassRun, LatencyRow: latencyRow("20 Pass states: run", millis(40, 50), 1, time.Second)},
			{Key: KeyWfTaskState, LatencyRow: latencyRow("20 Task states: per state", millis(10, 12, 12, 20), 1, 0), Errors: 1, FirstError: "boom"},
			{Key: KeyWfMixed, LatencyRow: latencyRow("mixed", millis(20, 30), 20, time.Second), MaxReady: 2},
		},
	}
	r.computeRatios()
	if r.PassStateP50VsTarget == nil || *r.PassStateP50VsTarget != 0.4 || *r.PassStateP99VsTarget != 0.6 {
		t.Errorf("pass ratios %v %v, want 0.4 0.6", r.PassStateP50VsTarget, r.PassStateP99VsTarget)
	}
	// Task p50 12 - function p50 4 = 8ms, 0.8 of 10ms; p99 20 - 5 = 15ms.
	if r.TaskOverheadP50Ms == nil || *r.TaskOverheadP50Ms != 8 || *r.TaskOverheadP99Ms != 15 || *r.TaskOverheadVsTarget != 0.8 {
		t.Errorf("task overhead %v %v %v, want 8 15 0.8", r.TaskOverheadP50Ms, r.TaskOverheadP99Ms, r.TaskOverheadVsTarget)
	}
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Pass state / target:     p50 2.00ms = 0.40x, p99 3.00ms = 0.60x (of 5.00ms)",
		"Task state - function:   p50 12.00ms - 4.00ms = 8.00ms = 0.80x of the target (10.00ms); p99 20.00ms - 5.00ms = 15.00ms",
		"20 Task states: per state: first error: boom",
		"mixed: the function had at most 2 Ready instance(s).",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back WorkflowsReport
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back.Rows) != 5 || back.Rows[3].Key != KeyWfTaskState {
		t.Errorf("JSON round trip: %v %+v", err, back.Rows)
	}

	// Nothing measured: no ratios, and the table says so.
	empty := &WorkflowsReport{Targets: r.Targets}
	empty.computeRatios()
	b.Reset()
	_ = empty.WriteTable(&b)
	if empty.PassStateP50VsTarget != nil || empty.TaskOverheadP50Ms != nil || !strings.Contains(b.String(), "Task state - function:   not measured") {
		t.Errorf("empty report: %s", b.String())
	}
}
