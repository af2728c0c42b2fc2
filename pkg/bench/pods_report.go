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

// Row names of the pods report.
const (
	RowPods = "pod create -> Running+Ready"
	RowBare = "bare container start (client library, = ctr run -d)"
	RowCtr  = "ctr run -d (the binary)"
)

// PodsReport is the outcome of `minik8s bench pods`; its JSON form is
// `--json`'s output.
type PodsReport struct {
	Node        string   `json:"node"`
	Containerd  string   `json:"containerd"`
	Image       string   `json:"image"`
	Command     []string `json:"command"`
	Pods        int      `json:"pods"`
	Concurrency int      `json:"concurrency"`
	// WarmUp is the number of pods (and of bare containers) started first
	// and not counted.
	WarmUp int          `json:"warmUp"`
	Rows   []LatencyRow `json:"rows"`
}

// LatencyRow is one way of starting N containers of the image.
type LatencyRow struct {
	Name        string `json:"name"`
	N           int    `json:"n"`
	Concurrency int    `json:"concurrency"`
	// Seconds is the wall time of the N starts together; PerSec is N over it.
	Seconds float64 `json:"seconds"`
	PerSec  float64 `json:"perSec"`
	P50Ms   float64 `json:"p50Ms"`
	P90Ms   float64 `json:"p90Ms"`
	P99Ms   float64 `json:"p99Ms"`
	MaxMs   float64 `json:"maxMs"`
	// P50VsBare and P99VsBare are this row's percentiles over the bare
	// container start's.
	P50VsBare *float64 `json:"p50VsBare,omitempty"`
	P99VsBare *float64 `json:"p99VsBare,omitempty"`
}

// latencyRow summarises latencies (in any order) taken over elapsed.
func latencyRow(name string, latencies []time.Duration, concurrency int, elapsed time.Duration) LatencyRow {
	sorted := slices.Clone(latencies)
	slices.Sort(sorted)
	r := LatencyRow{
		Name: name, N: len(sorted), Concurrency: concurrency, Seconds: elapsed.Seconds(),
		P50Ms: ms(percentile(sorted, 0.50)),
		P90Ms: ms(percentile(sorted, 0.90)),
		P99Ms: ms(percentile(sorted, 0.99)),
		MaxMs: ms(percentile(sorted, 1)),
	}
	if elapsed > 0 {
		r.PerSec = float64(r.N) / elapsed.Seconds()
	}
	return r
}

// computeRatios fills every row's ratios to the bare container start.
func (r *PodsReport) computeRatios() {
	i := slices.IndexFunc(r.Rows, func(row LatencyRow) bool { return row.Name == RowBare })
	if i < 0 || r.Rows[i].P50Ms <= 0 || r.Rows[i].P99Ms <= 0 {
		return
	}
	bare := r.Rows[i]
	for j := range r.Rows {
		p50, p99 := r.Rows[j].P50Ms/bare.P50Ms, r.Rows[j].P99Ms/bare.P99Ms
		r.Rows[j].P50VsBare, r.Rows[j].P99VsBare = &p50, &p99
	}
}

// WriteJSON writes r as indented JSON.
func (r *PodsReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes r as a short header, an aligned table and the ratio
// of pod to bare container startup.
func (r *PodsReport) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "node:       %s\n", r.Node)
	fmt.Fprintf(&b, "containerd: %s\n", r.Containerd)
	fmt.Fprintf(&b, "image:      %s (present, unpacked), command %s\n", r.Image, strings.Join(r.Command, " "))
	fmt.Fprintf(&b, "workload:   %d pods, %d at a time, after %d warm-up pod (bare containers: %d, one at a time, after %d warm-up)\n\n",
		r.Pods, r.Concurrency, r.WarmUp, r.Pods, r.WarmUp)

	rows := [][]string{{"STARTUP", "N", "AT ONCE", "P50", "P90", "P99", "MAX", "PER SEC", "P50 VS BARE", "P99 VS BARE"}}
	for _, row := range r.Rows {
		rows = append(rows, []string{
			row.Name, strconv.Itoa(row.N), strconv.Itoa(row.Concurrency),
			formatLatency(row.P50Ms), formatLatency(row.P90Ms), formatLatency(row.P99Ms), formatLatency(row.MaxMs),
			strconv.FormatFloat(row.PerSec, 'f', 1, 64), formatRatio(row.P50VsBare), formatRatio(row.P99VsBare),
		})
	}
	writeAligned(&b, rows)
	b.WriteString("\npod: from the Create call to the watch event showing it Running and Ready (scheduling, sandbox, CNI, container, status).\n")
	b.WriteString("bare: container + snapshot + task start until the task reports running, with the containerd Go client: `ctr run -d`'s work.\n")
	b.WriteString("Percentiles are nearest-rank: with fewer than 100 samples p99 is the slowest.\n")
	if i := slices.IndexFunc(r.Rows, func(row LatencyRow) bool { return row.Name == RowPods }); i >= 0 && r.Rows[i].P50VsBare != nil {
		fmt.Fprintf(&b, "\npod startup / bare container start: p50 %s, p99 %s\n", formatRatio(r.Rows[i].P50VsBare), formatRatio(r.Rows[i].P99VsBare))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func formatRatio(r *float64) string {
	if r == nil {
		return "-"
	}
	return strconv.FormatFloat(*r, 'f', 2, 64) + "x"
}
