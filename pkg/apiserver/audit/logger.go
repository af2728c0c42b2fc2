package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// Annotation keys of the authorization decision, as Kubernetes writes them.
const (
	AnnDecision = "authorization.k8s.io/decision"
	AnnReason   = "authorization.k8s.io/reason"
)

// captureLimit bounds the request and response bodies kept for the
// Request and RequestResponse levels.
const captureLimit = 64 << 10

// Logger writes Events to a file.
type Logger struct {
	policy   *Policy
	path     string
	maxBytes int64
	now      func() time.Time

	mu   sync.Mutex
	f    *os.File
	size int64
}

// Config is where and what a Logger writes.
type Config struct {
	// Path is the log file (required); MaxSizeMB rotates it to Path+".1"
	// past that size (default 100).
	Path      string
	MaxSizeMB int
	// Policy decides the level of each request (default DefaultPolicy).
	Policy *Policy
	Now    func() time.Time
}

// NewLogger opens (appends to) the log.
func NewLogger(cfg Config) (*Logger, error) {
	if cfg.Path == "" {
		return nil, fmt.Errorf("audit: a log path is required")
	}
	if cfg.Policy == nil {
		cfg.Policy = DefaultPolicy()
	}
	if cfg.MaxSizeMB <= 0 {
		cfg.MaxSizeMB = 100
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	l := &Logger{policy: cfg.Policy, path: cfg.Path, maxBytes: int64(cfg.MaxSizeMB) << 20, now: cfg.Now}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Logger) open() error {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return err
	}
	l.f, l.size = f, st.Size()
	return nil
}

// Close closes the file.
func (l *Logger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// write appends one line, rotating first when the file is full.
func (l *Logger) write(ev *Event) {
	line, err := json.Marshal(ev)
	if err != nil {
		return
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return
	}
	if l.size+int64(len(line)) > l.maxBytes && l.size > 0 {
		_ = l.f.Close()
		_ = os.Rename(l.path, l.path+".1")
		if err := l.open(); err != nil {
			l.f = nil
			return
		}
	}
	n, _ := l.f.Write(line)
	l.size += int64(n)
}

// record is a request's Event while it is served.
type record struct {
	mu     sync.Mutex
	ev     Event
	groups []string
	req    Request
	known  bool
}

type ctxKey struct{}

// Describe sets who made the request and what it was about; the
// authorization layer calls it once it knows.
func Describe(ctx context.Context, user, uid string, groups []string, r Request, ref *ObjectReference) {
	rec, ok := ctx.Value(ctxKey{}).(*record)
	if !ok {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.ev.User = authenticationv1.UserInfo{Username: user, UID: uid, Groups: groups}
	rec.ev.ObjectRef = ref
	if r.Verb != "" {
		rec.ev.Verb = r.Verb
	}
	r.User, r.Groups = user, groups
	rec.req, rec.known = r, true
}

// Annotate adds an annotation to the request's Event.
func Annotate(ctx context.Context, key, value string) {
	rec, ok := ctx.Value(ctxKey{}).(*record)
	if !ok {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.ev.Annotations == nil {
		rec.ev.Annotations = map[string]string{}
	}
	rec.ev.Annotations[key] = value
}

// Middleware logs each request that next serves, once it is served.
// Requests nobody described (no user: 401s, public paths) are matched
// as the anonymous user.
func (l *Logger) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &record{ev: Event{
			TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: "audit.k8s.io/v1"},
			AuditID:  types.UID(r.Header.Get("Audit-ID")), RequestURI: r.URL.RequestURI(), Verb: httpVerb(r.Method),
			UserAgent: r.UserAgent(), SourceIPs: sourceIPs(r), RequestReceivedTimestamp: metav1.NewMicroTime(l.now()),
		}}
		if rec.ev.AuditID == "" {
			rec.ev.AuditID = uuid.NewUUID()
		}
		w.Header().Set("Audit-Id", string(rec.ev.AuditID))
		var body *capture
		if r.Body != nil && (r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch) {
			body = &capture{}
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.TeeReader(r.Body, body), r.Body}
		}
		rw := &responseRecorder{ResponseWriter: w, code: http.StatusOK}
		stage := StageResponseComplete
		defer func() {
			if v := recover(); v != nil {
				stage = StagePanic
				rw.code = http.StatusInternalServerError
				l.finish(rec, rw, body, stage)
				panic(v)
			}
			l.finish(rec, rw, body, stage)
		}()
		next.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), ctxKey{}, rec)))
	})
}

func (l *Logger) finish(rec *record, rw *responseRecorder, body *capture, stage Stage) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	req := rec.req
	if !rec.known {
		req = Request{User: "system:anonymous", Groups: []string{"system:unauthenticated"}, Verb: rec.ev.Verb, Path: rec.ev.RequestURI}
		rec.ev.User = authenticationv1.UserInfo{Username: "system:anonymous", Groups: req.Groups}
	}
	level := l.policy.LevelOf(req)
	if level == LevelNone {
		return
	}
	ev := rec.ev
	ev.Level, ev.Stage, ev.StageTimestamp = level, stage, metav1.NewMicroTime(l.now())
	ev.ResponseStatus = &metav1.Status{Code: int32(rw.code)}
	if rw.code >= 400 {
		var st metav1.Status
		if json.Unmarshal(rw.body.Bytes(), &st) == nil && st.Kind == "Status" {
			ev.ResponseStatus = &metav1.Status{Code: int32(rw.code), Status: st.Status, Reason: st.Reason, Message: st.Message}
		}
	}
	if level.atLeast(LevelRequest) && body != nil && !body.over && body.Len() > 0 {
		ev.RequestObject = &runtime.Unknown{Raw: json.RawMessage(body.Bytes()), ContentType: runtime.ContentTypeJSON}
		if !json.Valid(body.Bytes()) {
			ev.RequestObject = nil
		}
	}
	if level.atLeast(LevelRequestResponse) && !rw.over && rw.body.Len() > 0 && json.Valid(rw.body.Bytes()) {
		ev.ResponseObject = &runtime.Unknown{Raw: rw.body.Bytes(), ContentType: runtime.ContentTypeJSON}
	}
	l.write(&ev)
}

// httpVerb is the verb of a request nobody described: the lower-cased
// method.
func httpVerb(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return method
}

func sourceIPs(r *http.Request) []string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if host == "" {
		return nil
	}
	return []string{host}
}

// capture keeps the first captureLimit bytes written to it.
type capture struct {
	bytes.Buffer
	over bool
}

func (c *capture) Write(p []byte) (int, error) {
	if c.Len()+len(p) > captureLimit {
		c.over = true
		return len(p), nil
	}
	return c.Buffer.Write(p)
}

// responseRecorder notes the status code and the first bytes of the
// body, passing everything on (flushes and hijacks too: watches and
// streams).
type responseRecorder struct {
	http.ResponseWriter
	code  int
	wrote bool
	body  capture
	over  bool
}

func (w *responseRecorder) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseRecorder) Write(p []byte) (int, error) {
	w.wrote = true
	if !w.over {
		_, _ = w.body.Write(p)
		w.over = w.body.over
	}
	return w.ResponseWriter.Write(p)
}

func (w *responseRecorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *responseRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("audit: the response cannot be hijacked")
	}
	return h.Hijack()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *responseRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
