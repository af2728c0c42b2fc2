package autoscale

import (
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	// base is an idle function at one instance, long idle, not panicking,
	// with Knative's windows and the fnmeta defaults.
	base := func(f func(in *Input)) Input {
		in := Input{
			Now: now, Current: 1, Ready: 1, LastActive: now.Add(-time.Hour),
			Min: 0, Max: 10, Target: 4, StableWindow: 60 * time.Second, ScaleToZeroAfter: 30 * time.Second,
		}
		f(&in)
		return in
	}
	for _, tc := range []struct {
		name      string
		in        Input
		want      int32
		panicking bool
	}{
		{"idle past scaleToZeroAfter goes to zero", base(func(in *Input) {
			in.LastActive = now.Add(-31 * time.Second)
		}), 0, false},
		{"idle at zero stays at zero", base(func(in *Input) { in.Current, in.Ready = 0, 0 }), 0, false},
		{"within scaleToZeroAfter keeps the last instance", base(func(in *Input) {
			in.LastActive = now.Add(-10 * time.Second)
		}), 1, false},
		{"within scaleToZeroAfter starts none", base(func(in *Input) {
			in.Current, in.Ready, in.LastActive = 0, 0, now.Add(-10*time.Second)
		}), 0, false},
		{"a request in flight keeps one whatever the averages", base(func(in *Input) { in.InFlight = 1 }), 1, false},
		{"the first request scales from zero", base(func(in *Input) {
			in.Current, in.Ready, in.InFlight, in.LastActive = 0, 0, 1, now
			in.StableConcurrency, in.PanicConcurrency = 0.05, 0.5
		}), 1, false},
		{"sustained concurrency 20 at target 4 wants 5", base(func(in *Input) {
			in.Current, in.Ready, in.StableConcurrency, in.PanicConcurrency, in.InFlight = 5, 5, 20, 20, 20
		}), 5, false},
		{"bounded by maxScale", base(func(in *Input) {
			in.Current, in.Ready, in.Max, in.StableConcurrency, in.PanicConcurrency = 3, 3, 3, 20, 20
		}), 3, false},
		{"minScale respected when idle", base(func(in *Input) { in.Current, in.Ready, in.Min = 0, 0, 2 }), 2, false},
		{"a burst panics and scales on the panic window", base(func(in *Input) {
			in.StableConcurrency, in.PanicConcurrency, in.InFlight = 2, 12, 12
		}), 3, true},
		{"a burst from zero panics", base(func(in *Input) {
			in.Current, in.Ready, in.StableConcurrency, in.PanicConcurrency, in.InFlight = 0, 0, 2, 20, 20
		}), 5, true},
		{"panic never scales down", base(func(in *Input) {
			in.Current, in.Ready, in.PanickedAt = 8, 8, now.Add(-10*time.Second)
			in.StableConcurrency, in.PanicConcurrency = 4, 4
		}), 8, true},
		{"panic ends a stable window after the last burst", base(func(in *Input) {
			in.Current, in.Ready, in.PanickedAt = 8, 8, now.Add(-60*time.Second)
			in.StableConcurrency, in.PanicConcurrency, in.LastActive = 4, 4, now
		}), 4, false},
		{"a scale-down at most halves the ready instances", base(func(in *Input) {
			in.Current, in.Ready, in.LastActive = 10, 10, now.Add(-5*time.Second)
		}), 5, false},
		{"the scale-down cap never asks for more than there are", base(func(in *Input) {
			in.Current, in.Ready, in.LastActive = 2, 10, now.Add(-5*time.Second)
			in.StableConcurrency, in.PanicConcurrency = 1, 1
		}), 2, false},
		{"stable concurrency scales down gently", base(func(in *Input) {
			in.Current, in.Ready, in.StableConcurrency, in.PanicConcurrency, in.LastActive = 6, 6, 7, 7, now
		}), 3, false},
		{"a target of 0 counts as 1", base(func(in *Input) {
			in.Target, in.StableConcurrency, in.PanicConcurrency, in.Current, in.Ready = 0, 3, 3, 3, 3
		}), 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.in)
			if got.Desired != tc.want || got.Panicking != tc.panicking {
				t.Errorf("Decide = %d panicking %v (%s), want %d panicking %v",
					got.Desired, got.Panicking, got.Reason, tc.want, tc.panicking)
			}
			if got.Panicking == got.PanickedAt.IsZero() {
				t.Errorf("Panicking %v with PanickedAt %v", got.Panicking, got.PanickedAt)
			}
		})
	}
}

// A panic lasts a stable window after the threshold was last crossed:
// each crossing extends it.
func TestDecidePanicExtends(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	in := Input{Now: t0, Current: 1, Ready: 1, LastActive: t0, Target: 1, Max: 10,
		StableWindow: 6 * time.Second, ScaleToZeroAfter: time.Minute, PanicConcurrency: 4, StableConcurrency: 1}
	d := Decide(in)
	if !d.Panicking || d.Desired != 4 {
		t.Fatalf("burst: %+v, want panicking at 4", d)
	}
	// Still bursting 4s later with 4 instances ready: not over the
	// threshold any more, but the panic holds.
	in.Now, in.Current, in.Ready, in.PanickedAt, in.PanicConcurrency = t0.Add(4*time.Second), 4, 4, d.PanickedAt, 1
	if d = Decide(in); !d.Panicking || d.Desired != 4 || !d.PanickedAt.Equal(t0) {
		t.Fatalf("after 4s: %+v, want still panicking at 4 since t0", d)
	}
	in.Now, in.PanickedAt = t0.Add(6*time.Second), d.PanickedAt
	if d = Decide(in); d.Panicking || d.Desired != 2 {
		t.Fatalf("after a stable window: %+v, want calm at 2 (halved)", d)
	}
}
