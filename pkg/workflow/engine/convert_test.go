package engine

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/asl"
)

// throughAPI is st as a reader gets it back from the apiserver: encoded
// as JSON and decoded again.
func throughAPI(t *testing.T, st *minik8sv1.WorkflowRunStatus) *minik8sv1.WorkflowRunStatus {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	out := &minik8sv1.WorkflowRunStatus{}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// utc puts x's times in UTC: the API decodes them in the local zone.
func utc(x *asl.Execution) *asl.Execution {
	if x.WaitUntil != nil {
		w := x.WaitUntil.UTC()
		x.WaitUntil = &w
	}
	for i := range x.History {
		e := &x.History[i]
		e.Entered = e.Entered.UTC()
		if e.Exited != nil {
			t := e.Exited.UTC()
			e.Exited = &t
		}
		for j := range e.Retries {
			e.Retries[j].At = e.Retries[j].At.UTC()
		}
	}
	return x
}

func TestExecutionRoundTrip(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 123456000, time.UTC)
	at := func(d time.Duration) *time.Time { v := t0.Add(d); return &v }
	tests := []struct {
		name string
		x    *asl.Execution
		// want is x as read back, when it differs.
		want *asl.Execution
	}{{
		name: "a task being retried",
		x: &asl.Execution{Status: asl.StatusRunning, State: "Flaky", StateInput: json.RawMessage(`{"a":[1,2]}`),
			Attempt: 3, RetryCounts: []int{0, 2}, WaitUntil: at(3 * time.Second), Transitions: 2,
			History: []asl.Event{
				{Name: "Start", Type: "Pass", Input: json.RawMessage(`{}`), Output: json.RawMessage(`{"a":[1,2]}`),
					Entered: t0, Exited: at(time.Millisecond), Next: "Flaky"},
				{Name: "Flaky", Type: "Task", Input: json.RawMessage(`{"a":[1,2]}`), Attempts: 3, Entered: *at(time.Millisecond),
					Retries: []asl.Retry{{At: *at(time.Second), Error: "RuntimeError", Cause: "boom", Delay: time.Second},
						{At: *at(2 * time.Second), Error: "RuntimeError", Delay: 1500 * time.Millisecond}}},
			}},
	}, {
		name: "a map waiting for its items",
		x: &asl.Execution{Status: asl.StatusRunning, State: "Squares", StateInput: json.RawMessage(`[1,2]`), Attempt: 1, Transitions: 1,
			Work: &asl.Work{Kind: asl.WorkMap, MaxConcurrency: 2, Children: []asl.Child{
				{Definition: json.RawMessage(`{"StartAt":"S","States":{"S":{"Type":"Succeed"}}}`), Input: json.RawMessage(`1`)},
				{Definition: json.RawMessage(`{"StartAt":"S","States":{"S":{"Type":"Succeed"}}}`), Input: json.RawMessage(`2`)}}},
			History: []asl.Event{{Name: "Squares", Type: "Map", Input: json.RawMessage(`[1,2]`), Entered: t0}}},
	}, {
		name: "a task calling a function",
		x: &asl.Execution{Status: asl.StatusRunning, State: "Call", StateInput: json.RawMessage(`"s"`), Attempt: 1, Transitions: 1,
			Work:    &asl.Work{Kind: asl.WorkTask, Resource: "function:f", Input: json.RawMessage(`{"x":"s"}`), Timeout: 5 * time.Second, Heartbeat: time.Second},
			History: []asl.Event{{Name: "Call", Type: "Task", Input: json.RawMessage(`"s"`), Entered: t0}}},
	}, {
		name: "a state whose input is null",
		x: &asl.Execution{Status: asl.StatusRunning, State: "Next", StateInput: json.RawMessage(`null`), Attempt: 1, Transitions: 2,
			Work:    &asl.Work{Kind: asl.WorkTask, Resource: "function:f", Input: json.RawMessage(`null`)},
			History: []asl.Event{{Name: "Next", Type: "Task", Input: json.RawMessage(`null`), Entered: t0}}},
		// null is stored as nothing; the state's input reads back as null.
		want: &asl.Execution{Status: asl.StatusRunning, State: "Next", StateInput: json.RawMessage(`null`), Attempt: 1, Transitions: 2,
			Work:    &asl.Work{Kind: asl.WorkTask, Resource: "function:f"},
			History: []asl.Event{{Name: "Next", Type: "Task", Entered: t0}}},
	}, {
		name: "failed",
		x: &asl.Execution{Status: asl.StatusFailed, Error: "TooSmall", Cause: "n must be more than 10", Transitions: 1,
			History: []asl.Event{{Name: "Small", Type: "Fail", Input: json.RawMessage(`{"n":3}`), Error: "TooSmall", Cause: "n must be more than 10",
				Entered: t0, Exited: at(0)}}},
	}, {
		name: "succeeded",
		x: &asl.Execution{Status: asl.StatusSucceeded, Output: json.RawMessage(`{"n":9}`), Transitions: 1,
			History: []asl.Event{{Name: "Done", Type: "Succeed", Input: json.RawMessage(`{"n":9}`), Output: json.RawMessage(`{"n":9}`),
				Entered: t0, Exited: at(0)}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &minik8sv1.WorkflowRunStatus{}
			recordExecution(tt.x, st)
			if st.Phase != tt.x.Status || st.CurrentState != tt.x.State {
				t.Errorf("status phase %q state %q, want %q %q", st.Phase, st.CurrentState, tt.x.Status, tt.x.State)
			}
			got := utc(toExecution(throughAPI(t, st)))
			want := tt.want
			if want == nil {
				want = tt.x
			}
			if !reflect.DeepEqual(got, want) {
				g, _ := json.MarshalIndent(got, "", " ")
				w, _ := json.MarshalIndent(want, "", " ")
				t.Errorf("read back:\n%s\nwant:\n%s", g, w)
			}
		})
	}
}
