package component

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Part is one long-running piece of a process. Start runs it and blocks
// until ctx ends; then it stops and returns nil. An error, or a return
// before ctx ends, is a failure of the part.
type Part interface {
	Name() string
	Start(ctx context.Context) error
}

// Readier is a Part that is ready some time after Start begins (a server
// once it listens, etcd once it serves): Ready's channel is closed then.
// A Part without it is ready as soon as it is started.
type Readier interface {
	Ready() <-chan struct{}
}

// DefaultStopGrace is Manager's StopGrace when none is set.
const DefaultStopGrace = 5 * time.Second

// Manager runs parts. The zero value is ready to use.
type Manager struct {
	// StopGrace is how long a stopping part is waited for before the part
	// started before it is stopped too (default DefaultStopGrace). Run
	// returns only once every part has stopped.
	StopGrace time.Duration
}

// Run runs parts under a zero Manager.
func Run(ctx context.Context, parts ...Part) error {
	return Manager{}.Run(ctx, parts...)
}

// running is a started part.
type running struct {
	part   Part
	cancel context.CancelFunc
	done   chan struct{}
	err    error // what Start returned, once done is closed
}

// Run starts parts in order, each once the one before it is ready, and
// runs them until ctx ends or one of them fails (a failure before it is
// ready ends start-up). Either way it stops the started parts in reverse
// order, each waited for before the one before it is stopped, and returns
// the first failure as "<part>: <error>", or nil when ctx ended and every
// part stopped cleanly. A part that returns nil before it was stopped
// failed too ("exited unexpectedly"); an error a part returns once it was
// stopped is returned when there was no failure before, context.Canceled
// excepted.
//
// Parts do not see ctx's cancellation directly (they keep its values):
// each has a context of its own, cancelled in turn.
func (m Manager) Run(ctx context.Context, parts ...Part) error {
	base := context.WithoutCancel(ctx)
	ended := make(chan *running, len(parts))
	var started []*running
	var failure error
	for _, p := range parts {
		pctx, cancel := context.WithCancel(base)
		r := &running{part: p, cancel: cancel, done: make(chan struct{})}
		started = append(started, r)
		go func() {
			r.err = p.Start(pctx)
			close(r.done)
			ended <- r
		}()
		select {
		case <-readyOf(p):
			continue
		case r := <-ended:
			failure = failed(r)
		case <-ctx.Done():
		}
		break
	}
	if failure == nil && len(started) == len(parts) {
		select {
		case r := <-ended:
			failure = failed(r)
		case <-ctx.Done():
		}
	}
	if err := m.stop(started); failure == nil {
		failure = err
	}
	return failure
}

// stop cancels the started parts last first and waits until all have
// stopped. It returns the first error one returned once stopped.
func (m Manager) stop(started []*running) error {
	grace := m.StopGrace
	if grace <= 0 {
		grace = DefaultStopGrace
	}
	for i := len(started) - 1; i >= 0; i-- {
		r := started[i]
		r.cancel()
		t := time.NewTimer(grace)
		select {
		case <-r.done:
		case <-t.C:
		}
		t.Stop()
	}
	var first error
	for _, r := range started {
		<-r.done
		if r.err != nil && !errors.Is(r.err, context.Canceled) && first == nil {
			first = fmt.Errorf("%s: %w", r.part.Name(), r.err)
		}
	}
	return first
}

// failed is the failure of r, which ended before it was stopped.
func failed(r *running) error {
	err := r.err
	if err == nil {
		err = errors.New("exited unexpectedly")
	}
	return fmt.Errorf("%s: %w", r.part.Name(), err)
}

// readyOf is p's ready channel; a closed one for a part without one.
func readyOf(p Part) <-chan struct{} {
	if r, ok := p.(Readier); ok {
		if c := r.Ready(); c != nil {
			return c
		}
	}
	c := make(chan struct{})
	close(c)
	return c
}

// Func is a Part of a name and a start function, ready once started.
func Func(name string, start func(ctx context.Context) error) Part {
	return funcPart{name: name, start: start}
}

type funcPart struct {
	name  string
	start func(context.Context) error
}

func (f funcPart) Name() string                    { return f.name }
func (f funcPart) Start(ctx context.Context) error { return f.start(ctx) }

// FuncReady is a Part of a name and a start function that calls ready
// once the part is ready; until then the parts after it wait.
func FuncReady(name string, start func(ctx context.Context, ready func()) error) Part {
	return &funcReadyPart{name: name, start: start, ready: make(chan struct{})}
}

type funcReadyPart struct {
	name  string
	start func(context.Context, func()) error
	ready chan struct{}
	once  sync.Once
}

func (f *funcReadyPart) Name() string           { return f.name }
func (f *funcReadyPart) Ready() <-chan struct{} { return f.ready }
func (f *funcReadyPart) Start(ctx context.Context) error {
	return f.start(ctx, func() { f.once.Do(func() { close(f.ready) }) })
}

// Do is a Part that runs do once, is ready when do succeeds and then
// stays until ctx ends: a step that later parts wait for (a setup, a
// callback saying that the parts before it are ready). do failing is the
// part failing.
func Do(name string, do func(ctx context.Context) error) Part {
	return &doPart{name: name, do: do, ready: make(chan struct{})}
}

type doPart struct {
	name  string
	do    func(context.Context) error
	ready chan struct{}
}

func (d *doPart) Name() string           { return d.name }
func (d *doPart) Ready() <-chan struct{} { return d.ready }
func (d *doPart) Start(ctx context.Context) error {
	if err := d.do(ctx); err != nil {
		return err
	}
	close(d.ready)
	<-ctx.Done()
	return nil
}

var (
	_ Part    = funcPart{}
	_ Readier = (*funcReadyPart)(nil)
	_ Readier = (*doPart)(nil)
)
