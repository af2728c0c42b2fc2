package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Row names of the functions report.
const (
	RowFnCold       = "cold start, image on the node"
	RowFnColdPull   = "cold start, image pulled again"
	RowFnWarm       = "warm, sequential"
	RowFnConcurrent = "%d clients for %s (minScale 1)"
)

// FunctionsReport is the outcome of `minik8s bench functions`; its JSON
// form is `--json`'s output.
type FunctionsReport struct {
	Nodes    string `json:"nodes"`
	Registry string `json:"registry"`
	Runtime  string `json:"runtime"`
	Function string `json:"function"`
	Scale    string `json:"scale"`
	Client   string `json:"client"`
	// BuildMs is from the Function's creation to its Ready condition (the
	// code checked, the image built and pushed); FirstCallMs is the first
	// call, which pulls the image onto the node. Neither is counted.
	BuildMs     float64        `json:"buildMs"`
	FirstCallMs float64        `json:"firstCallMs"`
	Rows        []FunctionsRow `json:"rows"`
	// ColdSteps is where a cold start with the image on the node spends
	// its time.
	ColdSteps []StepRow `json:"coldSteps"`
	ScaleUp   *ScaleUp  `json:"scaleUp,omitempty"`
	Targets   Targets   `json:"targets"`
	// ColdP50VsTarget and ColdP99VsTarget are the cold start's (image on
	// the node) percentiles over the targets.
	ColdP50VsTarget *float64 `json:"coldP50VsTarget,omitempty"`
	ColdP99VsTarget *float64 `json:"coldP99VsTarget,omitempty"`
}

// FunctionsRow is one way of calling the function N times.
type FunctionsRow struct {
	LatencyRow
	Errors     int    `json:"errors"`
	FirstError string `json:"firstError,omitempty"`
	// NotCold counts the cold-start requests the router did not mark as
	// cold (X-Minik8s-Cold-Start): they found an instance.
	NotCold int `json:"notCold,omitempty"`
	// ImageBytes is the size of the image's layers; KeptBytes what
	// containerd still held of them after the image was deleted (layers
	// shared with other images), so was not pulled again.
	ImageBytes int64 `json:"imageBytes,omitempty"`
	KeptBytes  int64 `json:"keptBytes,omitempty"`
	// Instances is how many instances answered; MaxReady the most Ready
	// pods seen during the phase.
	Instances int `json:"instances,omitempty"`
	MaxReady  int `json:"maxReady,omitempty"`
}

// StepRow is one step of a cold start.
type StepRow struct {
	Step string `json:"step"`
	// N is the cold starts in which the step was seen.
	N int `json:"n"`
	// SinceSendP50Ms is the median time from the request's sending to the
	// watch event showing the step; StepP50Ms the median time from the
	// step before.
	SinceSendP50Ms float64 `json:"sinceSendP50Ms"`
	StepP50Ms      float64 `json:"stepP50Ms"`
}

// ScaleUp is the time from zero instances to Want Ready ones under load.
type ScaleUp struct {
	Clients int `json:"clients"`
	// Want is ceil(clients / target): the autoscaler's desired instances.
	Want     int     `json:"want"`
	ToTwoMs  float64 `json:"toTwoMs"`
	ToWantMs float64 `json:"toWantMs"`
	// MaxReady and MaxPods are the most Ready (and all) pods seen.
	MaxReady   int     `json:"maxReady"`
	MaxPods    int     `json:"maxPods"`
	Seconds    float64 `json:"seconds"`
	Requests   int     `json:"requests"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"firstError,omitempty"`
	Note       string  `json:"note,omitempty"`
}

// Targets are issue 11's for a cold start with the image on the node, and
// what others publish.
type Targets struct {
	ColdP50Ms float64 `json:"coldP50Ms"`
	ColdP99Ms float64 `json:"coldP99Ms"`
	Published string  `json:"published"`
}

func (r *FunctionsReport) computeRatios() {
	for _, row := range r.Rows {
		if row.Name == RowFnCold && r.Targets.ColdP50Ms > 0 && r.Targets.ColdP99Ms > 0 {
			p50, p99 := row.P50Ms/r.Targets.ColdP50Ms, row.P99Ms/r.Targets.ColdP99Ms
			r.ColdP50VsTarget, r.ColdP99VsTarget = &p50, &p99
		}
	}
}

// WriteJSON writes r as indented JSON.
func (r *FunctionsReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes r as a header, the latency table with the targets
// and the ratios, where a cold start goes, and the scale-up.
func (r *FunctionsReport) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "nodes:     %s\n", r.Nodes)
	fmt.Fprintf(&b, "registry:  %s (the nodes pull from it over loopback)\n", r.Registry)
	fmt.Fprintf(&b, "function:  %s, %s, a one-line handler; %s\n", r.Function, r.Runtime, r.Scale)
	fmt.Fprintf(&b, "client:    %s\n", r.Client)
	fmt.Fprintf(&b, "not counted: function checked, built and pushed in %s; first call (image pulled) %s\n\n",
		formatLatency(r.BuildMs), formatLatency(r.FirstCallMs))

	rows := [][]string{{"REQUESTS", "N", "CLIENTS", "P50", "P90", "P99", "MAX", "REQ/S", "ERRORS"}}
	for _, row := range r.Rows {
		perSec := "-"
		if row.PerSec > 0 {
			perSec = strconv.FormatFloat(row.PerSec, 'f', 1, 64)
		}
		rows = append(rows, []string{
			row.Name, strconv.Itoa(row.N), strconv.Itoa(row.Concurrency),
			formatLatency(row.P50Ms), formatLatency(row.P90Ms), formatLatency(row.P99Ms), formatLatency(row.MaxMs),
			perSec, strconv.Itoa(row.Errors),
		})
	}
	writeAligned(&b, rows)
	b.WriteString("Each request is timed from its sending to the end of its answer. Percentiles are nearest-rank: with fewer than 100 samples p99 is the slowest.\n")
	for _, row := range r.Rows {
		switch {
		case row.NotCold > 0:
			fmt.Fprintf(&b, "%s: %d of %d requests found an instance (not marked cold by the router).\n", row.Name, row.NotCold, row.N)
		case row.ImageBytes > 0:
			fmt.Fprintf(&b, "%s: image of %s deleted from containerd before each; %s of its layers stayed (shared with other images on this containerd), so about %s was pulled and unpacked each time.\n",
				row.Name, formatBytes(row.ImageBytes), formatBytes(row.KeptBytes), formatBytes(row.ImageBytes-row.KeptBytes))
		case row.Instances > 0:
			fmt.Fprintf(&b, "%s: %d instances answered, at most %d Ready at once.\n", row.Name, row.Instances, row.MaxReady)
		}
		if row.FirstError != "" {
			fmt.Fprintf(&b, "%s: first error: %s\n", row.Name, row.FirstError)
		}
	}

	fmt.Fprintf(&b, "\ntargets (issue 11), cold start with the image on the node: p50 <= %s, p99 <= %s; published: %s\n",
		formatLatency(r.Targets.ColdP50Ms), formatLatency(r.Targets.ColdP99Ms), r.Targets.Published)
	if r.ColdP50VsTarget != nil {
		fmt.Fprintf(&b, "cold start / target: p50 %s (of %s), p99 %s (of %s)\n",
			formatRatio(r.ColdP50VsTarget), formatLatency(r.Targets.ColdP50Ms), formatRatio(r.ColdP99VsTarget), formatLatency(r.Targets.ColdP99Ms))
	}

	if len(r.ColdSteps) > 0 {
		b.WriteString("\nwhere a cold start goes (image on the node; medians, as the benchmark's watches see each step):\n")
		steps := [][]string{{"STEP", "SEEN IN", "SINCE SEND", "FROM PREVIOUS"}}
		for _, s := range r.ColdSteps {
			steps = append(steps, []string{s.Step, strconv.Itoa(s.N), formatLatency(s.SinceSendP50Ms), formatLatency(s.StepP50Ms)})
		}
		writeAligned(&b, steps)
		b.WriteString("pod Ready's previous step is the container running; the router sends the request once its own probe answers.\n")
	}

	if s := r.ScaleUp; s != nil {
		fmt.Fprintf(&b, "\nscale from zero under %d closed-loop clients (target %d in flight -> %d instances):\n", s.Clients, benchTarget, s.Want)
		fmt.Fprintf(&b, "  2 Ready after %s, %d Ready after %s, at most %d Ready (%d pods) in %.1fs; %d requests, %d errors\n",
			latencyOrNever(s.ToTwoMs), s.Want, latencyOrNever(s.ToWantMs), s.MaxReady, s.MaxPods, s.Seconds, s.Requests, s.Errors)
		if s.FirstError != "" {
			fmt.Fprintf(&b, "  first error: %s\n", s.FirstError)
		}
		if s.Note != "" {
			fmt.Fprintf(&b, "  %s\n", s.Note)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func latencyOrNever(ms float64) string {
	if ms <= 0 {
		return "never"
	}
	return formatLatency(ms)
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	default:
		return strconv.Itoa(int(n)) + " B"
	}
}
