package asl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"time"

	"github.com/minik8s/minik8s/pkg/workflow/asl/expr"
)

// maxSteps bounds the states Step goes through in one call, so that an
// endless Pass or Choice loop does not hang the caller.
const maxSteps = 1000

// stateError is an error of the current state, with its States Language
// name: Retry and Catch may handle it (but never ErrorRuntime).
type stateError struct {
	name, cause string
}

func runtimeError(format string, args ...any) *stateError {
	return &stateError{name: ErrorRuntime, cause: fmt.Sprintf(format, args...)}
}

// payloadError names a failure of Parameters, ResultSelector or
// ItemSelector.
func payloadError(field string, err error) *stateError {
	var ie *expr.IntrinsicError
	if errors.As(err, &ie) {
		return &stateError{name: ErrorIntrinsicFailure, cause: fmt.Sprintf("%s: %v", field, err)}
	}
	return &stateError{name: ErrorParameterPathFailure, cause: fmt.Sprintf("%s: %v", field, err)}
}

var emptyObject = json.RawMessage(`{}`)

// Start returns a new Execution of m for input (empty: {}) at env.Now:
// Running in StartAt with its first Event open. It does not step.
func (m *Machine) Start(input json.RawMessage, env Env) *Execution {
	if len(bytes.TrimSpace(input)) == 0 {
		input = emptyObject
	}
	x := &Execution{Status: StatusRunning}
	m.enter(x, m.StartAt, append(json.RawMessage(nil), input...), env)
	return x
}

// enter makes name the current state with the given raw input.
func (m *Machine) enter(x *Execution, name string, input json.RawMessage, env Env) {
	x.State = name
	x.StateInput = input
	x.Attempt = 1
	x.RetryCounts = nil
	x.WaitUntil = nil
	x.Work = nil
	typ := ""
	if s := m.States[name]; s != nil {
		typ = s.Type
	}
	x.History = append(x.History, Event{Name: name, Type: typ, Input: input, Entered: env.Now})
	if n := len(x.History); n > MaxHistory {
		copy(x.History, x.History[n-MaxHistory:])
		clear(x.History[MaxHistory:])
		x.History = x.History[:MaxHistory]
	}
	x.Transitions++
}

// current is the open Event of the current state (nil if History lost it).
func (x *Execution) current() *Event {
	if n := len(x.History); n > 0 && x.History[n-1].Name == x.State && x.History[n-1].Exited == nil {
		return &x.History[n-1]
	}
	return nil
}

// Step advances x through every state that needs nothing from outside,
// until the execution ends, the current state needs Work, it waits
// (WaitUntil after env.Now), or maxSteps states have run in this call. It
// reports whether it changed x.
func (m *Machine) Step(x *Execution, env Env) bool {
	changed := false
	for n := 0; n < maxSteps; n++ {
		if x.Status != StatusRunning || x.Work != nil {
			return changed
		}
		st := m.States[x.State]
		if st == nil {
			m.failExecution(x, runtimeError("no state named %q", x.State), env)
			return true
		}
		if x.WaitUntil != nil {
			if env.Now.Before(*x.WaitUntil) {
				return changed
			}
			x.WaitUntil = nil
			changed = true
			if st.Type == TypeWait {
				m.endWait(x, st, env)
				continue
			}
			// A retry's backoff is over: run the state again.
		}
		changed = true
		m.run(x, st, env)
	}
	return changed
}

// values decodes the current state's raw input and builds the context
// object.
func (m *Machine) values(x *Execution, env Env) (raw any, ctx map[string]any, err *stateError) {
	v, derr := expr.Decode(x.StateInput)
	if derr != nil {
		return nil, nil, runtimeError("state input is not JSON: %v", derr)
	}
	return v, m.context(x, env), nil
}

func timeString(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// context is the context object ($$) of the current state.
func (m *Machine) context(x *Execution, env Env) map[string]any {
	entered := env.Now
	if ev := x.current(); ev != nil {
		entered = ev.Entered
	}
	var input any = map[string]any{}
	if len(bytes.TrimSpace(env.Execution.Input)) > 0 {
		if v, err := expr.Decode(env.Execution.Input); err == nil {
			input = v
		}
	}
	retries := 0
	if x.Attempt > 1 {
		retries = x.Attempt - 1
	}
	return map[string]any{
		"Execution": map[string]any{
			"Id":        env.Execution.ID,
			"Name":      env.Execution.Name,
			"StartTime": timeString(env.Execution.StartTime),
			"Input":     input,
		},
		"StateMachine": map[string]any{
			"Id":   env.StateMachine.ID,
			"Name": env.StateMachine.Name,
		},
		"State": map[string]any{
			"Name":        x.State,
			"EnteredTime": timeString(entered),
			"RetryCount":  json.Number(strconv.Itoa(retries)),
		},
	}
}

// itemContext is ctx with $$.Map.Item set.
func itemContext(ctx map[string]any, index int, value any) map[string]any {
	c := make(map[string]any, len(ctx)+1)
	for k, v := range ctx {
		c[k] = v
	}
	c["Map"] = map[string]any{"Item": map[string]any{
		"Index": json.Number(strconv.Itoa(index)),
		"Value": value,
	}}
	return c
}

// inputPath applies InputPath to the raw input.
func inputPath(st *State, raw any, ctx map[string]any) (any, *stateError) {
	if st.InputPath.Null {
		return map[string]any{}, nil
	}
	v, err := expr.Query(st.InputPath.Path, raw, ctx)
	if err != nil {
		return nil, runtimeError("InputPath %s: %v", st.InputPath.Path, err)
	}
	return v, nil
}

// outputPath applies OutputPath to the state's output.
func outputPath(st *State, out any, ctx map[string]any) (any, *stateError) {
	if st.OutputPath.Null {
		return map[string]any{}, nil
	}
	v, err := expr.Query(st.OutputPath.Path, out, ctx)
	if err != nil {
		return nil, runtimeError("OutputPath %s: %v", st.OutputPath.Path, err)
	}
	return v, nil
}

// resultPath places result into the raw input.
func resultPath(rp OptionalPath, raw, result any) (any, *stateError) {
	if rp.Null {
		return raw, nil
	}
	v, err := expr.Set(raw, rp.Path, result)
	if err != nil {
		return nil, &stateError{name: ErrorResultPathMatchFailure, cause: fmt.Sprintf("ResultPath %s: %v", rp.Path, err)}
	}
	return v, nil
}

// effectiveInput is InputPath then Parameters.
func (m *Machine) effectiveInput(st *State, raw any, ctx map[string]any, env Env) (in, eff any, serr *stateError) {
	in, serr = inputPath(st, raw, ctx)
	if serr != nil {
		return nil, nil, serr
	}
	eff = in
	if st.Parameters != nil {
		v, err := expr.Payload(st.Parameters, in, ctx, env.Rand)
		if err != nil {
			return nil, nil, payloadError("Parameters", err)
		}
		eff = v
	}
	return in, eff, nil
}

// run runs the current state: it moves on, ends the execution, sets Work,
// or sets WaitUntil.
func (m *Machine) run(x *Execution, st *State, env Env) {
	raw, ctx, serr := m.values(x, env)
	if serr == nil {
		switch st.Type {
		case TypePass:
			serr = m.runPass(x, st, raw, ctx, env)
		case TypeTask:
			serr = m.runTask(x, st, raw, ctx, env)
		case TypeChoice:
			serr = m.runChoice(x, st, raw, ctx, env)
		case TypeWait:
			serr = m.runWait(x, st, raw, ctx, env)
		case TypeSucceed:
			serr = m.runSucceed(x, st, raw, ctx, env)
		case TypeFail:
			serr = m.runFail(x, st, raw, ctx, env)
		case TypeParallel:
			serr = m.runParallel(x, st, raw, ctx, env)
		case TypeMap:
			serr = m.runMap(x, st, raw, ctx, env)
		default:
			serr = runtimeError("unknown state type %q", st.Type)
		}
	}
	if serr != nil {
		m.handleError(x, st, serr, env)
	}
}

func (m *Machine) runPass(x *Execution, st *State, raw any, ctx map[string]any, env Env) *stateError {
	_, eff, serr := m.effectiveInput(st, raw, ctx, env)
	if serr != nil {
		return serr
	}
	result := eff
	if st.HasResult {
		result = st.Result
	}
	return m.finish(x, st, raw, result, ctx, env)
}

// finish applies ResultSelector, ResultPath and OutputPath to a state's
// result and moves on to Next (or ends the machine).
func (m *Machine) finish(x *Execution, st *State, raw, result any, ctx map[string]any, env Env) *stateError {
	if st.ResultSelector != nil {
		v, err := expr.Payload(st.ResultSelector, result, ctx, env.Rand)
		if err != nil {
			return payloadError("ResultSelector", err)
		}
		result = v
	}
	out, serr := resultPath(st.ResultPath, raw, result)
	if serr != nil {
		return serr
	}
	out, serr = outputPath(st, out, ctx)
	if serr != nil {
		return serr
	}
	return m.leave(x, st, out, st.Next, env)
}

// leave closes the current state's Event with out and goes to next, or
// ends the execution Succeeded when next is "".
func (m *Machine) leave(x *Execution, st *State, out any, next string, env Env) *stateError {
	b, err := expr.Encode(out)
	if err != nil {
		return runtimeError("output: %v", err)
	}
	if ev := x.current(); ev != nil {
		now := env.Now
		ev.Output = b
		ev.Exited = &now
		ev.Next = next
		if hasAttempts(st) {
			ev.Attempts = x.Attempt
		}
	}
	if next == "" {
		x.Status = StatusSucceeded
		x.Output = b
		x.State, x.StateInput, x.Attempt, x.RetryCounts, x.WaitUntil, x.Work = "", nil, 0, nil, nil, nil
		return nil
	}
	m.enter(x, next, b, env)
	return nil
}

func hasAttempts(st *State) bool {
	return st.Type == TypeTask || st.Type == TypeParallel || st.Type == TypeMap
}

// failExecution ends x Failed with e.
func (m *Machine) failExecution(x *Execution, e *stateError, env Env) {
	if ev := x.current(); ev != nil {
		now := env.Now
		ev.Exited = &now
		ev.Error, ev.Cause = e.name, e.cause
	}
	x.Status = StatusFailed
	x.Error, x.Cause = e.name, e.cause
	x.State, x.StateInput, x.Attempt, x.RetryCounts, x.WaitUntil, x.Work = "", nil, 0, nil, nil, nil
}

// handleError gives e to the state's Retry (first matching retrier
// decides), then its Catch, then fails the execution.
func (m *Machine) handleError(x *Execution, st *State, e *stateError, env Env) {
	ev := x.current()
	for i, r := range st.Retry {
		if !matchAny(r.ErrorEquals, e.name) {
			continue
		}
		for len(x.RetryCounts) < len(st.Retry) {
			x.RetryCounts = append(x.RetryCounts, 0)
		}
		if x.RetryCounts[i] >= r.MaxAttempts {
			break // exhausted: no other retrier is tried
		}
		x.RetryCounts[i]++
		delay := r.delay(x.RetryCounts[i], env.Rand)
		if ev != nil {
			ev.Retries = append(ev.Retries, Retry{At: env.Now, Error: e.name, Cause: e.cause, Delay: delay})
		}
		x.Attempt++
		if ev != nil {
			ev.Attempts = x.Attempt
		}
		until := env.Now.Add(delay)
		x.WaitUntil = &until
		x.Work = nil
		return
	}
	for _, c := range st.Catch {
		if !matchAny(c.ErrorEquals, e.name) {
			continue
		}
		raw, err := expr.Decode(x.StateInput)
		if err != nil {
			break
		}
		out, serr := resultPath(c.ResultPath, raw, map[string]any{"Error": e.name, "Cause": e.cause})
		if serr != nil {
			// As AWS: a catcher whose ResultPath fails fails the execution.
			m.failExecution(x, runtimeError("Catch ResultPath %s: %s (handling %s: %s)", c.ResultPath.Path, serr.cause, e.name, e.cause), env)
			return
		}
		if ev != nil {
			ev.Error, ev.Cause = e.name, e.cause
		}
		if serr := m.leave(x, st, out, c.Next, env); serr != nil {
			m.failExecution(x, serr, env)
		}
		return
	}
	m.failExecution(x, e, env)
}

// delay is the backoff before the n-th retry (n >= 1).
func (r Retrier) delay(n int, rnd *rand.Rand) time.Duration {
	secs := float64(r.IntervalSeconds) * math.Pow(r.BackoffRate, float64(n-1))
	if r.MaxDelaySeconds > 0 && secs > float64(r.MaxDelaySeconds) {
		secs = float64(r.MaxDelaySeconds)
	}
	const maxSecs = float64(math.MaxInt64/int64(time.Second)) - 1
	if secs > maxSecs || math.IsInf(secs, 0) || math.IsNaN(secs) {
		secs = maxSecs
	}
	d := time.Duration(secs * float64(time.Second))
	if r.JitterStrategy == JitterFull && d > 0 {
		var f float64
		if rnd != nil {
			f = rnd.Float64()
		} else {
			f = rand.Float64()
		}
		d = time.Duration(f * float64(d)).Round(time.Millisecond)
	}
	return d
}

func (m *Machine) runTask(x *Execution, st *State, raw any, ctx map[string]any, env Env) *stateError {
	in, eff, serr := m.effectiveInput(st, raw, ctx, env)
	if serr != nil {
		return serr
	}
	w := &Work{Kind: WorkTask, Resource: st.Resource}
	timeout, heartbeat := st.TimeoutSeconds, st.HeartbeatSeconds
	if st.TimeoutSecondsPath != "" {
		if timeout, serr = intAt("TimeoutSecondsPath", st.TimeoutSecondsPath, in, ctx, 1); serr != nil {
			return serr
		}
	}
	if st.HeartbeatSecondsPath != "" {
		if heartbeat, serr = intAt("HeartbeatSecondsPath", st.HeartbeatSecondsPath, in, ctx, 1); serr != nil {
			return serr
		}
	}
	w.Timeout = time.Duration(timeout) * time.Second
	w.Heartbeat = time.Duration(heartbeat) * time.Second
	b, err := expr.Encode(eff)
	if err != nil {
		return runtimeError("task input: %v", err)
	}
	w.Input = b
	x.Work = w
	return nil
}

// intAt resolves a *Path field that must select an integer >= lo.
func intAt(fieldName, p string, in any, ctx map[string]any, lo int) (int, *stateError) {
	v, err := expr.Query(p, in, ctx)
	if err != nil {
		return 0, runtimeError("%s %s: %v", fieldName, p, err)
	}
	f, ok := toFloat(v)
	if !ok || f != math.Trunc(f) || f < float64(lo) || f > math.MaxInt32 {
		return 0, runtimeError("%s %s: must select an integer of at least %d, not %s", fieldName, p, lo, encodeShort(v))
	}
	return int(f), nil
}

func encodeShort(v any) string {
	b, err := expr.Encode(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return shown(b)
}

func (m *Machine) runChoice(x *Execution, st *State, raw any, ctx map[string]any, env Env) *stateError {
	in, serr := inputPath(st, raw, ctx)
	if serr != nil {
		return serr
	}
	next := ""
	for _, r := range st.Choices {
		ok, serr := r.eval(in, ctx)
		if serr != nil {
			return serr
		}
		if ok {
			next = r.Next
			break
		}
	}
	if next == "" {
		next = st.Default
	}
	if next == "" {
		return &stateError{name: ErrorNoChoiceMatched, cause: fmt.Sprintf("no Choice rule of state %q matched the input and it has no Default", st.Name)}
	}
	out, serr := outputPath(st, in, ctx)
	if serr != nil {
		return serr
	}
	return m.leave(x, st, out, next, env)
}

func (m *Machine) runWait(x *Execution, st *State, raw any, ctx map[string]any, env Env) *stateError {
	in, serr := inputPath(st, raw, ctx)
	if serr != nil {
		return serr
	}
	var until time.Time
	switch {
	case st.Seconds != nil:
		until = env.Now.Add(time.Duration(*st.Seconds) * time.Second)
	case st.Timestamp != nil:
		until = *st.Timestamp
	case st.SecondsPath != "":
		n, serr := intAt("SecondsPath", st.SecondsPath, in, ctx, 0)
		if serr != nil {
			return serr
		}
		until = env.Now.Add(time.Duration(n) * time.Second)
	case st.TimestampPath != "":
		v, err := expr.Query(st.TimestampPath, in, ctx)
		if err != nil {
			return runtimeError("TimestampPath %s: %v", st.TimestampPath, err)
		}
		s, _ := v.(string)
		t, ok := timestamp(s)
		if !ok {
			return runtimeError("TimestampPath %s: must select an RFC3339 timestamp, not %s", st.TimestampPath, encodeShort(v))
		}
		until = t
	}
	if until.After(env.Now) {
		u := until.UTC()
		x.WaitUntil = &u
		return nil
	}
	return m.waitOutput(x, st, in, ctx, env)
}

// endWait moves on from a Wait state whose time has come.
func (m *Machine) endWait(x *Execution, st *State, env Env) {
	raw, ctx, serr := m.values(x, env)
	var in any
	if serr == nil {
		in, serr = inputPath(st, raw, ctx)
	}
	if serr == nil {
		serr = m.waitOutput(x, st, in, ctx, env)
	}
	if serr != nil {
		m.handleError(x, st, serr, env)
	}
}

func (m *Machine) waitOutput(x *Execution, st *State, in any, ctx map[string]any, env Env) *stateError {
	out, serr := outputPath(st, in, ctx)
	if serr != nil {
		return serr
	}
	return m.leave(x, st, out, st.Next, env)
}

func (m *Machine) runSucceed(x *Execution, st *State, raw any, ctx map[string]any, env Env) *stateError {
	in, serr := inputPath(st, raw, ctx)
	if serr != nil {
		return serr
	}
	out, serr := outputPath(st, in, ctx)
	if serr != nil {
		return serr
	}
	return m.leave(x, st, out, "", env)
}

func (m *Machine) runFail(x *Execution, st *State, raw any, ctx map[string]any, env Env) *stateError {
	e := &stateError{name: st.Error, cause: st.Cause}
	var serr *stateError
	if st.ErrorPath != "" {
		if e.name, serr = stringAt("ErrorPath", st.ErrorPath, raw, ctx, env); serr != nil {
			return serr
		}
	}
	if st.CausePath != "" {
		if e.cause, serr = stringAt("CausePath", st.CausePath, raw, ctx, env); serr != nil {
			return serr
		}
	}
	m.failExecution(x, e, env)
	return nil
}

// stringAt resolves a Path or intrinsic to a string (other values are
// written as JSON).
func stringAt(fieldName, p string, in any, ctx map[string]any, env Env) (string, *stateError) {
	var v any
	var err error
	if expr.IsIntrinsic(p) {
		v, err = expr.Intrinsic(p, in, ctx, env.Rand)
	} else {
		v, err = expr.Query(p, in, ctx)
	}
	if err != nil {
		return "", runtimeError("%s %s: %v", fieldName, p, err)
	}
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, err := expr.Encode(v)
	if err != nil {
		return "", runtimeError("%s %s: %v", fieldName, p, err)
	}
	return string(b), nil
}

func (m *Machine) runParallel(x *Execution, st *State, raw any, ctx map[string]any, env Env) *stateError {
	_, eff, serr := m.effectiveInput(st, raw, ctx, env)
	if serr != nil {
		return serr
	}
	b, err := expr.Encode(eff)
	if err != nil {
		return runtimeError("branch input: %v", err)
	}
	w := &Work{Kind: WorkParallel}
	for _, def := range st.branchDefs {
		w.Children = append(w.Children, Child{Definition: def, Input: b})
	}
	x.Work = w
	return nil
}

func (m *Machine) runMap(x *Execution, st *State, raw any, ctx map[string]any, env Env) *stateError {
	in, serr := inputPath(st, raw, ctx)
	if serr != nil {
		return serr
	}
	v, err := expr.Query(st.ItemsPath, in, ctx)
	if err != nil {
		return runtimeError("ItemsPath %s: %v", st.ItemsPath, err)
	}
	items, ok := v.([]any)
	if !ok {
		return runtimeError("ItemsPath %s: must select an array, not %s", st.ItemsPath, encodeShort(v))
	}
	w := &Work{Kind: WorkMap, MaxConcurrency: st.MaxConcurrency}
	if st.MaxConcurrencyPath != "" {
		if w.MaxConcurrency, serr = intAt("MaxConcurrencyPath", st.MaxConcurrencyPath, in, ctx, 0); serr != nil {
			return serr
		}
	}
	if w.ToleratedFailureCount, w.ToleratedFailurePercentage, serr = resolveTolerance(st, in, ctx); serr != nil {
		return serr
	}
	for i, item := range items {
		child := item
		if st.ItemSelector != nil {
			v, err := expr.Payload(st.ItemSelector, in, itemContext(ctx, i, item), env.Rand)
			if err != nil {
				return payloadError("ItemSelector", err)
			}
			child = v
		}
		b, err := expr.Encode(child)
		if err != nil {
			return runtimeError("item %d: %v", i, err)
		}
		w.Children = append(w.Children, Child{Definition: st.processorDef, Input: b})
	}
	if len(items) == 0 {
		return m.finish(x, st, raw, []any{}, ctx, env)
	}
	x.Work = w
	return nil
}

// Complete hands the result of x.Work to the current state, clears Work,
// finishes the state (ResultSelector, ResultPath, OutputPath) or handles
// r.Error (Retry, Catch, failing the execution), then steps.
func (m *Machine) Complete(x *Execution, r Result, env Env) {
	if x.Status != StatusRunning || x.Work == nil {
		return
	}
	x.Work = nil
	st := m.States[x.State]
	if st == nil {
		m.failExecution(x, runtimeError("no state named %q", x.State), env)
		return
	}
	serr := m.complete(x, st, r, env)
	if serr != nil {
		m.handleError(x, st, serr, env)
	}
	m.Step(x, env)
}

func (m *Machine) complete(x *Execution, st *State, r Result, env Env) *stateError {
	if r.Error != "" {
		return &stateError{name: r.Error, cause: r.Cause}
	}
	var result any
	if len(bytes.TrimSpace(r.Output)) > 0 {
		v, err := expr.Decode(r.Output)
		if err != nil {
			return runtimeError("result is not JSON: %v", err)
		}
		result = v
	}
	raw, ctx, serr := m.values(x, env)
	if serr != nil {
		return serr
	}
	return m.finish(x, st, raw, result, ctx, env)
}

// MapResult combines a Map's child results (in item order; nil for a
// child that did not run) under the state's tolerance: the output array
// (a failed item's entry is its {"Error", "Cause"}), or an error: with no
// tolerance set, the first failed child's own; once more failed than
// tolerated, States.ExceedToleratedFailureThreshold.
func (m *Machine) MapResult(x *Execution, results []*Result) Result {
	out := make([]any, len(results))
	failed := 0
	var first *Result
	for i, r := range results {
		switch {
		case r == nil:
		case r.Error != "":
			failed++
			if first == nil {
				first = r
			}
			out[i] = map[string]any{"Error": r.Error, "Cause": r.Cause}
		case len(bytes.TrimSpace(r.Output)) > 0:
			v, err := expr.Decode(r.Output)
			if err != nil {
				failed++
				bad := &Result{Error: ErrorRuntime, Cause: fmt.Sprintf("item %d: output is not JSON: %v", i, err)}
				if first == nil {
					first = bad
				}
				out[i] = map[string]any{"Error": bad.Error, "Cause": bad.Cause}
				continue
			}
			out[i] = v
		}
	}
	if failed > 0 && m.MapShouldStop(x, failed, len(results)) {
		count, pct := m.tolerance(x)
		if count == nil && pct == nil {
			return Result{Error: first.Error, Cause: first.Cause}
		}
		return Result{Error: ErrorExceedToleratedFailureThreshold,
			Cause: fmt.Sprintf("%d of %d items failed, more than tolerated%s (first: %s: %s)",
				failed, len(results), toleranceString(count, pct), first.Error, first.Cause)}
	}
	b, err := expr.Encode(out)
	if err != nil {
		return Result{Error: ErrorRuntime, Cause: fmt.Sprintf("map output: %v", err)}
	}
	return Result{Output: b}
}

func toleranceString(count *int, pct *float64) string {
	s := ""
	if count != nil {
		s += fmt.Sprintf(" (ToleratedFailureCount %d)", *count)
	}
	if pct != nil {
		s += fmt.Sprintf(" (ToleratedFailurePercentage %v)", *pct)
	}
	return s
}

// resolveTolerance is a Map state's ToleratedFailureCount and
// ToleratedFailurePercentage (nil: not set), the Path forms resolved
// against its effective input.
func resolveTolerance(st *State, in any, ctx map[string]any) (*int, *float64, *stateError) {
	count, pct := st.ToleratedFailureCount, st.ToleratedFailurePercentage
	if p := st.ToleratedFailureCountPath; p != "" {
		n, serr := intAt("ToleratedFailureCountPath", p, in, ctx, 0)
		if serr != nil {
			return nil, nil, serr
		}
		count = &n
	}
	if p := st.ToleratedFailurePercentagePath; p != "" {
		v, err := expr.Query(p, in, ctx)
		if err != nil {
			return nil, nil, runtimeError("ToleratedFailurePercentagePath %s: %v", p, err)
		}
		f, ok := toFloat(v)
		if !ok || f < 0 || f > 100 {
			return nil, nil, runtimeError("ToleratedFailurePercentagePath %s: must select a number from 0 to 100, not %s", p, encodeShort(v))
		}
		pct = &f
	}
	return count, pct, nil
}

// tolerance is the current Map's tolerance: as recorded in x.Work when
// the state was entered or, where the caller's record of Work dropped it,
// resolved again from the state and its input (the same, since both are
// deterministic; only a Path into $$.Execution would differ).
func (m *Machine) tolerance(x *Execution) (*int, *float64) {
	if w := x.Work; w != nil && (w.ToleratedFailureCount != nil || w.ToleratedFailurePercentage != nil) {
		return w.ToleratedFailureCount, w.ToleratedFailurePercentage
	}
	st := m.States[x.State]
	if st == nil || st.Type != TypeMap {
		return nil, nil
	}
	if st.ToleratedFailureCountPath == "" && st.ToleratedFailurePercentagePath == "" {
		return st.ToleratedFailureCount, st.ToleratedFailurePercentage
	}
	raw, ctx, serr := m.values(x, Env{})
	var in any
	if serr == nil {
		in, serr = inputPath(st, raw, ctx)
	}
	if serr != nil {
		return st.ToleratedFailureCount, st.ToleratedFailurePercentage
	}
	count, pct, serr := resolveTolerance(st, in, ctx)
	if serr != nil {
		return st.ToleratedFailureCount, st.ToleratedFailurePercentage
	}
	return count, pct
}

// MapShouldStop says whether failed failures out of total items already
// exceed the current Map's tolerance (with none set: any failure), so the
// caller stops starting children.
func (m *Machine) MapShouldStop(x *Execution, failed, total int) bool {
	if failed <= 0 {
		return false
	}
	count, pct := m.tolerance(x)
	if count == nil && pct == nil {
		return true
	}
	if count != nil && failed > *count {
		return true
	}
	if pct != nil && total > 0 && float64(failed)*100/float64(total) > *pct {
		return true
	}
	return false
}
