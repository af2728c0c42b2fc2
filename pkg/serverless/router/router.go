package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/kubelet/network"
	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
)

// FunctionLister finds Functions (from an informer's cache).
type FunctionLister interface {
	Get(namespace, name string) (*minik8sv1.Function, bool)
}

// Scaler is asked for an instance of a function that has none usable
// (the autoscaler). Poke must not block.
type Scaler interface {
	Poke(namespace, name string)
}

// Config is what a Router is built from.
type Config struct {
	// Client reads the functions' pods.
	Client kubernetes.Interface
	// Functions says which functions exist and their timeouts.
	Functions FunctionLister
	// Scaler is poked when a request finds no usable instance.
	Scaler Scaler
	// Address is where the router listens (default ":8081").
	Address string
	// NetNS, when set, is the network namespace the router listens and
	// dials pods in.
	NetNS string
	// InstancePort is the port instances listen on (default fnmeta.Port).
	InstancePort int
	// MaxBodyBytes bounds a request's body (default 6 MiB); a larger one
	// answers 413.
	MaxBodyBytes int64
	// ProbeInterval is how often a held request's pods that are not ready
	// are probed (default 25ms).
	ProbeInterval time.Duration
	// Clock times the statistics (default the real clock).
	Clock clock.PassiveClock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Registry receives the router's metrics and is served on /metrics
	// (default a registry of its own).
	Registry *prometheus.Registry
	// Handlers serve other path prefixes beside /function/ on the same
	// listener (the workflows' /workflow/ and /trigger/), longest first.
	Handlers map[string]http.Handler
}

const (
	defaultAddress      = ":8081"
	defaultMaxBodyBytes = 6 << 20
	defaultProbe        = 25 * time.Millisecond
	// shutdownGrace is how long Start lets requests finish once its
	// context ends.
	shutdownGrace = 10 * time.Second
	// maxAttempts bounds the pods one request is sent to when
	// connections fail before an answer.
	maxAttempts = 5
	// dialTimeout bounds connecting to a pod.
	dialTimeout = 3 * time.Second
)

// Router routes function calls to instances; see the package doc.
type Router struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	metricz http.Handler

	factory  informers.SharedInformerFactory
	podInfo  cache.SharedIndexInformer
	podIndex cache.Indexer

	// dial connects to a pod (inside NetNS); tests replace it.
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	transport *http.Transport
	probes    *http.Transport

	ready    chan struct{}
	addrOnce sync.Once
	addr     net.Addr

	mu      sync.Mutex
	pods    map[types.UID]*podState
	demands map[types.NamespacedName]*demand
	// answered is, per function, the newest revision that has answered
	// a request.
	answered map[types.NamespacedName]int64
	// changed is closed (and replaced) whenever a pod may have become
	// usable.
	changed chan struct{}
}

// New validates cfg, fills its defaults and builds a Router; Start runs it.
func New(cfg Config) (*Router, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("router: Config.Client is required")
	case cfg.Functions == nil:
		return nil, errors.New("router: Config.Functions is required")
	case cfg.Scaler == nil:
		return nil, errors.New("router: Config.Scaler is required")
	}
	if cfg.Address == "" {
		cfg.Address = defaultAddress
	}
	if cfg.InstancePort == 0 {
		cfg.InstancePort = fnmeta.Port
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = defaultMaxBodyBytes
	}
	if cfg.ProbeInterval <= 0 {
		cfg.ProbeInterval = defaultProbe
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, fmt.Errorf("router: register metrics: %w", err)
	}
	r := &Router{
		cfg:     cfg,
		log:     cfg.Logger.With("component", "function-router"),
		metrics: m,
		metricz: promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{}),
		ready:   make(chan struct{}),
		pods:    map[types.UID]*podState{},
		demands: map[types.NamespacedName]*demand{}, answered: map[types.NamespacedName]int64{},
		changed: make(chan struct{}),
	}
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	r.dial = func(ctx context.Context, nw, addr string) (conn net.Conn, err error) {
		err = network.InNetNS(cfg.NetNS, func() error {
			conn, err = dialer.DialContext(ctx, nw, addr)
			return err
		})
		return conn, err
	}
	dial := func(ctx context.Context, nw, addr string) (net.Conn, error) { return r.dial(ctx, nw, addr) }
	r.transport = &http.Transport{
		DialContext:         dial,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     30 * time.Second,
	}
	r.probes = &http.Transport{DialContext: dial, DisableKeepAlives: true}

	r.factory = informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = fnmeta.FunctionLabel }))
	r.podInfo = r.factory.Core().V1().Pods().Informer()
	if err := r.podInfo.AddIndexers(cache.Indexers{byFunction: functionIndex}); err != nil {
		return nil, fmt.Errorf("router: index pods: %w", err)
	}
	r.podIndex = r.podInfo.GetIndexer()
	if _, err := r.podInfo.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.podChanged,
		UpdateFunc: func(_, obj any) { r.podChanged(obj) },
		DeleteFunc: r.podDeleted,
	}); err != nil {
		return nil, fmt.Errorf("router: watch pods: %w", err)
	}
	return r, nil
}

// Start runs the pod informer, listens on Config.Address (in
// Config.NetNS) and serves until ctx ends, then lets requests finish for
// a while.
func (r *Router) Start(ctx context.Context) error {
	r.factory.Start(ctx.Done())
	defer r.factory.Shutdown()
	var ln net.Listener
	if err := network.InNetNS(r.cfg.NetNS, func() (err error) {
		ln, err = net.Listen("tcp", r.cfg.Address)
		return err
	}); err != nil {
		return fmt.Errorf("router: listen on %s: %w", r.cfg.Address, err)
	}
	defer ln.Close()
	if !cache.WaitForCacheSync(ctx.Done(), r.podInfo.HasSynced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("router: pod cache did not sync")
	}
	srv := &http.Server{
		Handler:           r,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(r.log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	r.addrOnce.Do(func() { r.addr = ln.Addr() })
	close(r.ready)
	r.log.Info("serving functions", "address", ln.Addr().String(), "netns", r.cfg.NetNS)

	select {
	case err := <-errc:
		return fmt.Errorf("router: serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	r.transport.CloseIdleConnections()
	return nil
}

// Ready is closed once the router listens and its pod cache has synced.
func (r *Router) Ready() <-chan struct{} { return r.ready }

// Addr is where the router listens; nil before Ready.
func (r *Router) Addr() net.Addr {
	select {
	case <-r.ready:
		return r.addr
	default:
		return nil
	}
}

// Stats is what the router has seen of each function it was called for.
func (r *Router) Stats() map[types.NamespacedName]Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[types.NamespacedName]Stats, len(r.demands))
	for key, d := range r.demands {
		out[key] = d.Stats
	}
	return out
}

// Activity is a function's requests in the router now and when one last
// arrived or finished (zero when none has since the router started).
func (r *Router) Activity(key types.NamespacedName) (inFlight int, lastActive time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.demands[key]
	if d == nil {
		return 0, time.Time{}
	}
	return d.InFlight, d.LastActive
}

// AverageConcurrency is a function's time-weighted average of requests in
// flight (held ones included) over the window ending now, as Knative's
// autoscaler observes it; windows longer than 10 minutes are cut to it.
func (r *Router) AverageConcurrency(key types.NamespacedName, window time.Duration) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.demands[key]
	if d == nil {
		return 0
	}
	return d.average(r.cfg.Clock.Now(), window)
}

// demandLocked is key's demand, made on first use.
func (r *Router) demandLocked(key types.NamespacedName) *demand {
	d := r.demands[key]
	if d == nil {
		d = newDemand(r.cfg.Clock.Now())
		r.demands[key] = d
	}
	return d
}

func (r *Router) track(key types.NamespacedName, delta int) {
	r.mu.Lock()
	r.demandLocked(key).change(r.cfg.Clock.Now(), delta)
	r.mu.Unlock()
	r.metrics.inFlight.WithLabelValues(key.Namespace, key.Name).Add(float64(delta))
}

// ServeHTTP routes one request: /function/<namespace>/<name>[/rest],
// /metrics or /healthz.
func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch req.URL.Path {
	case "/metrics":
		r.metricz.ServeHTTP(w, req)
		return
	case "/healthz":
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok\n")
		return
	}
	for prefix, h := range r.cfg.Handlers {
		if strings.HasPrefix(req.URL.Path, prefix) {
			h.ServeHTTP(w, req)
			return
		}
	}
	key, ok := parsePath(req.URL.Path)
	if !ok {
		writeError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("no function at %s: the path is /function/<namespace>/<name>", req.URL.Path))
		return
	}
	fn, ok := r.cfg.Functions.Get(key.Namespace, key.Name)
	if !ok {
		writeError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("function %s not found", key))
		return
	}
	if msg, failed := neverBuilt(fn); failed {
		// No revision can ever answer until the code changes: say why
		// now rather than hold the call until it times out.
		writeError(w, http.StatusServiceUnavailable, "NotReady", fmt.Sprintf("function %s is not ready: %s", key, msg))
		return
	}
	r.call(w, req, key, timeoutOf(fn))
}

// neverBuilt says why a function that has no image yet failed to get one
// (its Ready condition's reason and message), when it did fail. A
// function still building, or with an earlier revision serving, is not.
func neverBuilt(fn *minik8sv1.Function) (string, bool) {
	if fn.Status.Image != "" {
		return "", false
	}
	for _, c := range fn.Status.Conditions {
		if c.Type == "Ready" && c.Status == metav1.ConditionFalse && c.ObservedGeneration == fn.Generation {
			return c.Reason + ": " + c.Message, true
		}
	}
	return "", false
}

// parsePath is the function a /function/<namespace>/<name>[/rest] path names.
func parsePath(path string) (types.NamespacedName, bool) {
	rest, ok := strings.CutPrefix(path, "/function/")
	if !ok {
		return types.NamespacedName{}, false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: parts[0], Name: parts[1]}, true
}

func timeoutOf(fn *minik8sv1.Function) time.Duration {
	if fn.Spec.Timeout != nil && fn.Spec.Timeout.Duration > 0 {
		return fn.Spec.Timeout.Duration
	}
	d, _ := time.ParseDuration(fnmeta.DefaultTimeout)
	return d
}

// call is one request to a known function: counted, held while there is
// no instance, forwarded, measured.
func (r *Router) call(w http.ResponseWriter, req *http.Request, key types.NamespacedName, timeout time.Duration) {
	start := time.Now()
	r.track(key, +1)
	defer r.track(key, -1)
	rec := &recorder{ResponseWriter: w}
	a := &attempts{r: r, key: key, timeout: timeout, start: time.Now()}
	defer func() {
		if a.inst != nil {
			r.release(*a.inst)
		}
		r.metrics.observe(key.Namespace, key.Name, rec.status(), time.Since(start), a.cold && a.inst != nil)
	}()

	body, err := io.ReadAll(io.LimitReader(req.Body, r.cfg.MaxBodyBytes+1))
	if err != nil {
		writeError(rec, http.StatusBadRequest, "BadRequest", fmt.Sprintf("read the request body: %v", err))
		return
	}
	if int64(len(body)) > r.cfg.MaxBodyBytes {
		writeError(rec, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge",
			fmt.Sprintf("the request body of function %s is larger than %d bytes", key, r.cfg.MaxBodyBytes))
		return
	}
	a.body = body
	ctx, cancel := context.WithTimeout(req.Context(), timeout)
	defer cancel()
	req = req.WithContext(ctx)
	req.Body = http.NoBody
	req.ContentLength = int64(len(body))
	req.TransferEncoding = nil
	if len(body) > 0 {
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:      rewrite,
		Transport:    a,
		ErrorHandler: a.fail,
		ErrorLog:     slog.NewLogLogger(r.log.Handler(), slog.LevelDebug),
	}
	proxy.ServeHTTP(rec, req)
}

// rewrite aims the outbound request at the instances (attempts.RoundTrip
// picks which) and passes the forwarding headers on, the client's
// address appended to X-Forwarded-For as nginx does.
func rewrite(pr *httputil.ProxyRequest) {
	pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "instance"
	if xff := pr.In.Header.Values("X-Forwarded-For"); len(xff) > 0 {
		pr.Out.Header["X-Forwarded-For"] = xff
	}
	pr.SetXForwarded()
	for _, h := range []string{"X-Forwarded-Host", "X-Forwarded-Proto"} {
		if v := pr.In.Header.Values(h); len(v) > 0 {
			pr.Out.Header[h] = v
		}
	}
}

// attempts is the RoundTripper of one request: it sends the request to
// a pod, and again to another when the connection fails before an answer.
type attempts struct {
	r       *Router
	key     types.NamespacedName
	timeout time.Duration
	body    []byte
	// inst is the pod of the current attempt (released by call).
	inst *instance
	// cold: the request waited for an instance; sent: it reached one.
	cold, sent bool
	// last is the pod of the last attempt; start when the call came.
	last  string
	start time.Time
}

func (a *attempts) RoundTrip(out *http.Request) (*http.Response, error) {
	for n := 1; ; n++ {
		inst, waited, err := a.r.acquire(out.Context(), a.key)
		a.cold = a.cold || waited
		if err != nil {
			return nil, err
		}
		a.inst, a.sent, a.last = &inst, true, inst.name
		req := out.Clone(out.Context())
		req.URL.Host = net.JoinHostPort(inst.ip, strconv.Itoa(a.r.cfg.InstancePort))
		req.Body, req.GetBody = http.NoBody, func() (io.ReadCloser, error) { return http.NoBody, nil }
		if len(a.body) > 0 {
			req.Body = io.NopCloser(bytes.NewReader(a.body))
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(a.body)), nil }
		}
		resp, err := a.r.transport.RoundTrip(req)
		if err == nil {
			a.r.answeredBy(a.key, inst)
			resp.Header.Set("X-Minik8s-Instance", inst.name)
			if a.cold {
				resp.Header.Set("X-Minik8s-Cold-Start", "true")
			}
			return resp, nil
		}
		a.r.release(inst)
		a.inst = nil
		if out.Context().Err() != nil || !connectionFailed(err) || n >= maxAttempts {
			return nil, fmt.Errorf("instance %s: %w", inst.name, err)
		}
		a.r.log.Debug("connection to an instance failed; trying another",
			"function", a.key.String(), "pod", inst.name, "err", err)
		a.r.distrust(inst)
	}
}

// connectionFailed: err is the connection's, before any answer came —
// refused, reset or closed — so the request can go to another pod.
func connectionFailed(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "server closed idle connection")
}

// fail answers a request that got no response from an instance.
func (a *attempts) fail(w http.ResponseWriter, req *http.Request, err error) {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		what := "did not answer"
		if !a.sent {
			what = "had no ready instance"
		}
		a.r.log.Info("function call timed out", "function", a.key.String(), "pod", a.last, "waited", a.cold, "sent", a.sent, "timeout", a.timeout)
		writeError(w, http.StatusGatewayTimeout, "Timeout", fmt.Sprintf("function %s %s within %s", a.key, what, a.timeout))
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads the answer.
		a.r.log.Info("the caller went away before the function answered", "function", a.key.String(), "pod", a.last,
			"waited", a.cold, "sent", a.sent, "after", time.Since(a.start).Round(time.Millisecond))
		w.WriteHeader(statusClientClosed)
	default:
		a.r.log.Info("function call failed", "function", a.key.String(), "err", err)
		writeError(w, http.StatusBadGateway, "BadGateway", fmt.Sprintf("function %s: %v", a.key, err))
	}
}

// statusClientClosed is nginx's code for a client that went away before
// the answer, as recorded in the metrics.
const statusClientClosed = 499

// writeError answers a JSON error: {"error": message, "reason": reason}.
func writeError(w http.ResponseWriter, code int, reason, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(struct {
		Error  string `json:"error"`
		Reason string `json:"reason"`
	}{message, reason})
}

// recorder remembers the status code written through it.
type recorder struct {
	http.ResponseWriter
	code int
}

func (w *recorder) WriteHeader(code int) {
	if w.code == 0 && code >= 200 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *recorder) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}
