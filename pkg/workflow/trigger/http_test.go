package trigger

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/invoke"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

func newHandler(t *testing.T, f *fixture) (*HTTPHandler, *record.FakeRecorder) {
	t.Helper()
	rec := record.NewFakeRecorder(100)
	h, err := NewHTTPHandler(HTTPConfig{Dynamic: f.dyn, Invoker: f.inv, Logger: quiet, Clock: f.clk, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	return h, rec
}

func TestHTTPTrigger(t *testing.T) {
	tests := []struct {
		name       string
		trigger    func() *minik8sv1.Trigger
		method     string
		path       string
		body       string
		resp       *invoke.Response
		wantCode   int
		wantReason string
		wantAllow  string
		wantBody   string // a function's answer, relayed
		wantInput  string // the run's input
		wantCall   string // the function's body
		wantResult string
	}{
		{name: "no such trigger", path: "/trigger/default/nope", method: "POST", wantCode: 404, wantReason: "NotFound"},
		{name: "no http source", method: "POST", wantCode: 404, wantReason: "NotFound",
			trigger: func() *minik8sv1.Trigger {
				tr := newTrigger("hook", false)
				tr.Spec.Schedule = &minik8sv1.ScheduleSource{Schedule: "@daily"}
				return tr
			}},
		{name: "method not allowed", method: "GET", wantCode: 405, wantReason: "MethodNotAllowed", wantAllow: "POST",
			trigger: httpTrigger(false, nil)},
		{name: "suspended", method: "POST", wantCode: 409, wantReason: "Suspended",
			trigger: func() *minik8sv1.Trigger {
				tr := httpTrigger(false, nil)()
				tr.Spec.Suspend = ptr(true)
				return tr
			}},
		{name: "body not JSON", method: "POST", body: "not json", wantCode: 400, wantReason: "BadRequest", trigger: httpTrigger(false, nil)},
		{name: "workflow with a body", method: "PUT", body: `{"a": 1}`, wantCode: 202, wantInput: `{"a":1}`, wantResult: ResultRunning,
			trigger: httpTrigger(false, []string{"POST", "PUT"})},
		{name: "workflow without a body takes the payload", method: "POST", wantCode: 202, wantInput: `{"hello":"world"}`, wantResult: ResultRunning,
			trigger: httpTrigger(false, nil)},
		{name: "function relayed", method: "POST", body: `{"b":2}`, wantCode: 201, wantBody: `{"made":true}`, wantCall: `{"b":2}`,
			resp:       &invoke.Response{Status: 201, Header: map[string][]string{"Content-Type": {"application/json"}}, Body: []byte(`{"made":true}`)},
			wantResult: ResultSucceeded, trigger: httpTrigger(true, nil)},
		{name: "function error relayed", method: "POST", wantCode: 500, wantBody: `{"errorMessage":"boom"}`, wantCall: `{"hello":"world"}`,
			resp:       &invoke.Response{Status: 500, Body: []byte(`{"errorMessage":"boom"}`)},
			wantResult: "Failed (HTTP 500: boom)", trigger: httpTrigger(true, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.inv.resp = tc.resp
			h, rec := newHandler(t, f)
			if tc.trigger != nil {
				f.create(wfmeta.TriggerResource, tc.trigger())
			}
			path := tc.path
			if path == "" {
				path = "/trigger/default/hook"
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(tc.method, path, strings.NewReader(tc.body)))
			if w.Code != tc.wantCode {
				t.Fatalf("code = %d (%s), want %d", w.Code, w.Body, tc.wantCode)
			}
			if tc.wantReason != "" {
				var e struct{ Error, Reason string }
				if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Reason != tc.wantReason || e.Error == "" {
					t.Errorf("body = %s, want reason %s", w.Body, tc.wantReason)
				}
			}
			if got := w.Header().Get("Allow"); got != tc.wantAllow {
				t.Errorf("Allow = %q, want %q", got, tc.wantAllow)
			}
			if tc.wantBody != "" && strings.TrimSpace(w.Body.String()) != tc.wantBody {
				t.Errorf("body = %s, want %s", w.Body, tc.wantBody)
			}
			runs := f.runs()
			if tc.wantInput != "" {
				var got struct{ Run, Namespace string }
				_ = json.Unmarshal(w.Body.Bytes(), &got)
				if len(runs) != 1 || runs[0].Name != got.Run || got.Namespace != "default" {
					t.Fatalf("answer %s, runs %v", w.Body, runs)
				}
				if string(runs[0].Spec.Input.Bytes()) != tc.wantInput || runs[0].Labels[wfmeta.TriggerLabel] != "hook" ||
					metav1.GetControllerOf(runs[0]) == nil {
					t.Errorf("run = %+v", runs[0])
				}
				if loc := w.Header().Get("Location"); !strings.HasSuffix(loc, "/workflowruns/"+got.Run) {
					t.Errorf("Location = %q", loc)
				}
			} else if len(runs) != 0 {
				t.Errorf("%d runs, want none", len(runs))
			}
			calls := f.inv.Calls()
			if tc.wantCall != "" {
				if len(calls) != 1 || calls[0].body != tc.wantCall || calls[0].name != "fn" {
					t.Errorf("calls = %+v, want one with %s", calls, tc.wantCall)
				}
			} else if len(calls) != 0 {
				t.Errorf("calls = %+v, want none", calls)
			}
			if tc.wantResult != "" {
				st := f.trigger("hook").Status
				if st.Fired != 1 || st.LastResult != tc.wantResult || st.LastFireTime == nil {
					t.Errorf("status = %+v, want lastResult %q", st, tc.wantResult)
				}
				if len(rec.Events) != 1 {
					t.Errorf("%d events, want 1", len(rec.Events))
				}
			}
		})
	}
}

func httpTrigger(fn bool, methods []string) func() *minik8sv1.Trigger {
	return func() *minik8sv1.Trigger {
		tr := newTrigger("hook", fn)
		tr.Spec.HTTP = &minik8sv1.HTTPSource{Methods: methods}
		return tr
	}
}

func TestHTTPWorkflow(t *testing.T) {
	tests := []struct {
		name       string
		path       string
		body       string
		phase      string // what the fake engine makes of the run ("": nothing)
		wantCode   int
		wantBody   string
		wantReason string
		wantInput  string
	}{
		{name: "succeeded", body: `{"x": 1}`, phase: minik8sv1.WorkflowRunSucceeded, wantCode: 200, wantBody: `{"out":1}`, wantInput: `{"x":1}`},
		{name: "default input", phase: minik8sv1.WorkflowRunSucceeded, wantCode: 200, wantBody: `{"out":1}`, wantInput: `{}`},
		{name: "failed", phase: minik8sv1.WorkflowRunFailed, wantCode: 500, wantBody: `"error":"States.TaskFailed"`, wantInput: `{}`},
		{name: "timed out", phase: minik8sv1.WorkflowRunTimedOut, wantCode: 504, wantBody: `"cause":"it broke"`, wantInput: `{}`},
		{name: "wait times out", path: "/workflow/default/wf?timeout=50ms", wantCode: 504, wantReason: "WaitTimeout", wantInput: `{}`},
		{name: "no such workflow", path: "/workflow/default/nope", wantCode: 404, wantReason: "NotFound"},
		{name: "bad timeout", path: "/workflow/default/wf?timeout=soon", wantCode: 400, wantReason: "BadRequest"},
		{name: "bad body", body: "{", wantCode: 400, wantReason: "BadRequest"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			h, err := NewHTTPHandler(HTTPConfig{Dynamic: f.dyn, Invoker: f.inv, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			if tc.phase != "" {
				go engine(f, tc.phase)
			}
			path := tc.path
			if path == "" {
				path = "/workflow/default/wf"
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("POST", path, strings.NewReader(tc.body)))
			if w.Code != tc.wantCode {
				t.Fatalf("code = %d (%s), want %d", w.Code, w.Body, tc.wantCode)
			}
			if tc.wantBody != "" && !strings.Contains(w.Body.String(), tc.wantBody) {
				t.Errorf("body = %s, want %s", w.Body, tc.wantBody)
			}
			if tc.wantReason != "" && !strings.Contains(w.Body.String(), `"reason":"`+tc.wantReason+`"`) {
				t.Errorf("body = %s, want reason %s", w.Body, tc.wantReason)
			}
			runs := f.runs()
			if tc.wantInput == "" {
				if len(runs) != 0 {
					t.Errorf("%d runs, want none", len(runs))
				}
				return
			}
			if len(runs) != 1 || string(runs[0].Spec.Input.Bytes()) != tc.wantInput || runs[0].Labels[wfmeta.WorkflowLabel] != "wf" {
				t.Fatalf("runs = %+v, want one with input %s", runs, tc.wantInput)
			}
			if got := w.Header().Get(RunHeader); got != runs[0].Name {
				t.Errorf("%s = %q, want %q", RunHeader, got, runs[0].Name)
			}
			if tc.phase != "" && tc.phase != minik8sv1.WorkflowRunSucceeded && !strings.Contains(w.Body.String(), `"run":"`+runs[0].Name+`"`) {
				t.Errorf("body = %s, want the run named", w.Body)
			}
		})
	}
}

// engine ends the first run that appears in phase, as the workflow
// engine would.
func engine(f *fixture, phase string) {
	for f.ctx.Err() == nil {
		l, err := f.dyn.Resource(wfmeta.WorkflowRunResource).Namespace("default").List(f.ctx, metav1.ListOptions{})
		if err == nil && len(l.Items) > 0 {
			u := l.Items[0].DeepCopy()
			_ = unstructured.SetNestedField(u.Object, phase, "status", "phase")
			if phase == minik8sv1.WorkflowRunSucceeded {
				_ = unstructured.SetNestedMap(u.Object, map[string]any{"out": int64(1)}, "status", "output")
			} else {
				_ = unstructured.SetNestedField(u.Object, "States.TaskFailed", "status", "error")
				_ = unstructured.SetNestedField(u.Object, "it broke", "status", "cause")
			}
			if _, err := f.dyn.Resource(wfmeta.WorkflowRunResource).Namespace("default").UpdateStatus(f.ctx, u, metav1.UpdateOptions{}); err == nil {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}
