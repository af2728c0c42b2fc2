package stats

import (
	"sync"
	"time"
)

// Windows the tracker averages cpu use over.
const (
	// MinWindow is the shortest interval a rate is computed over: a
	// reading closer than this to its key's last sample reuses that
	// sample's rate, so two requests a moment apart do not report noise.
	MinWindow = time.Second
	// MaxWindow is the longest: a sample older than this says little about
	// the present, so a reading after it starts over (and the caller reads
	// again MinWindow later).
	MaxWindow = time.Minute
)

// CPUTracker computes cpu usage rates from readings of cumulative cpu time
// (cgroup cpuacct.usage, cpu.stat usage_usec, /proc/stat), keyed by
// whatever the caller measures (a container ID, a pod, the node). Rates
// are averaged over the time since the key's previous sample, as cadvisor
// does between its housekeeping runs. Its zero value is ready; it is safe
// for concurrent use.
type CPUTracker struct {
	mu      sync.Mutex
	samples map[string]cpuSample
}

type cpuSample struct {
	at    time.Time
	usage uint64 // cumulative cpu nanoseconds
	rate  uint64 // nanocores over the window that ended at `at`
	// hasRate is false for a base sample that had nothing to compare with.
	hasRate bool
}

// Observe records that key had used usage nanoseconds of cpu by at, and
// returns its average use since the previous sample in nanocores. ok is
// false when there is no usable previous sample — the first reading of a
// key, one after MaxWindow, or a counter that went backwards (a new cgroup
// under an old key) — and the reading becomes the base a later one is
// compared with.
func (t *CPUTracker) Observe(key string, at time.Time, usage uint64) (nanoCores uint64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.samples == nil {
		t.samples = map[string]cpuSample{}
	}
	prev, seen := t.samples[key]
	dt := at.Sub(prev.at)
	switch {
	case !seen, dt > MaxWindow, usage < prev.usage:
		t.samples[key] = cpuSample{at: at, usage: usage}
		return 0, false
	case dt < MinWindow:
		// Keep the older sample as the base: the window grows until it is
		// long enough.
		return prev.rate, prev.hasRate
	}
	rate := Rate(usage-prev.usage, dt)
	t.samples[key] = cpuSample{at: at, usage: usage, rate: rate, hasRate: true}
	return rate, true
}

// Prune forgets keys whose last sample is older than MaxWindow at now:
// containers and pods that are gone.
func (t *CPUTracker) Prune(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for key, s := range t.samples {
		if now.Sub(s.at) > MaxWindow {
			delete(t.samples, key)
		}
	}
}

// Len is how many keys the tracker holds.
func (t *CPUTracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.samples)
}

// Rate is delta nanoseconds of cpu time used over window, in nanocores
// (billionths of a core); 0 for a window that is not positive.
func Rate(delta uint64, window time.Duration) uint64 {
	if window <= 0 {
		return 0
	}
	// float64: delta*1e9 overflows uint64 past ~18s of cpu time.
	return uint64(float64(delta) / window.Seconds())
}
