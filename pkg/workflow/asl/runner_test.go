package asl

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/workflow/asl/expr"
)

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// taskFunc is a fake function or workflow: it sees the Task's input and
// the attempt (1, 2, ...) of this call of this resource.
type taskFunc func(in any, call int) Result

// runner drives executions to completion in memory: Tasks call fake
// functions, Parallel and Map children run recursively, and Waits advance
// a fake clock.
type runner struct {
	t     *testing.T
	now   time.Time
	rnd   *rand.Rand
	tasks map[string]taskFunc
	calls map[string]int
	// works records every Work handed out, in order.
	works []Work
	// steps counts the calls of Step.
	steps int
}

func newRunner(t *testing.T, tasks map[string]taskFunc) *runner {
	return &runner{t: t, now: t0, rnd: rand.New(rand.NewSource(1)), tasks: tasks, calls: map[string]int{}}
}

func (r *runner) env() Env {
	return Env{
		Now:          r.now,
		Rand:         r.rnd,
		Execution:    ContextExecution{ID: "run-1", Name: "run", StartTime: t0, Input: json.RawMessage(`{"original":true}`)},
		StateMachine: ContextStateMachine{ID: "wf-1", Name: "wf"},
	}
}

// run parses def and runs it with input to its end.
func (r *runner) run(def, input string) *Execution {
	r.t.Helper()
	return r.runMachine(mustParse(r.t, def), input)
}

func (r *runner) runMachine(m *Machine, input string) *Execution {
	r.t.Helper()
	x := m.Start(json.RawMessage(input), r.env())
	for i := 0; x.Status == StatusRunning; i++ {
		if i > 100000 {
			r.t.Fatalf("execution does not end: %+v", x)
		}
		m.Step(x, r.env())
		r.steps++
		// The caller stores x between steps: everything must survive JSON.
		x = r.roundTrip(x)
		switch {
		case x.Work != nil:
			r.works = append(r.works, *x.Work)
			res := r.do(m, x)
			m.Complete(x, res, r.env())
			x = r.roundTrip(x)
		case x.WaitUntil != nil && r.now.Before(*x.WaitUntil):
			r.now = *x.WaitUntil
		}
	}
	return x
}

func (r *runner) roundTrip(x *Execution) *Execution {
	r.t.Helper()
	b, err := json.Marshal(x)
	if err != nil {
		r.t.Fatalf("marshal execution: %v", err)
	}
	var y Execution
	if err := json.Unmarshal(b, &y); err != nil {
		r.t.Fatalf("unmarshal execution: %v", err)
	}
	return &y
}

func (r *runner) do(m *Machine, x *Execution) Result {
	r.t.Helper()
	w := x.Work
	switch w.Kind {
	case WorkTask:
		f := r.tasks[w.Resource]
		if f == nil {
			r.t.Fatalf("no fake for %s", w.Resource)
		}
		in, err := expr.Decode(w.Input)
		if err != nil {
			r.t.Fatalf("task input %s: %v", w.Input, err)
		}
		r.calls[w.Resource]++
		return f(in, r.calls[w.Resource])
	case WorkParallel:
		var outs []any
		for _, c := range w.Children {
			cx := r.child(c)
			if cx.Status == StatusFailed {
				return Result{Error: cx.Error, Cause: cx.Cause}
			}
			v, _ := expr.Decode(cx.Output)
			outs = append(outs, v)
		}
		return Result{Output: encode(r.t, outs)}
	case WorkMap:
		results := make([]*Result, len(w.Children))
		failed := 0
		for i, c := range w.Children {
			if m.MapShouldStop(x, failed, len(w.Children)) {
				break
			}
			cx := r.child(c)
			res := Result{Output: cx.Output, Error: cx.Error, Cause: cx.Cause}
			if res.Error != "" {
				failed++
			}
			results[i] = &res
		}
		return m.MapResult(x, results)
	}
	r.t.Fatalf("unknown work %q", w.Kind)
	return Result{}
}

func (r *runner) child(c Child) *Execution {
	r.t.Helper()
	m, errs := Parse(c.Definition, field.NewPath("child"))
	if len(errs) > 0 {
		r.t.Fatalf("child definition %s: %v", c.Definition, errs.ToAggregate())
	}
	return r.runMachine(m, string(c.Input))
}

func encode(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := expr.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ok is a fake that returns out (JSON).
func ok(out string) taskFunc {
	return func(any, int) Result { return Result{Output: json.RawMessage(out)} }
}

// echo returns its input.
func echo(in any, _ int) Result { return Result{Output: mustEncode(in)} }

func mustEncode(v any) json.RawMessage {
	b, err := expr.Encode(v)
	if err != nil {
		panic(err)
	}
	return b
}

// fails fails with err every time.
func fails(err, cause string) taskFunc {
	return func(any, int) Result { return Result{Error: err, Cause: cause} }
}

// failsThen fails n times with err, then returns out.
func failsThen(n int, err, out string) taskFunc {
	return func(_ any, call int) Result {
		if call <= n {
			return Result{Error: err, Cause: "try again"}
		}
		return Result{Output: json.RawMessage(out)}
	}
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(t *testing.T, got json.RawMessage, want string) bool {
	t.Helper()
	g, err := expr.Decode(got)
	if err != nil {
		t.Errorf("output %q: %v", got, err)
		return false
	}
	w, err := expr.Decode([]byte(want))
	if err != nil {
		t.Fatalf("want %q: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

// outcome checks how x ended: want is the output JSON, or "Error: name".
type outcome struct {
	output string
	err    string
}

func (o outcome) check(t *testing.T, x *Execution) {
	t.Helper()
	if o.err != "" {
		if x.Status != StatusFailed || x.Error != o.err {
			t.Errorf("got %s %q (%s) output %s, want Failed %q", x.Status, x.Error, x.Cause, x.Output, o.err)
		}
		return
	}
	if x.Status != StatusSucceeded {
		t.Fatalf("got %s %s: %s, want Succeeded %s", x.Status, x.Error, x.Cause, o.output)
	}
	if !sameJSON(t, x.Output, o.output) {
		t.Errorf("output = %s, want %s", x.Output, o.output)
	}
}

// path lists the names of the states x went through.
func path(x *Execution) []string {
	var out []string
	for _, e := range x.History {
		out = append(out, e.Name)
	}
	return out
}
