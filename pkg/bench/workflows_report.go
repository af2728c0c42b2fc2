package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Keys and names of the rows of the workflows report.
const (
	KeyWfFunction  = "function"
	KeyWfPassState = "pass-state"
	KeyWfPassRun   = "pass-run"
	KeyWfTaskState = "task-state"
	KeyWfTaskRun   = "task-run"
	KeyWfMixed     = "pass-task-pass"

	RowWfFunction  = "function alone, through the router (warm)"
	RowWfPassState = "%d Pass states: per state"
	RowWfPassRun   = "%d Pass states: run"
	RowWfTaskState = "%d Task states: per state"
	RowWfTaskRun   = "%d Task states: run"
	RowWfMixed     = "Pass -> Task -> Pass: run, %d clients for %s"
)

// WorkflowsReport is the outcome of `minik8s bench workflows`; its JSON
// form is `--json`'s output.
type WorkflowsReport struct {
	Nodes    string `json:"nodes"`
	Engine   string `json:"engine"`
	Function string `json:"function"`
	Client   string `json:"client"`
	// ChainLength is the number of states of the Pass and Task chains.
	ChainLength int `json:"chainLength"`
	// BuildMs is from the Function's creation to its Ready condition;
	// FirstCallMs the first call of it from the host. Neither is counted.
	BuildMs     float64          `json:"buildMs"`
	FirstCallMs float64          `json:"firstCallMs"`
	Rows        []WorkflowsRow   `json:"rows"`
	Targets     WorkflowsTargets `json:"targets"`
	// PassStateP50VsTarget and PassStateP99VsTarget are the Pass chain's
	// time per state over its target.
	PassStateP50VsTarget *float64 `json:"passStateP50VsTarget,omitempty"`
	PassStateP99VsTarget *float64 `json:"passStateP99VsTarget,omitempty"`
	// TaskOverheadP50Ms is the Task chain's median time per state less
	// the function's own median latency, TaskOverheadP99Ms the same at
	// p99; TaskOverheadVsTarget the first over its target.
	TaskOverheadP50Ms    *float64 `json:"taskOverheadP50Ms,omitempty"`
	TaskOverheadP99Ms    *float64 `json:"taskOverheadP99Ms,omitempty"`
	TaskOverheadVsTarget *float64 `json:"taskOverheadVsTarget,omitempty"`
}

// WorkflowsRow is one set of timed runs or calls.
type WorkflowsRow struct {
	// Key says what the row measures, whatever its Name (KeyWf*).
	Key string `json:"key"`
	LatencyRow
	Errors     int    `json:"errors"`
	FirstError string `json:"firstError,omitempty"`
	// MaxReady is the most Ready instances of the function seen during
	// the throughput phase.
	MaxReady int `json:"maxReady,omitempty"`
}

// WorkflowsTargets are the engine's targets.
type WorkflowsTargets struct {
	PassTransitionMs float64 `json:"passTransitionMs"`
	TaskOverheadMs   float64 `json:"taskOverheadMs"`
}

func (r *WorkflowsReport) row(key string) (WorkflowsRow, bool) {
	i := slices.IndexFunc(r.Rows, func(row WorkflowsRow) bool { return row.Key == key })
	if i < 0 || r.Rows[i].N == 0 {
		return WorkflowsRow{}, false
	}
	return r.Rows[i], true
}

func (r *WorkflowsReport) computeRatios() {
	if pass, ok := r.row(KeyWfPassState); ok && r.Targets.PassTransitionMs > 0 {
		p50, p99 := pass.P50Ms/r.Targets.PassTransitionMs, pass.P99Ms/r.Targets.PassTransitionMs
		r.PassStateP50VsTarget, r.PassStateP99VsTarget = &p50, &p99
	}
	task, okTask := r.row(KeyWfTaskState)
	fn, okFn := r.row(KeyWfFunction)
	if okTask && okFn {
		p50, p99 := task.P50Ms-fn.P50Ms, task.P99Ms-fn.P99Ms
		r.TaskOverheadP50Ms, r.TaskOverheadP99Ms = &p50, &p99
		if r.Targets.TaskOverheadMs > 0 {
			ratio := max(p50, 0) / r.Targets.TaskOverheadMs
			r.TaskOverheadVsTarget = &ratio
		}
	}
}

// WriteJSON writes r as indented JSON.
func (r *WorkflowsReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes r as a header, the latency table, and the targets
// with the ratios to them.
func (r *WorkflowsReport) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "nodes:     %s\n", r.Nodes)
	fmt.Fprintf(&b, "engine:    %s\n", r.Engine)
	fmt.Fprintf(&b, "function:  %s\n", r.Function)
	fmt.Fprintf(&b, "client:    %s\n", r.Client)
	fmt.Fprintf(&b, "not counted: function built and pushed in %s; its first call from the host %s; one warm-up run of each workflow\n\n",
		formatLatency(r.BuildMs), formatLatency(r.FirstCallMs))

	rows := [][]string{{"MEASURED", "N", "CLIENTS", "P50", "P90", "P99", "MAX", "PER S", "ERRORS"}}
	for _, row := range r.Rows {
		perSec := "-"
		if row.PerSec > 0 && row.Key != KeyWfPassState && row.Key != KeyWfTaskState {
			perSec = strconv.FormatFloat(row.PerSec, 'f', 1, 64)
		}
		rows = append(rows, []string{
			row.Name, strconv.Itoa(row.N), strconv.Itoa(row.Concurrency),
			formatLatency(row.P50Ms), formatLatency(row.P90Ms), formatLatency(row.P99Ms), formatLatency(row.MaxMs),
			perSec, strconv.Itoa(row.Errors),
		})
	}
	writeAligned(&b, rows)
	fmt.Fprintf(&b, "per state: one sample a run: the run (below) over its %d states.\n", r.ChainLength)
	b.WriteString("run: from the Create call to the watch event showing the run Succeeded. function alone: each call from its sending to the end of its answer.\n")
	b.WriteString("Percentiles are nearest-rank: with fewer than 100 samples p99 is the slowest.\n")
	for _, row := range r.Rows {
		if row.MaxReady > 0 {
			fmt.Fprintf(&b, "%s: the function had at most %d Ready instance(s).\n", row.Name, row.MaxReady)
		}
		if row.FirstError != "" {
			fmt.Fprintf(&b, "%s: first error: %s\n", row.Name, row.FirstError)
		}
	}

	fmt.Fprintf(&b, "\ntargets: a Pass state < %s; a Task state within %s of its function's warm latency\n",
		formatLatency(r.Targets.PassTransitionMs), formatLatency(r.Targets.TaskOverheadMs))
	if r.PassStateP50VsTarget != nil {
		pass, _ := r.row(KeyWfPassState)
		fmt.Fprintf(&b, "Pass state / target:     p50 %s = %s, p99 %s = %s (of %s)\n",
			formatLatency(pass.P50Ms), formatRatio(r.PassStateP50VsTarget), formatLatency(pass.P99Ms), formatRatio(r.PassStateP99VsTarget),
			formatLatency(r.Targets.PassTransitionMs))
	} else {
		b.WriteString("Pass state / target:     not measured\n")
	}
	if r.TaskOverheadP50Ms != nil {
		task, _ := r.row(KeyWfTaskState)
		fn, _ := r.row(KeyWfFunction)
		fmt.Fprintf(&b, "Task state - function:   p50 %s - %s = %s = %s of the target (%s); p99 %s - %s = %s\n",
			formatLatency(task.P50Ms), formatLatency(fn.P50Ms), formatSignedLatency(*r.TaskOverheadP50Ms), formatRatio(r.TaskOverheadVsTarget),
			formatLatency(r.Targets.TaskOverheadMs),
			formatLatency(task.P99Ms), formatLatency(fn.P99Ms), formatSignedLatency(*r.TaskOverheadP99Ms))
	} else {
		b.WriteString("Task state - function:   not measured\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// formatSignedLatency is formatLatency for a difference, which may be
// negative.
func formatSignedLatency(ms float64) string {
	if ms < 0 {
		return "-" + formatLatency(-ms)
	}
	return formatLatency(ms)
}

// percentileOf is the nearest-rank q-quantile of latencies in any order.
func percentileOf(latencies []time.Duration, q float64) time.Duration {
	sorted := slices.Clone(latencies)
	slices.Sort(sorted)
	return percentile(sorted, q)
}

func ptrTo(f float64) *float64 { return &f }
