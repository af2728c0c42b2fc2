package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/engine"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// TestWorkflowEngine runs the workflow engine (pkg/workflow/engine)
// against the apiserver, with its functions played in-process: each
// subtest is a user's story in a namespace of its own, told by what the
// user reads in the WorkflowRun (phase, output, error, history).
func TestWorkflowEngine(t *testing.T) {
	c := startClusterWith(t, withoutControllers("workflow", "workflowrun"))
	e := wfNewEngine(t, c, wfStartFunctions(t))
	e.start(t)

	inc := func(_ context.Context, in json.RawMessage) (int, any) { return wfOK(wfNumber(in) + 1) }
	double := func(_ context.Context, in json.RawMessage) (int, any) { return wfOK(wfNumber(in) * 2) }

	t.Run("chain of function tasks", func(t *testing.T) {
		t.Parallel()
		n := e.namespace(t, "wf-chain")
		n.fn("inc", inc)
		n.fn("double", double)
		n.workflow("chain", `{"StartAt": "Inc", "States": {
			"Inc":      {"Type": "Task", "Resource": "function:inc", "Next": "Double"},
			"Double":   {"Type": "Task", "Resource": "double", "Next": "IncAgain"},
			"IncAgain": {"Type": "Task", "Resource": "function:inc", "End": true}}}`)
		n.run("chain-1", "chain", `3`)

		run := n.finished("chain-1", minik8sv1.WorkflowRunSucceeded)
		wfEqualJSON(t, "output", run.Status.Output, `9`) // ((3+1)*2)+1
		wfCheckStates(t, run, "Inc:Task", "Double:Task", "IncAgain:Task")
		want := []struct{ in, out, next string }{{`3`, `4`, "Double"}, {`4`, `8`, "IncAgain"}, {`8`, `9`, ""}}
		for i, h := range run.Status.History {
			if i >= len(want) {
				break
			}
			wfEqualJSON(t, h.Name+" input", h.Input, want[i].in)
			wfEqualJSON(t, h.Name+" output", h.Output, want[i].out)
			if h.Next != want[i].next || h.Attempts != 1 || h.Error != "" {
				t.Errorf("%s: next %q attempts %d error %q, want next %q, 1 attempt, no error", h.Name, h.Next, h.Attempts, h.Error, want[i].next)
			}
			if h.Exited == nil || h.Exited.Before(&h.Entered) {
				t.Errorf("%s: entered %v, exited %v", h.Name, h.Entered, h.Exited)
			} else if i+1 < len(run.Status.History) && run.Status.History[i+1].Entered.Before(h.Exited) {
				t.Errorf("%s entered before %s exited", run.Status.History[i+1].Name, h.Name)
			}
		}
		if run.Status.CurrentState != "" || run.Status.Work != nil || run.Status.Error != "" || run.Status.Transitions != 3 {
			t.Errorf("finished run: currentState %q, work %+v, error %q, transitions %d", run.Status.CurrentState, run.Status.Work, run.Status.Error, run.Status.Transitions)
		}
	})

	t.Run("choice and fail", func(t *testing.T) {
		t.Parallel()
		n := e.namespace(t, "wf-choice")
		n.fn("double", double)
		n.workflow("size", `{"StartAt": "Check", "States": {
			"Check": {"Type": "Choice", "Default": "Small",
				"Choices": [{"Variable": "$.n", "NumericGreaterThan": 10, "Next": "Big"}]},
			"Big":   {"Type": "Task", "Resource": "function:double", "InputPath": "$.n", "End": true},
			"Small": {"Type": "Fail", "Error": "TooSmall", "Cause": "n must be more than 10"}}}`)
		n.run("big", "size", `{"n": 12}`)
		n.run("small", "size", `{"n": 3}`)

		big := n.finished("big", minik8sv1.WorkflowRunSucceeded)
		wfEqualJSON(t, "big output", big.Status.Output, `24`)
		wfCheckStates(t, big, "Check:Choice", "Big:Task")
		if h := big.Status.History[0]; h.Next != "Big" {
			t.Errorf("big: Check went to %q, want Big", h.Next)
		}

		small := n.finished("small", minik8sv1.WorkflowRunFailed)
		if small.Status.Error != "TooSmall" || small.Status.Cause != "n must be more than 10" {
			t.Errorf("small: error %q cause %q, want TooSmall: n must be more than 10", small.Status.Error, small.Status.Cause)
		}
		if small.Status.Output != nil {
			t.Errorf("small: output %s, want none", small.Status.Output.Bytes())
		}
		wfCheckStates(t, small, "Check:Choice", "Small:Fail")
		if h := small.Status.History[len(small.Status.History)-1]; h.Error != "TooSmall" || h.Exited == nil {
			t.Errorf("small: Fail state's history %+v, want error TooSmall and exited", h)
		}
	})

	t.Run("retry succeeds on the third attempt", func(t *testing.T) {
		t.Parallel()
		n := e.namespace(t, "wf-retry")
		var g wfGauge
		n.fn("flaky", func(_ context.Context, in json.RawMessage) (int, any) {
			g.enter()
			defer g.exit()
			if k := g.calls.Load(); k < 3 {
				return wfRaise("RuntimeError", fmt.Sprintf("flaked on call %d", k))
			}
			return wfOK(map[string]any{"got": json.RawMessage(in), "ok": true})
		})
		n.workflow("flaky", `{"StartAt": "Flaky", "States": {
			"Flaky": {"Type": "Task", "Resource": "function:flaky", "End": true,
				"Retry": [{"ErrorEquals": ["RuntimeError"], "IntervalSeconds": 1, "MaxAttempts": 3, "BackoffRate": 2}]}}}`)
		n.run("flaky-1", "flaky", `{"x": 1}`)

		run := n.finished("flaky-1", minik8sv1.WorkflowRunSucceeded)
		wfEqualJSON(t, "output", run.Status.Output, `{"got": {"x": 1}, "ok": true}`)
		if k := g.calls.Load(); k != 3 {
			t.Errorf("flaky was called %d times, want 3", k)
		}
		wfCheckStates(t, run, "Flaky:Task")
		h := run.Status.History[0]
		if h.Attempts != 3 || len(h.Retries) != 2 {
			t.Fatalf("Flaky: %d attempts, retries %+v; want 3 attempts, 2 retries", h.Attempts, h.Retries)
		}
		for i, want := range []time.Duration{time.Second, 2 * time.Second} {
			r := h.Retries[i]
			if r.Delay.Duration != want || r.Error != "RuntimeError" || !strings.Contains(r.Cause, fmt.Sprintf("flaked on call %d", i+1)) {
				t.Errorf("retry %d: %+v, want delay %v after RuntimeError (flaked on call %d)", i, r, want, i+1)
			}
		}
		if gap := h.Retries[1].At.Sub(h.Retries[0].At.Time); gap < time.Second {
			t.Errorf("second attempt failed %v after the first, want at least the 1s backoff", gap)
		}
		if h.Exited == nil || h.Exited.Sub(h.Entered.Time) < 3*time.Second {
			t.Errorf("Flaky entered %v, exited %v: want at least 3s of backoff between them", h.Entered, h.Exited)
		}
		if h.Error != "" || h.Output == nil {
			t.Errorf("Flaky's history after its success: error %q, output %v", h.Error, h.Output)
		}
	})

	t.Run("catch routes an error to a handler", func(t *testing.T) {
		t.Parallel()
		n := e.namespace(t, "wf-catch")
		n.fn("reject", func(_ context.Context, in json.RawMessage) (int, any) {
			return wfRaise("ValueError", "bad value "+string(in))
		})
		n.workflow("careful", `{"StartAt": "Risky", "States": {
			"Risky":   {"Type": "Task", "Resource": "function:reject", "End": true,
				"Retry": [{"ErrorEquals": ["RuntimeError"], "MaxAttempts": 5}],
				"Catch": [{"ErrorEquals": ["TypeError"], "Next": "Wrong"},
				          {"ErrorEquals": ["ValueError"], "ResultPath": "$.error", "Next": "Recover"}]},
			"Wrong":   {"Type": "Fail", "Error": "WrongCatcher"},
			"Recover": {"Type": "Pass", "Result": "recovered", "ResultPath": "$.status", "End": true}}}`)
		n.run("careful-1", "careful", `{"x": 1}`)

		run := n.finished("careful-1", minik8sv1.WorkflowRunSucceeded)
		wfEqualJSON(t, "output", run.Status.Output,
			`{"x": 1, "error": {"Error": "ValueError", "Cause": "HTTP 500: bad value {\"x\":1}"}, "status": "recovered"}`)
		wfCheckStates(t, run, "Risky:Task", "Recover:Pass")
		if h := run.Status.History[0]; h.Error != "ValueError" || h.Next != "Recover" || h.Attempts != 1 || len(h.Retries) != 0 {
			t.Errorf("Risky: %+v, want error ValueError, next Recover, 1 attempt, no retries", h)
		}
	})

	t.Run("parallel branches", func(t *testing.T) {
		t.Parallel()
		n := e.namespace(t, "wf-parallel")
		n.fn("inc", inc)
		n.fn("double", double)
		n.workflow("both", `{"StartAt": "Both", "States": {
			"Both": {"Type": "Parallel", "End": true, "Branches": [
				{"StartAt": "Inc",    "States": {"Inc":    {"Type": "Task", "Resource": "function:inc", "End": true}}},
				{"StartAt": "Double", "States": {"Double": {"Type": "Task", "Resource": "function:double", "End": true}}}]}}}`)
		n.run("both-1", "both", `5`)

		run := n.finished("both-1", minik8sv1.WorkflowRunSucceeded)
		wfEqualJSON(t, "output", run.Status.Output, `[6, 10]`)
		wfCheckStates(t, run, "Both:Parallel")
		children := n.children("both-1")
		if len(children) != 2 {
			t.Fatalf("%d child runs, want 2 (a branch each)", len(children))
		}
		outs := map[string]string{}
		for i := range children {
			ch := &children[i]
			wfCheckOwned(t, ch, run)
			if ch.Status.Phase != minik8sv1.WorkflowRunSucceeded || ch.Spec.Definition == nil {
				t.Errorf("branch run %s: phase %s, definition %v", ch.Name, ch.Status.Phase, ch.Spec.Definition)
			}
			outs[ch.Annotations[wfmeta.ParentStateAnnotation]] = string(ch.Status.Output.Bytes())
		}
		if outs["Both/1/1/0"] != "6" || outs["Both/1/1/1"] != "10" {
			t.Errorf("branch outputs by %s: %v, want Both/1/1/0: 6, Both/1/1/1: 10", wfmeta.ParentStateAnnotation, outs)
		}
	})

	t.Run("map with max concurrency", func(t *testing.T) {
		t.Parallel()
		n := e.namespace(t, "wf-map")
		var g wfGauge
		n.fn("square", func(_ context.Context, in json.RawMessage) (int, any) {
			g.enter()
			defer g.exit()
			time.Sleep(300 * time.Millisecond)
			x := wfNumber(in)
			return wfOK(x * x)
		})
		n.workflow("squares", `{"StartAt": "Squares", "States": {
			"Squares": {"Type": "Map", "ItemsPath": "$.items", "MaxConcurrency": 2, "End": true,
				"ItemProcessor": {"StartAt": "Square", "States": {"Square": {"Type": "Task", "Resource": "function:square", "End": true}}}}}}`)
		n.run("squares-1", "squares", `{"items": [1, 2, 3, 4, 5]}`)

		run := n.finished("squares-1", minik8sv1.WorkflowRunSucceeded)
		wfEqualJSON(t, "output", run.Status.Output, `[1, 4, 9, 16, 25]`)
		wfCheckStates(t, run, "Squares:Map")
		if calls, peak := g.calls.Load(), g.peak.Load(); calls != 5 || peak > 2 {
			t.Errorf("square: %d calls, at most %d at once; want 5 calls, at most 2 at once", calls, peak)
		} else {
			t.Logf("square: at most %d calls at once", peak)
		}
		children := n.children("squares-1")
		if len(children) != 5 {
			t.Fatalf("%d child runs, want 5 (an item each)", len(children))
		}
		for i := range children {
			wfCheckOwned(t, &children[i], run)
			if children[i].Status.Phase != minik8sv1.WorkflowRunSucceeded {
				t.Errorf("item run %s: %s", children[i].Name, children[i].Status.Phase)
			}
		}
	})

	t.Run("workflow task runs another workflow", func(t *testing.T) {
		t.Parallel()
		n := e.namespace(t, "wf-nested")
		n.fn("inc", inc)
		n.fn("double", double)
		n.workflow("inc-double", `{"StartAt": "Inc", "States": {
			"Inc":    {"Type": "Task", "Resource": "function:inc", "Next": "Double"},
			"Double": {"Type": "Task", "Resource": "function:double", "End": true}}}`)
		n.workflow("caller", `{"StartAt": "Sub", "States": {
			"Sub": {"Type": "Task", "Resource": "workflow:inc-double", "InputPath": "$.n", "ResultPath": "$.result", "End": true}}}`)
		n.run("caller-1", "caller", `{"n": 4}`)

		run := n.finished("caller-1", minik8sv1.WorkflowRunSucceeded)
		wfEqualJSON(t, "output", run.Status.Output, `{"n": 4, "result": 10}`)
		wfCheckStates(t, run, "Sub:Task")
		children := n.children("caller-1")
		if len(children) != 1 {
			t.Fatalf("%d child runs, want 1", len(children))
		}
		ch := &children[0]
		wfCheckOwned(t, ch, run)
		if ch.Spec.Workflow != "inc-double" || ch.Labels[wfmeta.WorkflowLabel] != "inc-double" || ch.Status.Phase != minik8sv1.WorkflowRunSucceeded {
			t.Errorf("child run %s: workflow %q, label %q, phase %s; want a Succeeded run of inc-double",
				ch.Name, ch.Spec.Workflow, ch.Labels[wfmeta.WorkflowLabel], ch.Status.Phase)
		}
		wfEqualJSON(t, "child input", ch.Spec.Input, `4`)
		wfEqualJSON(t, "child output", ch.Status.Output, `10`)
		wfCheckStates(t, ch, "Inc:Task", "Double:Task")
	})

	t.Run("a null result flows on", func(t *testing.T) {
		t.Parallel()
		n := e.namespace(t, "wf-null")
		n.fn("nothing", func(context.Context, json.RawMessage) (int, any) { return wfOK(nil) })
		n.fn("echo", func(_ context.Context, in json.RawMessage) (int, any) { return wfOK(map[string]any{"echo": in}) })
		n.workflow("nulls", `{"StartAt": "Nothing", "States": {
			"Nothing": {"Type": "Task", "Resource": "function:nothing", "Next": "Echo"},
			"Echo":    {"Type": "Task", "Resource": "function:echo", "End": true}}}`)
		n.run("nulls-1", "nulls", `{}`)

		run := n.finished("nulls-1", minik8sv1.WorkflowRunSucceeded)
		wfEqualJSON(t, "output", run.Status.Output, `{"echo": null}`)
		wfCheckStates(t, run, "Nothing:Task", "Echo:Task")
	})

	t.Run("timeouts", func(t *testing.T) {
		t.Parallel()
		n := e.namespace(t, "wf-timeout")
		slow := &wfHang{d: 10 * time.Second}
		n.fn("slow", slow.fn)
		n.workflow("caught", `{"StartAt": "Slow", "States": {
			"Slow": {"Type": "Task", "Resource": "function:slow", "TimeoutSeconds": 1, "End": true,
				"Catch": [{"ErrorEquals": ["States.Timeout"], "ResultPath": "$.late", "Next": "Late"}]},
			"Late": {"Type": "Pass", "End": true}}}`)
		n.workflow("uncaught", `{"StartAt": "Slow", "States": {
			"Slow": {"Type": "Task", "Resource": "function:slow", "TimeoutSeconds": 1, "End": true,
				"Catch": [{"ErrorEquals": ["States.TaskFailed"], "Next": "Never"}]},
			"Never": {"Type": "Succeed"}}}`)
		n.workflow("machine", `{"TimeoutSeconds": 2, "StartAt": "Slow", "States": {
			"Slow": {"Type": "Task", "Resource": "function:slow", "End": true}}}`)
		n.run("caught-1", "caught", `{"a": 1}`)
		n.run("uncaught-1", "uncaught", `{}`)
		n.run("machine-1", "machine", `{}`)

		caught := n.finished("caught-1", minik8sv1.WorkflowRunSucceeded)
		wfCheckStates(t, caught, "Slow:Task", "Late:Pass")
		var out struct {
			A    int               `json:"a"`
			Late map[string]string `json:"late"`
		}
		if err := json.Unmarshal(caught.Status.Output.Bytes(), &out); err != nil || out.A != 1 || out.Late["Error"] != "States.Timeout" {
			t.Errorf("caught: output %s, want a: 1 and late.Error States.Timeout", caught.Status.Output.Bytes())
		}
		if h := caught.Status.History[0]; h.Error != "States.Timeout" || h.Exited == nil ||
			h.Exited.Sub(h.Entered.Time) < time.Second || h.Exited.Sub(h.Entered.Time) > 5*time.Second {
			t.Errorf("caught: Slow %+v: want States.Timeout after about 1s", h)
		}

		uncaught := n.finished("uncaught-1", minik8sv1.WorkflowRunFailed)
		if uncaught.Status.Error != "States.Timeout" {
			t.Errorf("uncaught: error %q (%s), want States.Timeout", uncaught.Status.Error, uncaught.Status.Cause)
		}
		wfCheckStates(t, uncaught, "Slow:Task")

		machine := n.finished("machine-1", minik8sv1.WorkflowRunTimedOut)
		if machine.Status.Error != "States.Timeout" || !strings.Contains(machine.Status.Cause, "TimeoutSeconds") {
			t.Errorf("machine: error %q cause %q, want States.Timeout naming TimeoutSeconds", machine.Status.Error, machine.Status.Cause)
		}
		wfCheckStates(t, machine, "Slow:Task")
		if h := machine.Status.History[0]; h.Exited == nil || h.Error != "States.Timeout" || h.Exited.Sub(h.Entered.Time) < 2*time.Second {
			t.Errorf("machine: Slow %+v: want it closed with States.Timeout after the machine's 2s", h)
		}
		// Every call of slow ended early: two Task timeouts and the machine's.
		wfEventually(t, "slow's 3 calls cancelled", func() bool { return slow.cancelled.Load() == 3 })
	})

	t.Run("a workflow task's timeout bounds each attempt", func(t *testing.T) {
		t.Parallel()
		n := e.namespace(t, "wf-subtimeout")
		n.workflow("sleepy", `{"StartAt": "Nap", "States": {"Nap": {"Type": "Wait", "Seconds": 5, "End": true}}}`)
		n.workflow("impatient", `{"StartAt": "Sub", "States": {
			"Sub":  {"Type": "Task", "Resource": "workflow:sleepy", "TimeoutSeconds": 1, "End": true,
				"Retry": [{"ErrorEquals": ["States.Timeout"], "IntervalSeconds": 1, "MaxAttempts": 1}],
				"Catch": [{"ErrorEquals": ["States.Timeout"], "ResultPath": "$.late", "Next": "Done"}]},
			"Done": {"Type": "Pass", "End": true}}}`)
		n.run("impatient-1", "impatient", `{}`)

		run := n.finished("impatient-1", minik8sv1.WorkflowRunSucceeded)
		wfCheckStates(t, run, "Sub:Task", "Done:Pass")
		h := run.Status.History[0]
		if h.Error != "States.Timeout" || h.Attempts != 2 || len(h.Retries) != 1 || h.Exited == nil {
			t.Fatalf("Sub: %+v, want 2 attempts, both timed out", h)
		}
		if first := h.Retries[0].At.Sub(h.Entered.Time); first < time.Second {
			t.Errorf("first attempt timed out after %v, want 1s", first)
		}
		if second := h.Exited.Sub(h.Retries[0].At.Add(h.Retries[0].Delay.Duration)); second < time.Second {
			t.Errorf("second attempt timed out after %v, want 1s", second)
		}
		children := n.children("impatient-1")
		if len(children) != 2 {
			t.Fatalf("%d child runs, want 2 (an attempt each)", len(children))
		}
		for _, ch := range children {
			if ch.Status.Phase != minik8sv1.WorkflowRunAborted {
				t.Errorf("child %s: %s, want Aborted", ch.Name, ch.Status.Phase)
			}
		}
	})

	t.Run("deleting a run cancels its work", func(t *testing.T) {
		t.Parallel()
		n := e.namespace(t, "wf-delete")
		hang, hangBranch := &wfHang{d: 20 * time.Second}, &wfHang{d: 20 * time.Second}
		n.fn("hang", hang.fn)
		n.fn("hang-branch", hangBranch.fn)
		n.workflow("one", `{"StartAt": "Hang", "States": {"Hang": {"Type": "Task", "Resource": "function:hang", "End": true}}}`)
		n.workflow("fan", `{"StartAt": "Fan", "States": {"Fan": {"Type": "Parallel", "End": true, "Branches": [
			{"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "function:hang-branch", "End": true}}},
			{"StartAt": "B", "States": {"B": {"Type": "Task", "Resource": "function:hang-branch", "End": true}}}]}}}`)
		n.run("one-1", "one", `{}`)
		n.run("fan-1", "fan", `{}`)
		wfEventually(t, "the calls to start", func() bool { return hang.started.Load() == 1 && hangBranch.started.Load() == 2 })
		if got := len(n.children("fan-1")); got != 2 {
			t.Fatalf("fan-1 has %d children, want 2", got)
		}
		runs := e.dyn.Resource(wfmeta.WorkflowRunResource).Namespace(n.ns)
		for _, name := range []string{"one-1", "fan-1"} {
			if err := runs.Delete(ctxT(t), name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		wfEventually(t, "one-1's call cancelled", func() bool { return hang.cancelled.Load() == 1 })
		// The garbage collector deletes the branches; their calls end.
		wfEventually(t, "fan-1's children deleted", func() bool { return len(n.children("fan-1")) == 0 })
		wfEventually(t, "the branches' calls cancelled", func() bool { return hangBranch.cancelled.Load() == 2 })
	})

	t.Run("missing workflow and functions", func(t *testing.T) {
		t.Parallel()
		n := e.namespace(t, "wf-missing")
		n.run("orphan", "nope", `{}`)
		run := n.finished("orphan", minik8sv1.WorkflowRunFailed)
		if run.Status.Error != "WorkflowNotFound" || !strings.Contains(run.Status.Cause, `"nope"`) {
			t.Errorf("orphan: error %q cause %q, want WorkflowNotFound naming nope", run.Status.Error, run.Status.Cause)
		}

		n.workflow("haunted", `{"StartAt": "Boo", "States": {"Boo": {"Type": "Task", "Resource": "function:ghost", "End": true}}}`)
		wf := wfWaitReady(t, n, "haunted", metav1.ConditionFalse)
		cond := apimeta.FindStatusCondition(wf.Status.Conditions, engine.ConditionReady)
		if cond.Reason != "ResourceNotFound" || !strings.Contains(cond.Message, "function ghost") {
			t.Errorf("Ready: %s %s, want ResourceNotFound naming function ghost", cond.Reason, cond.Message)
		}
		if len(wf.Status.Resources) != 1 || wf.Status.Resources[0] != "function:ghost" {
			t.Errorf("resources %v, want [function:ghost]", wf.Status.Resources)
		}
		n.create("functions", "Function", &minik8sv1.Function{ObjectMeta: metav1.ObjectMeta{Name: "ghost"},
			Spec: minik8sv1.FunctionSpec{Runtime: "python3", Source: minik8sv1.FunctionSource{Inline: "def handle(e): return e"}}})
		wf = wfWaitReady(t, n, "haunted", metav1.ConditionTrue)
		if cond := apimeta.FindStatusCondition(wf.Status.Conditions, engine.ConditionReady); cond.Reason != "ResourcesFound" {
			t.Errorf("Ready: %s %s, want ResourcesFound", cond.Reason, cond.Message)
		}
	})

	t.Run("a failed branch aborts its sibling", func(t *testing.T) {
		t.Parallel()
		n := e.namespace(t, "wf-abort")
		hang := &wfHang{d: 20 * time.Second}
		n.fn("hang", hang.fn)
		n.fn("reject", func(ctx context.Context, _ json.RawMessage) (int, any) {
			// Fail once the sibling is in its call.
			for hang.started.Load() == 0 && ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
			return wfRaise("ValueError", "no good")
		})
		n.workflow("race", `{"StartAt": "Race", "States": {"Race": {"Type": "Parallel", "End": true, "Branches": [
			{"StartAt": "Bad",  "States": {"Bad":  {"Type": "Task", "Resource": "function:reject", "End": true}}},
			{"StartAt": "Hang", "States": {"Hang": {"Type": "Task", "Resource": "function:hang", "End": true}}}]}}}`)
		n.run("race-1", "race", `{}`)

		run := n.finished("race-1", minik8sv1.WorkflowRunFailed)
		if run.Status.Error != "ValueError" || run.Status.Cause != "HTTP 500: no good" {
			t.Errorf("error %q cause %q, want ValueError: HTTP 500: no good", run.Status.Error, run.Status.Cause)
		}
		wfCheckStates(t, run, "Race:Parallel")
		if h := run.Status.History[0]; h.Error != "ValueError" || h.Exited == nil {
			t.Errorf("Race: %+v, want closed with ValueError", h)
		}
		byBranch := map[string]minik8sv1.WorkflowRun{}
		for _, ch := range n.children("race-1") {
			byBranch[ch.Annotations[wfmeta.ParentStateAnnotation]] = ch
		}
		if ch := byBranch["Race/1/1/0"]; ch.Status.Phase != minik8sv1.WorkflowRunFailed || ch.Status.Error != "ValueError" {
			t.Errorf("failed branch: %s %s, want Failed ValueError", ch.Status.Phase, ch.Status.Error)
		}
		if ch := byBranch["Race/1/1/1"]; ch.Status.Phase != minik8sv1.WorkflowRunAborted || ch.Status.Error != engine.ErrAborted {
			t.Errorf("sibling: %s %s (%s), want Aborted %s", ch.Status.Phase, ch.Status.Error, ch.Status.Cause, engine.ErrAborted)
		}
		wfEventually(t, "the sibling's call cancelled", func() bool { return hang.cancelled.Load() == 1 })
	})
}

// wfWaitReady waits for the Workflow's Ready condition to have status.
func wfWaitReady(t *testing.T, n *wfNS, name string, status metav1.ConditionStatus) *minik8sv1.Workflow {
	t.Helper()
	var wf *minik8sv1.Workflow
	wfEventually(t, fmt.Sprintf("workflow %s Ready=%s", name, status), func() bool {
		u, err := n.e.dyn.Resource(wfmeta.WorkflowResource).Namespace(n.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		wf = wfFromUnstructured(t, u)
		return apimeta.IsStatusConditionPresentAndEqual(wf.Status.Conditions, engine.ConditionReady, status)
	})
	return wf
}

func wfFromUnstructured(t *testing.T, u *unstructured.Unstructured) *minik8sv1.Workflow {
	t.Helper()
	wf := &minik8sv1.Workflow{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, wf); err != nil {
		t.Fatal(err)
	}
	return wf
}

// TestWorkflowWaitSurvivesRestart stops the engine while a run waits in a
// Wait state and starts a new one: the run goes on from its status.
func TestWorkflowWaitSurvivesRestart(t *testing.T) {
	c := startClusterWith(t, withoutControllers("workflow", "workflowrun"))
	e := wfNewEngine(t, c, wfStartFunctions(t))
	stop := e.start(t)
	n := e.namespace(t, "wf-restart")
	n.fn("inc", func(_ context.Context, in json.RawMessage) (int, any) { return wfOK(wfNumber(in) + 1) })
	n.fn("double", func(_ context.Context, in json.RawMessage) (int, any) { return wfOK(wfNumber(in) * 2) })
	n.workflow("pause", `{"StartAt": "Inc", "States": {
		"Inc":    {"Type": "Task", "Resource": "function:inc", "Next": "Pause"},
		"Pause":  {"Type": "Wait", "Seconds": 2, "Next": "Double"},
		"Double": {"Type": "Task", "Resource": "function:double", "End": true}}}`)
	n.run("pause-1", "pause", `1`)

	n.wait("pause-1", "it to wait in Pause", func(r *minik8sv1.WorkflowRun) bool {
		return r.Status.CurrentState == "Pause" && r.Status.WaitUntil != nil
	})
	stop()
	if run, err := n.get(ctxT(t), "pause-1"); err != nil || run.Status.CurrentState != "Pause" {
		t.Fatalf("after the engine stopped: %v, %s", err, wfDump(run))
	}
	e.start(t)

	run := n.finished("pause-1", minik8sv1.WorkflowRunSucceeded)
	wfEqualJSON(t, "output", run.Status.Output, `4`)
	wfCheckStates(t, run, "Inc:Task", "Pause:Wait", "Double:Task")
	if h := run.Status.History[1]; h.Exited == nil || h.Exited.Sub(h.Entered.Time) < 2*time.Second {
		t.Errorf("Pause entered %v, exited %v: want at least 2s", h.Entered, h.Exited)
	}
}
