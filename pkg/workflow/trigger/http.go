package trigger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/invoke"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// Defaults of HTTPConfig.
const (
	DefaultWaitTimeout = 5 * time.Minute
	DefaultMaxBody     = 6 << 20
)

// HTTPConfig configures the HTTP entry points.
type HTTPConfig struct {
	// Dynamic reads Triggers and Workflows, creates and watches
	// WorkflowRuns and writes Trigger status (required).
	Dynamic dynamic.Interface
	// Invoker calls the functions HTTP triggers target (required).
	Invoker invoke.Invoker
	// Recorder records the "Fired" Events on Triggers (nil: none).
	Recorder record.EventRecorder
	// Logger (default slog.Default()) and Clock (default the real one).
	Logger *slog.Logger
	Clock  clock.Clock
	// DefaultTimeout is how long /workflow waits without ?timeout (default 5m).
	DefaultTimeout time.Duration
	// MaxBody bounds a request's body (default 6 MiB, a function's limit).
	MaxBody int64
}

// HTTPHandler serves /trigger/<namespace>/<name> (HTTP triggers) and
// /workflow/<namespace>/<name> (synchronous runs).
type HTTPHandler struct {
	cfg HTTPConfig
	log *slog.Logger
	clk clock.Clock
}

var _ http.Handler = (*HTTPHandler)(nil)

// NewHTTPHandler validates cfg and fills its defaults.
func NewHTTPHandler(cfg HTTPConfig) (*HTTPHandler, error) {
	if cfg.Dynamic == nil || cfg.Invoker == nil {
		return nil, errors.New("trigger http handler: a dynamic client and an invoker are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = DefaultWaitTimeout
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	return &HTTPHandler{cfg: cfg, log: cfg.Logger, clk: cfg.Clock}, nil
}

// ServeHTTP routes by path.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, wfmeta.TriggerPathPrefix); ok {
		if ns, name, ok := splitName(rest); ok {
			h.serveTrigger(w, r, ns, name)
			return
		}
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, wfmeta.WorkflowPathPrefix); ok {
		if ns, name, ok := splitName(rest); ok {
			h.serveWorkflow(w, r, ns, name)
			return
		}
	}
	writeError(w, http.StatusNotFound, "NotFound", "no such path: use /trigger/<namespace>/<name> or /workflow/<namespace>/<name>")
}

func splitName(rest string) (ns, name string, ok bool) {
	ns, name, ok = strings.Cut(strings.TrimSuffix(rest, "/"), "/")
	return ns, name, ok && ns != "" && name != "" && !strings.Contains(name, "/")
}

// serveTrigger fires an HTTP trigger.
func (h *HTTPHandler) serveTrigger(w http.ResponseWriter, r *http.Request, ns, name string) {
	ctx := r.Context()
	u, err := h.cfg.Dynamic.Resource(wfmeta.TriggerResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		writeError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("trigger %s/%s not found", ns, name))
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "InternalError", fmt.Sprintf("get trigger %s/%s: %v", ns, name, err))
		return
	}
	tr, err := fromUnstructured[minik8sv1.Trigger](u)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	if tr.Spec.HTTP == nil {
		writeError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("trigger %s/%s has no http source", ns, name))
		return
	}
	methods := tr.Spec.HTTP.Methods
	if len(methods) == 0 {
		methods = []string{http.MethodPost}
	}
	if !slices.ContainsFunc(methods, func(m string) bool { return strings.EqualFold(m, r.Method) }) {
		w.Header().Set("Allow", strings.Join(methods, ", "))
		writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", fmt.Sprintf("trigger %s/%s answers %s", ns, name, strings.Join(methods, ", ")))
		return
	}
	if suspended(tr) {
		writeError(w, http.StatusConflict, "Suspended", fmt.Sprintf("trigger %s/%s is suspended", ns, name))
		return
	}
	payload, ok := h.readBody(w, r, payloadOf(tr))
	if !ok {
		return
	}
	now := h.clk.Now()
	if wf := tr.Spec.Target.Workflow; wf != "" {
		if !h.workflowExists(w, r, ns, wf) {
			return
		}
		run, err := createRun(ctx, h.cfg.Dynamic, newRun(tr, payload, "", nil))
		if err != nil {
			writeError(w, http.StatusInternalServerError, "InternalError", err.Error())
			return
		}
		h.event(tr, "Started workflow run %s on an HTTP request", run.Name)
		h.record(tr, runFired(run, now))
		w.Header().Set("Location", runPath(ns, run.Name))
		w.Header().Set(RunHeader, run.Name)
		writeJSON(w, http.StatusAccepted, map[string]string{"run": run.Name, "namespace": ns})
		return
	}
	fn := tr.Spec.Target.Function
	resp, err := h.cfg.Invoker.Invoke(ctx, ns, fn, payload, functionHeader(tr, ""))
	result, succeeded := callResult(resp, err)
	h.event(tr, "Invoked function %s on an HTTP request", fn)
	ch := callDone(fn, result, succeeded)
	ch.fired = &firing{at: now, run: functionRun(fn), result: result}
	h.record(tr, ch)
	if err != nil {
		writeError(w, http.StatusBadGateway, "BadGateway", fmt.Sprintf("call function %s/%s: %v", ns, fn, err))
		return
	}
	for k, vs := range resp.Header {
		if hopByHop(k) {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

// readBody is the request's JSON body, or def when it is empty; it
// answers 400 (false) when the body is not JSON.
func (h *HTTPHandler) readBody(w http.ResponseWriter, r *http.Request, def []byte) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", fmt.Sprintf("the body is over %d bytes", tooBig.Limit))
			return nil, false
		}
		writeError(w, http.StatusBadRequest, "BadRequest", "read the body: "+err.Error())
		return nil, false
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return def, true
	}
	if !json.Valid(body) {
		writeError(w, http.StatusBadRequest, "BadRequest", "the body is not JSON")
		return nil, false
	}
	var buf bytes.Buffer
	_ = json.Compact(&buf, body)
	return buf.Bytes(), true
}

// workflowExists answers 404 (false) when the Workflow does not exist.
func (h *HTTPHandler) workflowExists(w http.ResponseWriter, r *http.Request, ns, name string) bool {
	_, err := h.cfg.Dynamic.Resource(wfmeta.WorkflowResource).Namespace(ns).Get(r.Context(), name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		writeError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("workflow %s/%s not found", ns, name))
		return false
	case err != nil:
		writeError(w, http.StatusInternalServerError, "InternalError", fmt.Sprintf("get workflow %s/%s: %v", ns, name, err))
		return false
	}
	return true
}

// record writes a firing into tr's status; a failure is logged (the
// firing has happened).
func (h *HTTPHandler) record(tr *minik8sv1.Trigger, ch *change) {
	// Not the request's context: the client going away must not lose it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := updateStatus(ctx, h.cfg.Dynamic, tr.Namespace, tr.Name, tr.UID, ch); err != nil {
		h.log.Warn("recording a firing failed", "trigger", tr.Namespace+"/"+tr.Name, "err", err)
	}
}

func (h *HTTPHandler) event(tr *minik8sv1.Trigger, format string, args ...any) {
	if h.cfg.Recorder != nil {
		h.cfg.Recorder.Eventf(tr, corev1.EventTypeNormal, "Fired", format, args...)
	}
}

// serveWorkflow runs a Workflow with the body as its input and answers
// with the run's output once it ends.
func (h *HTTPHandler) serveWorkflow(w http.ResponseWriter, r *http.Request, ns, name string) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "a workflow is run with POST")
		return
	}
	timeout := h.cfg.DefaultTimeout
	if s := r.URL.Query().Get("timeout"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			writeError(w, http.StatusBadRequest, "BadRequest", fmt.Sprintf("invalid timeout %q: want a positive duration such as 90s", s))
			return
		}
		timeout = d
	}
	input, ok := h.readBody(w, r, []byte("{}"))
	if !ok || !h.workflowExists(w, r, ns, name) {
		return
	}
	ctx := r.Context()
	run, err := createRun(ctx, h.cfg.Dynamic, &minik8sv1.WorkflowRun{
		TypeMeta: metav1.TypeMeta{APIVersion: minik8sv1.SchemeGroupVersion.String(), Kind: "WorkflowRun"},
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: name + "-", Namespace: ns,
			Labels: map[string]string{wfmeta.WorkflowLabel: name},
		},
		Spec: minik8sv1.WorkflowRunSpec{Workflow: name, Input: minik8sv1.NewJSON(input)},
	})
	if err != nil {
		writeError(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	w.Header().Set(RunHeader, run.Name)
	w.Header().Set("Location", runPath(ns, run.Name))
	timer := h.clk.NewTimer(timeout)
	defer timer.Stop()
	done, err := h.wait(ctx, run, timer.C())
	switch {
	case ctx.Err() != nil:
		return // the client went away; the run goes on
	case err != nil:
		writeJSON(w, http.StatusGatewayTimeout, map[string]string{
			"error": err.Error(), "reason": "WaitTimeout", "run": run.Name})
		return
	}
	switch done.Status.Phase {
	case minik8sv1.WorkflowRunSucceeded:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(done.Status.Output.Bytes())
	default:
		code := http.StatusInternalServerError
		if done.Status.Phase == minik8sv1.WorkflowRunTimedOut {
			code = http.StatusGatewayTimeout
		}
		writeJSON(w, code, map[string]string{"error": done.Status.Error, "cause": done.Status.Cause, "run": run.Name})
	}
}

// errWaitTimeout: the run did not end within the call's timeout.
var errWaitTimeout = errors.New("the run did not end in time; it goes on running")

// wait watches run until its phase is final, ctx ends (ctx's error) or
// timeout fires (errWaitTimeout).
func (h *HTTPHandler) wait(ctx context.Context, run *minik8sv1.WorkflowRun, timeout <-chan time.Time) (*minik8sv1.WorkflowRun, error) {
	client := h.cfg.Dynamic.Resource(wfmeta.WorkflowRunResource).Namespace(run.Namespace)
	rv := run.ResourceVersion
	for {
		wi, err := client.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", run.Name).String(),
			ResourceVersion: rv,
		})
		if err != nil {
			return nil, fmt.Errorf("watch workflowrun %s/%s: %w", run.Namespace, run.Name, err)
		}
		// What the watch may have missed (a resourceVersion too old, a
		// client that does not replay): read it once.
		u, err := client.Get(ctx, run.Name, metav1.GetOptions{})
		if err != nil {
			wi.Stop()
			return nil, fmt.Errorf("get workflowrun %s/%s: %w", run.Namespace, run.Name, err)
		}
		if cur, err := fromUnstructured[minik8sv1.WorkflowRun](u); err == nil {
			if wfmeta.Finished(cur.Status.Phase) {
				wi.Stop()
				return cur, nil
			}
			rv = cur.ResourceVersion
		}
		done, err := h.follow(ctx, wi, run, timeout, &rv)
		wi.Stop()
		if done != nil || err != nil {
			return done, err
		}
	}
}

// follow reads wi until the run ends (the run), ctx ends or timeout
// fires (an error) or the watch closes (nil, nil: watch again from rv).
func (h *HTTPHandler) follow(ctx context.Context, wi watch.Interface, run *minik8sv1.WorkflowRun, timeout <-chan time.Time, rv *string) (*minik8sv1.WorkflowRun, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timeout:
			return nil, errWaitTimeout
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return nil, nil
			}
			switch ev.Type {
			case watch.Error:
				*rv = "" // too old: start from now; the Get covers the gap
				return nil, nil
			case watch.Deleted:
				if u, ok := ev.Object.(*unstructured.Unstructured); ok && u.GetName() == run.Name {
					return nil, fmt.Errorf("workflowrun %s/%s was deleted before it ended", run.Namespace, run.Name)
				}
			case watch.Added, watch.Modified:
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || u.GetName() != run.Name {
					continue
				}
				*rv = u.GetResourceVersion()
				cur, err := fromUnstructured[minik8sv1.WorkflowRun](u)
				if err == nil && wfmeta.Finished(cur.Status.Phase) {
					return cur, nil
				}
			}
		}
	}
}

// runPath is where the API serves a run.
func runPath(ns, name string) string {
	return "/apis/" + minik8sv1.SchemeGroupVersion.String() + "/namespaces/" + ns + "/workflowruns/" + name
}

func hopByHop(k string) bool {
	switch http.CanonicalHeaderKey(k) {
	case "Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length":
		return true
	}
	return false
}

// writeError answers a JSON error as the function router does.
func writeError(w http.ResponseWriter, code int, reason, message string) {
	writeJSON(w, code, struct {
		Error  string `json:"error"`
		Reason string `json:"reason"`
	}{message, reason})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
