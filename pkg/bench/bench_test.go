package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRunReportsEveryRow runs the whole benchmark very briefly on an
// in-process control plane. Timings are not judged: only that every
// operation at every concurrency completed requests.
func TestRunReportsEveryRow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, progress bytes.Buffer
	cfg := Config{Concurrency: []int{1, 2}, Duration: 200 * time.Millisecond, ListObjects: 20, JSON: true, Progress: &progress}
	if err := Run(ctx, cfg, &out); err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("decode report: %v\n%s", err, out.String())
	}
	if len(r.EtcdEndpoints) == 0 {
		t.Errorf("in-process run has no etcd endpoint")
	}
	if r.StoredBytes <= r.PayloadBytes {
		t.Errorf("stored bytes %d, want more than the %d-byte payload", r.StoredBytes, r.PayloadBytes)
	}
	ops := []string{OpEtcdPut, OpCreate, OpGet, OpList, OpUpdate}
	got := map[string]Result{}
	for _, res := range r.Results {
		got[fmt.Sprintf("%s/%d", res.Operation, res.Clients)] = res
	}
	for _, op := range ops {
		for _, clients := range cfg.Concurrency {
			key := fmt.Sprintf("%s/%d", op, clients)
			res, ok := got[key]
			switch {
			case !ok:
				t.Errorf("%s: no row", key)
				continue
			case res.Ops == 0 || res.OpsPerSec <= 0:
				t.Errorf("%s: no ops: %+v", key, res)
			case res.Errors != 0:
				t.Errorf("%s: %d errors", key, res.Errors)
			case res.P50Ms <= 0 || res.P99Ms < res.P50Ms:
				t.Errorf("%s: latencies p50 %v p99 %v", key, res.P50Ms, res.P99Ms)
			}
			wantRatio := op == OpCreate || op == OpUpdate
			if (res.RatioToEtcdPut != nil) != wantRatio {
				t.Errorf("%s: ratio to etcd put %v, want one: %v", key, res.RatioToEtcdPut, wantRatio)
			}
		}
	}
	if len(r.Results) != len(ops)*len(cfg.Concurrency) {
		t.Errorf("%d rows, want %d", len(r.Results), len(ops)*len(cfg.Concurrency))
	}

	// The table renders every row.
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	if n := len(lines); n < len(r.Results)+1 {
		t.Fatalf("table has %d lines:\n%s", n, table.String())
	}
	if !strings.HasPrefix(lines[len(lines)-len(r.Results)-1], "OPERATION") {
		t.Errorf("no header row above the results:\n%s", table.String())
	}
	t.Logf("\n%s", table.String())
}

func TestRequestsMode(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	w := func(context.Context) error { mu.Lock(); calls++; mu.Unlock(); return nil }
	p := runPhase(context.Background(), []worker{w, w, w}, 0, 100)
	if p.ops != 100 || calls != 100 {
		t.Fatalf("ops %d, calls %d, want 100", p.ops, calls)
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	if got := percentile(d, 0.5); got != 50 {
		t.Errorf("p50 = %v, want 50", got)
	}
	if got := percentile(d, 0.99); got != 99 {
		t.Errorf("p99 = %v, want 99", got)
	}
	if got := percentile(d[:1], 0.99); got != 1 {
		t.Errorf("p99 of one = %v, want 1", got)
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("p50 of none = %v, want 0", got)
	}
}

// The go test -bench entry points share one in-process control plane,
// started by the first benchmark and stopped by TestMain.
var shared struct {
	once sync.Once
	t    *target
	env  *env
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.t != nil {
		if err := shared.t.close(); err != nil {
			fmt.Fprintln(os.Stderr, "stop control plane:", err)
		}
	}
	os.Exit(code)
}

func benchEnv(b *testing.B) *env {
	b.Helper()
	shared.once.Do(func() {
		ctx := context.Background()
		cfg := Config{}
		if shared.err = cfg.complete(); shared.err != nil {
			return
		}
		if shared.t, shared.err = openTarget(ctx, &cfg); shared.err != nil {
			return
		}
		shared.env, shared.err = newEnv(ctx, envConfig{
			rest: shared.t.rest, etcd: cfg.EtcdEndpoints, listObjects: cfg.ListObjects, payloadBytes: cfg.PayloadBytes,
		})
	})
	if shared.err != nil {
		b.Fatal(shared.err)
	}
	return shared.env
}

// benchOp runs b.N requests of op per concurrency, as sub-benchmarks, and
// reports p50 and p99 beside ns/op (which is wall time over requests).
func benchOp(b *testing.B, name string) {
	e := benchEnv(b)
	op, ok := e.operation(name)
	if !ok {
		b.Fatalf("no operation %q", name)
	}
	for _, clients := range DefaultConcurrency {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			ctx := context.Background()
			workers, release, err := op.prepare(ctx, clients)
			if err != nil {
				b.Fatal(err)
			}
			defer release()
			b.ResetTimer()
			p := runPhase(ctx, workers, 0, b.N)
			b.StopTimer()
			if p.firstErr != nil {
				b.Fatalf("%d errors, the first: %v", p.errors, p.firstErr)
			}
			b.ReportMetric(float64(percentile(p.latencies, 0.50).Microseconds()), "p50-us")
			b.ReportMetric(float64(percentile(p.latencies, 0.99).Microseconds()), "p99-us")
		})
	}
}

func BenchmarkEtcdPut(b *testing.B)   { benchOp(b, OpEtcdPut) }
func BenchmarkAPICreate(b *testing.B) { benchOp(b, OpCreate) }
func BenchmarkAPIGet(b *testing.B)    { benchOp(b, OpGet) }
func BenchmarkAPIList(b *testing.B)   { benchOp(b, OpList) }
func BenchmarkAPIUpdate(b *testing.B) { benchOp(b, OpUpdate) }
