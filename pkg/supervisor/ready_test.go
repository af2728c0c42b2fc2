package supervisor

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// WaitHTTP returns once the endpoint answers 200, and with ctx's error
// when it never does.
func TestWaitHTTP(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	if err := WaitHTTP(t.Context(), srv.URL, time.Millisecond); err != nil || calls.Load() != 3 {
		t.Fatalf("WaitHTTP = %v after %d calls, want nil after 3", err, calls.Load())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	never := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) }))
	defer never.Close()
	if err := WaitHTTP(ctx, never.URL, time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitHTTP on a server that never gets ready = %v, want the deadline", err)
	}
}
