package bench

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// phase is what one pool of workers did.
type phase struct {
	ops, errors int
	elapsed     time.Duration
	// latencies of the successful requests, sorted.
	latencies []time.Duration
	firstErr  error
}

// runPhase runs the workers concurrently, back to back, for duration, or
// (requests > 0) until they have issued that many requests together.
// Requests in flight at the deadline complete and count: nothing is
// cancelled, and the elapsed time runs until the last one returns.
func runPhase(ctx context.Context, workers []worker, duration time.Duration, requests int) phase {
	type tally struct {
		lat      []time.Duration
		errors   int
		firstErr error
	}
	tallies := make([]tally, len(workers))
	var issued atomic.Int64
	start := time.Now()
	deadline := start.Add(duration)
	more := func() bool {
		if ctx.Err() != nil {
			return false
		}
		if requests > 0 {
			return issued.Add(1) <= int64(requests)
		}
		return time.Now().Before(deadline)
	}
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Go(func() {
			t := &tallies[i]
			for more() {
				t0 := time.Now()
				err := w(ctx)
				d := time.Since(t0)
				if err != nil {
					if t.firstErr == nil {
						t.firstErr = err
					}
					t.errors++
					continue
				}
				t.lat = append(t.lat, d)
			}
		})
	}
	wg.Wait()
	p := phase{elapsed: time.Since(start)}
	for _, t := range tallies {
		p.latencies = append(p.latencies, t.lat...)
		p.errors += t.errors
		if p.firstErr == nil {
			p.firstErr = t.firstErr
		}
	}
	p.ops = len(p.latencies)
	slices.Sort(p.latencies)
	return p
}

// percentile is the nearest-rank q-quantile (0 < q <= 1) of sorted.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

func (p phase) result(op string, clients int) Result {
	r := Result{
		Operation: op, Clients: clients, Ops: p.ops, Errors: p.errors,
		Seconds: p.elapsed.Seconds(),
		P50Ms:   ms(percentile(p.latencies, 0.50)),
		P99Ms:   ms(percentile(p.latencies, 0.99)),
	}
	if p.elapsed > 0 {
		r.OpsPerSec = float64(p.ops) / p.elapsed.Seconds()
	}
	return r
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
