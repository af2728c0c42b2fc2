package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Report is the outcome of a run; its JSON form is `--json`'s output.
type Report struct {
	Target        string   `json:"target"`
	APIServer     string   `json:"apiServer"`
	EtcdEndpoints []string `json:"etcdEndpoints,omitempty"`
	// PhaseSeconds is each phase's planned duration; 0 when Requests is set.
	PhaseSeconds float64 `json:"phaseSeconds,omitempty"`
	// Requests is each phase's number of requests, when not timed.
	Requests     int `json:"requestsPerPhase,omitempty"`
	ListObjects  int `json:"listObjects"`
	PayloadBytes int `json:"payloadBytes"`
	// StoredBytes is the size of a stored ConfigMap, hence of an etcd put's value.
	StoredBytes int      `json:"storedBytes"`
	Client      string   `json:"client"`
	Results     []Result `json:"results"`
}

// Result is one operation at one concurrency.
type Result struct {
	Operation string `json:"operation"`
	Clients   int    `json:"clients"`
	// Ops counts the successful requests, Errors the failed ones.
	Ops     int     `json:"ops"`
	Errors  int     `json:"errors"`
	Seconds float64 `json:"seconds"`
	// OpsPerSec is Ops over Seconds.
	OpsPerSec float64 `json:"opsPerSec"`
	P50Ms     float64 `json:"p50Ms"`
	P99Ms     float64 `json:"p99Ms"`
	// RatioToEtcdPut is OpsPerSec over etcd put's at the same
	// concurrency, for the writes (create, update) when etcd was measured.
	RatioToEtcdPut *float64 `json:"ratioToEtcdPut,omitempty"`
}

// computeRatios fills RatioToEtcdPut for the writes.
func (r *Report) computeRatios() {
	etcd := map[int]float64{}
	for _, res := range r.Results {
		if res.Operation == OpEtcdPut {
			etcd[res.Clients] = res.OpsPerSec
		}
	}
	for i := range r.Results {
		res := &r.Results[i]
		if res.Operation != OpCreate && res.Operation != OpUpdate {
			continue
		}
		if base, ok := etcd[res.Clients]; ok && base > 0 {
			ratio := res.OpsPerSec / base
			res.RatioToEtcdPut = &ratio
		}
	}
}

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes r as a short header and an aligned table.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "target:   %s\n", r.Target)
	fmt.Fprintf(&b, "api:      %s\n", r.APIServer)
	if len(r.EtcdEndpoints) > 0 {
		fmt.Fprintf(&b, "etcd:     %s\n", strings.Join(r.EtcdEndpoints, ","))
	} else {
		fmt.Fprintf(&b, "etcd:     not measured (no --etcd-endpoints)\n")
	}
	fmt.Fprintf(&b, "client:   %s\n", r.Client)
	phase := fmt.Sprintf("%gs per phase", r.PhaseSeconds)
	if r.Requests > 0 {
		phase = fmt.Sprintf("%d requests per phase", r.Requests)
	}
	fmt.Fprintf(&b, "workload: ConfigMaps with a %d-byte payload (%d bytes stored), lists of %d objects, %s\n\n",
		r.PayloadBytes, r.StoredBytes, r.ListObjects, phase)

	rows := [][]string{{"OPERATION", "CLIENTS", "OPS/S", "P50", "P99", "ERRORS", "VS ETCD PUT"}}
	for _, res := range r.Results {
		ratio := "-"
		if res.RatioToEtcdPut != nil {
			ratio = strconv.FormatFloat(*res.RatioToEtcdPut, 'f', 2, 64) + "x"
		}
		rows = append(rows, []string{
			res.Operation, strconv.Itoa(res.Clients), strconv.FormatFloat(res.OpsPerSec, 'f', 0, 64),
			formatLatency(res.P50Ms), formatLatency(res.P99Ms), strconv.Itoa(res.Errors), ratio,
		})
	}
	writeAligned(&b, rows)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeAligned pads the columns: the first left-aligned, the others, the
// figures, right-aligned.
func writeAligned(b *strings.Builder, rows [][]string) {
	var widths []int
	for _, row := range rows {
		for i, cell := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	for _, row := range rows {
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
			switch {
			case i == 0:
				b.WriteString(cell + pad)
			default:
				b.WriteString("  " + pad + cell)
			}
		}
		b.WriteString("\n")
	}
}

// formatLatency renders milliseconds: microseconds below one, else ms.
func formatLatency(ms float64) string {
	switch {
	case ms < 1:
		return strconv.FormatFloat(ms*1000, 'f', 0, 64) + "µs"
	case ms < 100:
		return strconv.FormatFloat(ms, 'f', 2, 64) + "ms"
	default:
		return strconv.FormatFloat(ms, 'f', 0, 64) + "ms"
	}
}
