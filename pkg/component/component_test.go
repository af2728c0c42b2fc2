package component

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// events is what the fake parts did, in order.
type events struct {
	mu  sync.Mutex
	log []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = append(e.log, s)
}

func (e *events) get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.log)
}

// fake is a part that logs "start", "ready" and "stop", becomes ready
// after readyAfter, and then fails (err, or exitNil) or runs until
// stopped.
type fake struct {
	name       string
	readyAfter time.Duration
	// err is returned before the part is ready with early, else after.
	err     error
	early   bool
	exitNil bool
	// onReady runs once the part is ready.
	onReady func()

	ev    *events
	ready chan struct{}
}

func (f *fake) Name() string           { return f.name }
func (f *fake) Ready() <-chan struct{} { return f.ready }
func (f *fake) Start(ctx context.Context) error {
	f.ev.add("start " + f.name)
	if f.early {
		return f.err
	}
	select {
	case <-time.After(f.readyAfter):
	case <-ctx.Done():
		f.ev.add("stop " + f.name)
		return nil
	}
	f.ev.add("ready " + f.name)
	close(f.ready)
	if f.onReady != nil {
		f.onReady()
	}
	if f.err != nil || f.exitNil {
		return f.err
	}
	<-ctx.Done()
	f.ev.add("stop " + f.name)
	return nil
}

func TestRun(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name string
		// parts are a, b and c as adjusted by tune; cancel ctx when
		// cancelOn is ready.
		tune     func(a, b, c *fake)
		cancelOn string
		wantErr  string
		want     []string
	}{{
		name: "in order on readiness, stopped in reverse when ctx ends",
		tune: func(a, b, c *fake) { a.readyAfter, b.readyAfter = 30*time.Millisecond, 10*time.Millisecond },
		// c is cancelled when ready
		cancelOn: "c",
		want:     []string{"start a", "ready a", "start b", "ready b", "start c", "ready c", "stop c", "stop b", "stop a"},
	}, {
		name:    "the first failure stops the others in reverse and is named",
		tune:    func(a, b, c *fake) { c.err = boom },
		wantErr: "c: boom",
		want:    []string{"start a", "ready a", "start b", "ready b", "start c", "ready c", "stop b", "stop a"},
	}, {
		name: "a failure after start-up, in the middle",
		tune: func(a, b, c *fake) {
			// b fails once c is ready: c's readiness releases it.
			b.err = boom
			release := make(chan struct{})
			c.onReady = func() { close(release) }
			b.onReady = func() { <-release }
		},
		wantErr: "b: boom",
		want:    []string{"start a", "ready a", "start b", "ready b", "start c", "ready c", "stop c", "stop a"},
	}, {
		name:    "a failure before ready aborts start-up",
		tune:    func(a, b, c *fake) { b.err, b.early = boom, true },
		wantErr: "b: boom",
		want:    []string{"start a", "ready a", "start b", "stop a"},
	}, {
		name:    "returning nil while running is a failure",
		tune:    func(a, b, c *fake) { a.exitNil = true; a.readyAfter = 0; b.readyAfter = time.Hour },
		wantErr: "a: exited unexpectedly",
		want:    []string{"start a", "ready a", "start b", "stop b"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ev := &events{}
			parts := map[string]*fake{}
			for _, n := range []string{"a", "b", "c"} {
				parts[n] = &fake{name: n, ev: ev, ready: make(chan struct{})}
			}
			tc.tune(parts["a"], parts["b"], parts["c"])
			if p := parts[tc.cancelOn]; p != nil {
				p.onReady = cancel
			}
			done := make(chan error, 1)
			go func() { done <- Manager{StopGrace: time.Minute}.Run(ctx, parts["a"], parts["b"], parts["c"]) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("Run did not return; so far: %v", ev.get())
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Run = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Errorf("Run = %v, want %q", err, tc.wantErr)
			}
			if tc.wantErr == "c: boom" || tc.wantErr == "b: boom" {
				if !errors.Is(err, boom) {
					t.Errorf("Run = %v, does not wrap the part's error", err)
				}
			}
			if got := ev.get(); !slices.Equal(got, tc.want) {
				t.Errorf("events:\n got %v\nwant %v", got, tc.want)
			}
			noGoroutinesLeft(t, before)
		})
	}
}

// TestRunPlainParts: parts without Ready are ready once started; Do is
// ready once its step is done, and its failure is the part's; FuncReady
// once it says so.
func TestRunPlainParts(t *testing.T) {
	before := runtime.NumGoroutine()
	ev := &events{}
	ctx, cancel := context.WithCancel(context.Background())
	plain := func(name string) Part {
		return Func(name, func(ctx context.Context) error {
			ev.add("start " + name)
			<-ctx.Done()
			ev.add("stop " + name)
			return ctx.Err() // context.Canceled is a clean stop
		})
	}
	step := Do("step", func(context.Context) error {
		time.Sleep(20 * time.Millisecond)
		ev.add("step done")
		return nil
	})
	signals := FuncReady("signals", func(ctx context.Context, ready func()) error {
		time.Sleep(20 * time.Millisecond)
		ev.add("signals ready")
		ready()
		ready() // twice is harmless
		<-ctx.Done()
		return nil
	})
	last := Do("last", func(context.Context) error { cancel(); return nil })
	if err := Run(ctx, plain("x"), step, plain("y"), signals, last); err != nil {
		t.Fatalf("Run = %v", err)
	}
	want := []string{"start x", "step done", "start y", "signals ready", "stop y", "stop x"}
	if got := ev.get(); !slices.Equal(got, want) {
		t.Errorf("events:\n got %v\nwant %v", got, want)
	}

	err := Run(context.Background(), plain("z"), Do("setup", func(context.Context) error { return errors.New("no disk") }), plain("never"))
	if err == nil || err.Error() != "setup: no disk" {
		t.Errorf("Run with a failing step = %v, want setup: no disk", err)
	}
	if got := ev.get(); slices.Contains(got, "start never") {
		t.Errorf("a part after a failed step started: %v", got)
	}
	noGoroutinesLeft(t, before)
}

// TestRunStopError: an error a part returns once stopped is the result
// when nothing failed before.
func TestRunStopError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Run(ctx, Func("flusher", func(ctx context.Context) error {
		<-ctx.Done()
		return errors.New("flush: disk full")
	}))
	if err == nil || !strings.Contains(err.Error(), "flusher: flush: disk full") {
		t.Errorf("Run = %v, want the stop error named", err)
	}
}

// TestRunStopGrace: a part that does not stop holds up the parts before
// it only for StopGrace; Run still waits for it.
func TestRunStopGrace(t *testing.T) {
	ev := &events{}
	release := make(chan struct{})
	slow := Func("slow", func(ctx context.Context) error {
		<-ctx.Done()
		<-release
		ev.add("stop slow")
		return nil
	})
	first := Func("first", func(ctx context.Context) error {
		<-ctx.Done()
		ev.add("stop first")
		close(release)
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	last := Do("last", func(context.Context) error { cancel(); return nil })
	if err := (Manager{StopGrace: 10 * time.Millisecond}).Run(ctx, first, slow, last); err != nil {
		t.Fatalf("Run = %v", err)
	}
	want := []string{"stop first", "stop slow"}
	if got := ev.get(); !slices.Equal(got, want) {
		t.Errorf("events:\n got %v\nwant %v", got, want)
	}
}

// noGoroutinesLeft fails when more goroutines run than before, after a
// moment for those that are ending.
func noGoroutinesLeft(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines left, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
