package apiserver

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// DefaultRequestTimeout bounds every request that is not long-running, as
// Kubernetes' --request-timeout does.
const DefaultRequestTimeout = 60 * time.Second

// longRunningSubresources stream for as long as the client wants, like
// watches: no request deadline applies to them.
var longRunningSubresources = map[string]bool{"log": true, "exec": true, "attach": true, "portforward": true, "proxy": true}

func isLongRunning(info requestInfo) bool {
	return info.Verb == "watch" || longRunningSubresources[info.Subresource]
}

// withDeadline gives every request that is not long-running a deadline:
// the server's request timeout, or the shorter ?timeout= the client asks
// for. A request still running at its deadline is answered 504 Timeout
// while its handler, whose context has ended, winds down on its own; one
// that had begun its answer by then is cut off.
func (s *Server) withDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isLongRunning(parseRequestInfo(r)) {
			next.ServeHTTP(w, r)
			return
		}
		timeout := s.cfg.RequestTimeout
		if v := r.URL.Query().Get("timeout"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				writeError(w, apierrors.NewBadRequest(fmt.Sprintf("invalid timeout specified in the request URL - %v", err)))
				return
			}
			// 0 asks for no timeout of the client's own: the server's applies.
			if d > 0 && d < timeout {
				timeout = d
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		tw := &timeoutWriter{w: w, header: w.Header().Clone()}
		finished := make(chan any, 1)
		go func() {
			defer func() { finished <- recover() }()
			next.ServeHTTP(tw, r.WithContext(ctx))
		}()
		select {
		case p := <-finished:
			if p != nil {
				panic(p) // only http.ErrAbortHandler gets past recoverPanics
			}
		case <-ctx.Done():
			tw.timeout()
		}
	})
}

// timeoutWriter passes a handler's answer through until the request's
// deadline, and drops what comes after. The handler writes its headers
// into its own map, so the 504 written at the deadline shares nothing
// with a handler that may still be running.
type timeoutWriter struct {
	w      http.ResponseWriter
	header http.Header

	mu          sync.Mutex
	wroteHeader bool
	timedOut    bool
}

func (tw *timeoutWriter) Header() http.Header { return tw.header }

func (tw *timeoutWriter) WriteHeader(code int) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.writeHeaderLocked(code)
}

func (tw *timeoutWriter) writeHeaderLocked(code int) {
	if tw.timedOut || tw.wroteHeader {
		return
	}
	tw.wroteHeader = true
	h := tw.w.Header()
	clear(h)
	maps.Copy(h, tw.header)
	tw.w.WriteHeader(code)
}

func (tw *timeoutWriter) Write(p []byte) (int, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut {
		return 0, http.ErrHandlerTimeout
	}
	tw.writeHeaderLocked(http.StatusOK)
	return tw.w.Write(p)
}

func (tw *timeoutWriter) Flush() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut {
		return
	}
	tw.writeHeaderLocked(http.StatusOK)
	if f, ok := tw.w.(http.Flusher); ok {
		f.Flush()
	}
}

// timeout answers 504 if the handler has not begun its answer, and
// otherwise aborts the connection: a half-written answer must not pass
// for a whole one.
func (tw *timeoutWriter) timeout() {
	tw.mu.Lock()
	wrote := tw.wroteHeader
	tw.timedOut = true
	if !wrote {
		writeError(tw.w, requestTimeout())
	}
	tw.mu.Unlock()
	if wrote {
		panic(http.ErrAbortHandler)
	}
}
