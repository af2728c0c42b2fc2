package stats

import (
	"testing"
	"time"
)

func TestRate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		delta  uint64
		window time.Duration
		want   uint64
	}{
		{"one core for a second", uint64(time.Second), time.Second, 1e9},
		{"quarter core over ten seconds", uint64(2500 * time.Millisecond), 10 * time.Second, 250e6},
		{"idle", 0, time.Second, 0},
		{"two cores", uint64(30 * time.Second), 15 * time.Second, 2e9},
		{"no window", 5, 0, 0},
		// delta*1e9 would overflow uint64.
		{"large counters", uint64(100 * time.Hour), 50 * time.Hour, 2e9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Rate(tc.delta, tc.window); got != tc.want {
				t.Errorf("Rate(%d, %v) = %d, want %d", tc.delta, tc.window, got, tc.want)
			}
		})
	}
}

// TestCPUTracker walks one key through the tracker's cases: a reading is
// (seconds since t0, cumulative cpu seconds) and what Observe returns.
func TestCPUTracker(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type reading struct {
		at, usage float64 // seconds
		want      uint64  // nanocores
		ok        bool
	}
	for _, tc := range []struct {
		name     string
		readings []reading
	}{
		{"first reading has no rate", []reading{{0, 5, 0, false}}},
		{"rate over the window since the last sample", []reading{
			{0, 5, 0, false},
			{2, 6, 500e6, true}, // 1s of cpu in 2s: half a core
			{12, 16, 1e9, true}, // 10s in 10s: one core
			{13, 16, 0, true},   // idle
		}},
		{"a reading inside MinWindow reuses the last rate", []reading{
			{0, 0, 0, false},
			{1, 0.25, 250e6, true},
			{1.5, 1.25, 250e6, true}, // too close: the last rate, the base stays at t=1
			{2, 1.25, 1e9, true},     // 1s of cpu since t=1
		}},
		{"a reading inside MinWindow of a base has no rate yet", []reading{
			{0, 0, 0, false},
			{0.5, 0.5, 0, false},
			{1, 1, 1e9, true},
		}},
		{"a sample older than MaxWindow starts over", []reading{
			{0, 0, 0, false},
			{10, 5, 500e6, true},
			{100, 50, 0, false},
			{101, 50.1, 100e6, true},
		}},
		{"a counter that goes backwards starts over", []reading{
			{0, 100, 0, false},
			{1, 101, 1e9, true},
			{2, 0.5, 0, false}, // a new cgroup under the same key
			{3, 0.75, 250e6, true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr CPUTracker
			for i, r := range tc.readings {
				at := t0.Add(time.Duration(r.at * float64(time.Second)))
				got, ok := tr.Observe("c", at, uint64(r.usage*1e9))
				if got != r.want || ok != r.ok {
					t.Errorf("reading %d (t=%vs, usage=%vs): got %d, %v; want %d, %v", i, r.at, r.usage, got, ok, r.want, r.ok)
				}
			}
		})
	}
}

func TestCPUTrackerKeysAndPrune(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var tr CPUTracker
	tr.Observe("a", t0, 0)
	tr.Observe("b", t0, 0)
	if got, _ := tr.Observe("a", t0.Add(time.Second), 2e9); got != 2e9 {
		t.Errorf("a = %d, want 2e9", got)
	}
	if got, _ := tr.Observe("b", t0.Add(time.Second), 1e8); got != 1e8 {
		t.Errorf("b = %d, want 1e8 (keys are independent)", got)
	}
	tr.Observe("a", t0.Add(50*time.Second), 3e9)
	tr.Prune(t0.Add(90 * time.Second))
	if n := tr.Len(); n != 1 {
		t.Errorf("after Prune the tracker holds %d keys, want 1 (b's last sample is too old)", n)
	}
}
