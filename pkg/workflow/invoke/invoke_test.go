package invoke

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestOutcome: how an answer becomes a Task's output or its error.
func TestOutcome(t *testing.T) {
	tests := []struct {
		name            string
		status          int
		body            string
		output          string
		errName, inCaus string
	}{
		{"json output", 200, `{"x": 1}`, `{"x": 1}`, "", ""},
		{"empty body is null", 204, ``, `null`, "", ""},
		{"plain text is a string", 200, `hello`, `"hello"`, "", ""},
		{"our runtime's exception", 500, `{"error": "ValueError: bad", "type": "ValueError"}`, "", "ValueError", "ValueError: bad"},
		{"lambda style", 500, `{"errorType": "CustomError", "errorMessage": "boom"}`, "", "CustomError", "boom"},
		{"500 without a name", 500, `oops`, "", ErrTaskFailed, "oops"},
		{"router timeout", 504, `{"error": "function timed out after 60s", "type": "Timeout"}`, "", ErrTimeout, "timed out"},
		{"not found", 404, `{"error": "function default/x not found", "reason": "NotFound"}`, "", ErrTaskFailed, "not found"},
		{"a 400 with a type is still TaskFailed", 400, `{"error": "request body is not JSON", "type": "BadRequest"}`, "", ErrTaskFailed, "not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, f := Outcome(&Response{Status: tt.status, Body: []byte(tt.body)})
			if tt.errName == "" {
				if f != nil || string(out) != tt.output {
					t.Fatalf("output %s, failure %v; want %s", out, f, tt.output)
				}
				return
			}
			if f == nil || f.Name != tt.errName || !strings.Contains(f.Cause, tt.inCaus) {
				t.Fatalf("failure %+v, want %s with %q in the cause", f, tt.errName, tt.inCaus)
			}
		})
	}
}

// TestRouterInvoke posts the body to /function/<ns>/<name> at the base.
func TestRouterInvoke(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/function/ns/fn" || r.Header.Get("X-Test") != "1" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	r := &Router{Base: srv.URL}
	resp, err := r.Invoke(context.Background(), "ns", "fn", []byte(`{"a":1}`), http.Header{"X-Test": {"1"}})
	if err != nil || resp.Status != 200 || string(resp.Body) != `{"a":1}` {
		t.Fatalf("invoke: %+v %v", resp, err)
	}
	if _, err := (&Router{}).Invoke(context.Background(), "ns", "fn", nil, nil); err != ErrNoRouter {
		t.Fatalf("no base and no client: %v, want ErrNoRouter", err)
	}
}
