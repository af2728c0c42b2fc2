package engine

import (
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/asl"
)

// toExecution reads the execution a run's status records.
func toExecution(st *minik8sv1.WorkflowRunStatus) *asl.Execution {
	x := &asl.Execution{
		Status:      st.Phase,
		State:       st.CurrentState,
		StateInput:  raw(st.StateInput),
		Attempt:     int(st.Attempt),
		Output:      raw(st.Output),
		Error:       st.Error,
		Cause:       st.Cause,
		Transitions: int(st.Transitions),
	}
	if x.State != "" && x.StateInput == nil {
		// A null input is stored as none (minik8sv1.JSON drops null).
		x.StateInput = json.RawMessage("null")
	}
	for _, n := range st.RetryCounts {
		x.RetryCounts = append(x.RetryCounts, int(n))
	}
	if st.WaitUntil != nil {
		t := st.WaitUntil.Time
		x.WaitUntil = &t
	}
	if w := st.Work; w != nil {
		x.Work = &asl.Work{Kind: w.Kind, Resource: w.Resource, Input: raw(w.Input), MaxConcurrency: int(w.MaxConcurrency)}
		if w.Timeout != nil {
			x.Work.Timeout = w.Timeout.Duration
		}
		if w.Heartbeat != nil {
			x.Work.Heartbeat = w.Heartbeat.Duration
		}
		for _, c := range w.Children {
			x.Work.Children = append(x.Work.Children, asl.Child{Definition: raw(c.Definition), Input: raw(c.Input)})
		}
	}
	for _, h := range st.History {
		e := asl.Event{Name: h.Name, Type: h.Type, Input: raw(h.Input), Output: raw(h.Output), Error: h.Error, Cause: h.Cause,
			Attempts: int(h.Attempts), Entered: h.Entered.Time, Next: h.Next}
		if h.Exited != nil {
			t := h.Exited.Time
			e.Exited = &t
		}
		for _, r := range h.Retries {
			e.Retries = append(e.Retries, asl.Retry{At: r.At.Time, Error: r.Error, Cause: r.Cause, Delay: r.Delay.Duration})
		}
		x.History = append(x.History, e)
	}
	return x
}

// recordExecution writes x into a run's status (phase, output, position,
// work, history); the run's times and definition are the caller's.
func recordExecution(x *asl.Execution, st *minik8sv1.WorkflowRunStatus) {
	st.Phase = x.Status
	st.CurrentState = x.State
	st.StateInput = minik8sv1.NewJSON(x.StateInput)
	st.Attempt = int32(x.Attempt)
	st.Output = minik8sv1.NewJSON(x.Output)
	st.Error, st.Cause = x.Error, x.Cause
	st.Transitions = int64(x.Transitions)
	st.RetryCounts = nil
	for _, n := range x.RetryCounts {
		st.RetryCounts = append(st.RetryCounts, int32(n))
	}
	st.WaitUntil = microPtr(x.WaitUntil)
	st.Work = nil
	if w := x.Work; w != nil {
		st.Work = &minik8sv1.WorkflowRunWork{Kind: w.Kind, Resource: w.Resource, Input: minik8sv1.NewJSON(w.Input),
			MaxConcurrency: int32(w.MaxConcurrency), Timeout: durationPtr(w.Timeout), Heartbeat: durationPtr(w.Heartbeat)}
		for _, c := range w.Children {
			st.Work.Children = append(st.Work.Children, minik8sv1.WorkflowRunChild{Definition: minik8sv1.NewJSON(c.Definition), Input: minik8sv1.NewJSON(c.Input)})
		}
	}
	st.History = make([]minik8sv1.WorkflowRunState, 0, len(x.History))
	for _, e := range x.History {
		h := minik8sv1.WorkflowRunState{Name: e.Name, Type: e.Type, Input: minik8sv1.NewJSON(e.Input), Output: minik8sv1.NewJSON(e.Output),
			Error: e.Error, Cause: e.Cause, Attempts: int32(e.Attempts), Entered: metav1.NewMicroTime(e.Entered), Exited: microPtr(e.Exited), Next: e.Next}
		for _, r := range e.Retries {
			h.Retries = append(h.Retries, minik8sv1.WorkflowRunRetry{At: metav1.NewMicroTime(r.At), Error: r.Error, Cause: r.Cause,
				Delay: metav1.Duration{Duration: r.Delay}})
		}
		st.History = append(st.History, h)
	}
}

func raw(j *minik8sv1.JSON) json.RawMessage {
	if j == nil || len(j.Raw) == 0 {
		return nil
	}
	return json.RawMessage(j.Raw)
}

func microPtr(t *time.Time) *metav1.MicroTime {
	if t == nil {
		return nil
	}
	m := metav1.NewMicroTime(*t)
	return &m
}

func durationPtr(d time.Duration) *metav1.Duration {
	if d == 0 {
		return nil
	}
	return &metav1.Duration{Duration: d}
}
