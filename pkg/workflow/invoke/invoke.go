// Package invoke calls functions the way every other client does: over
// HTTP through the function router (pkg/serverless/router), at
// /function/<namespace>/<name>, so that a workflow's Task or a trigger's
// firing counts as load, scales the function from zero and waits out a
// cold start like any request. It owns finding the router (the Endpoints
// of kube-system/minik8s-functions, or a fixed address) and turning the
// router's answers into results or errors a state machine can match.
package invoke

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
)

// Invoker calls a function with a JSON body.
type Invoker interface {
	Invoke(ctx context.Context, namespace, name string, body []byte, header http.Header) (*Response, error)
}

// Response is a function's answer, whatever its status.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Error names of the errors a call produces, as a state machine's Retry
// and Catch match them.
const (
	ErrTaskFailed = "States.TaskFailed"
	ErrTimeout    = "States.Timeout"
)

// Failure is a call that did not succeed: Name is the error (the
// function's own errorType, or States.TaskFailed / States.Timeout), Cause
// says what happened.
type Failure struct {
	Name, Cause string
}

func (f *Failure) Error() string { return f.Name + ": " + f.Cause }

// Outcome reads a response as a Task's result: a 2xx body is the output;
// anything else is a *Failure. A JSON body naming an error (errorType,
// or our Python runtime's type) gives that name; a timeout (504, or the
// runtime's Timeout) is States.Timeout; the rest is States.TaskFailed.
func Outcome(resp *Response) (json.RawMessage, *Failure) {
	if resp.Status >= 200 && resp.Status < 300 {
		body := bytes.TrimSpace(resp.Body)
		if len(body) == 0 {
			return json.RawMessage("null"), nil
		}
		if !json.Valid(body) {
			// A function that answers plain text: its output is that string.
			s, _ := json.Marshal(string(body))
			return s, nil
		}
		return json.RawMessage(body), nil
	}
	var named struct {
		ErrorType    string `json:"errorType"`
		ErrorMessage string `json:"errorMessage"`
		Type         string `json:"type"`
		Error        string `json:"error"`
		Message      string `json:"message"`
		Reason       string `json:"reason"`
	}
	_ = json.Unmarshal(resp.Body, &named)
	cause := firstNonEmpty(named.ErrorMessage, named.Error, named.Message, string(bytes.TrimSpace(resp.Body)))
	if cause == "" {
		cause = http.StatusText(resp.Status)
	}
	cause = fmt.Sprintf("HTTP %d: %s", resp.Status, cause)
	name := firstNonEmpty(named.ErrorType, named.Type)
	switch {
	case resp.Status == http.StatusGatewayTimeout || name == "Timeout":
		return nil, &Failure{Name: ErrTimeout, Cause: cause}
	case resp.Status == http.StatusInternalServerError && name != "":
		return nil, &Failure{Name: name, Cause: cause}
	}
	return nil, &Failure{Name: ErrTaskFailed, Cause: cause}
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// Router invokes functions through the router.
type Router struct {
	// Base is the router's address ("http://10.1.0.1:8081"); when
	// empty, it is found from the Endpoints of the router's Service.
	Base   string
	Client kubernetes.Interface
	// HTTP carries the calls (default: a transport with keep-alives and
	// no overall timeout: each call's context bounds it).
	HTTP *http.Client

	mu       sync.Mutex
	resolved string
	at       time.Time
}

var _ Invoker = (*Router)(nil)

// resolveTTL is how long a router address found from its Endpoints is
// used before it is looked up again.
const resolveTTL = 10 * time.Second

// Invoke posts body to the function and returns its answer; an error is
// a call that got no answer (router unreachable, the context ended).
func (r *Router) Invoke(ctx context.Context, namespace, name string, body []byte, header http.Header) (*Response, error) {
	base, err := r.base(ctx)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+fnmeta.Path(namespace, name), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client().Do(req)
	if err != nil {
		r.forget()
		return nil, fmt.Errorf("call function %s/%s through the router at %s: %w", namespace, name, base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read function %s/%s's answer: %w", namespace, name, err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}, nil
}

var defaultClient = &http.Client{Transport: &http.Transport{
	Proxy:               nil,
	DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	MaxIdleConns:        256,
	MaxIdleConnsPerHost: 256,
	IdleConnTimeout:     90 * time.Second,
}}

func (r *Router) client() *http.Client {
	if r.HTTP != nil {
		return r.HTTP
	}
	return defaultClient
}

func (r *Router) forget() {
	r.mu.Lock()
	r.resolved = ""
	r.mu.Unlock()
}

// ErrNoRouter: the router has not published its Endpoints (the functions
// add-on is off or not started).
var ErrNoRouter = errors.New("no function router: kube-system/minik8s-functions has no endpoints (is the functions add-on running?)")

func (r *Router) base(ctx context.Context) (string, error) {
	if r.Base != "" {
		return r.Base, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.resolved != "" && time.Since(r.at) < resolveTTL {
		return r.resolved, nil
	}
	if r.Client == nil {
		return "", ErrNoRouter
	}
	ep, err := r.Client.CoreV1().Endpoints(fnmeta.RouterNamespace).Get(ctx, fnmeta.RouterService, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", ErrNoRouter
	}
	if err != nil {
		return "", fmt.Errorf("find the function router: %w", err)
	}
	for _, ss := range ep.Subsets {
		if len(ss.Addresses) == 0 || len(ss.Ports) == 0 {
			continue
		}
		r.resolved = "http://" + net.JoinHostPort(ss.Addresses[0].IP, strconv.Itoa(int(ss.Ports[0].Port)))
		r.at = time.Now()
		return r.resolved, nil
	}
	return "", ErrNoRouter
}
