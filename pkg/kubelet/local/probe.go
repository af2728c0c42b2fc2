package local

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/minik8s/minik8s/pkg/kubelet"
	"github.com/minik8s/minik8s/pkg/kubelet/network"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

// probeKind names a probe as Kubernetes' events do.
type probeKind string

const (
	probeStartup   probeKind = "Startup"
	probeLiveness  probeKind = "Liveness"
	probeReadiness probeKind = "Readiness"
)

// maxProbeOutput bounds what a probe's output contributes to messages.
const maxProbeOutput = 10 * 1024

// containerProbes is the probe state of one running container.
type containerProbes struct {
	cancel       context.CancelFunc
	hasReadiness bool
	// started: the startup probe succeeded (true without one).
	started bool
	// ready: the readiness probe's verdict.
	ready bool
	// failed names the probe ("liveness", "startup") whose failure
	// means the container must be killed; failedProbe is that probe.
	failed      string
	failedProbe *corev1.Probe
}

func (cp *containerProbes) view() probeView {
	return probeView{started: cp.started, ready: cp.ready || !cp.hasReadiness}
}

// ensureProbes starts the probes of a running container, once.
func (w *podWorker) ensureProbes(pod *corev1.Pod, c *corev1.Container, inst runtime.ContainerStatus, podIP string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.probes[inst.ID]; ok {
		return
	}
	cp := &containerProbes{hasReadiness: c.ReadinessProbe != nil, started: c.StartupProbe == nil}
	w.probes[inst.ID] = cp
	kinds := map[probeKind]*corev1.Probe{probeStartup: c.StartupProbe, probeLiveness: c.LivenessProbe, probeReadiness: c.ReadinessProbe}
	var ctx context.Context
	for kind, probe := range kinds {
		if probe == nil {
			continue
		}
		if ctx == nil {
			ctx, cp.cancel = context.WithCancel(w.p.ctx)
		}
		pr := &prober{w: w, kind: kind, probe: probe, pod: pod, c: c, cp: cp, id: inst.ID, startedAt: inst.StartedAt, podIP: podIP}
		w.probeWG.Add(1)
		go func() {
			defer w.probeWG.Done()
			pr.run(ctx)
		}()
	}
}

// stopProbes stops the probes of container id, or of all containers.
func (w *podWorker) stopProbes(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for cid, cp := range w.probes {
		if id == "" || cid == id {
			if cp.cancel != nil {
				cp.cancel()
			}
			delete(w.probes, cid)
		}
	}
}

// probeFailure names the probe that wants container id killed, if any.
func (w *podWorker) probeFailure(id string) (string, *corev1.Probe) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if cp, ok := w.probes[id]; ok {
		return cp.failed, cp.failedProbe
	}
	return "", nil
}

// started says whether container id has passed its startup probe.
func (w *podWorker) started(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	cp, ok := w.probes[id]
	return ok && cp.started
}

// prober runs one probe of one container.
type prober struct {
	w         *podWorker
	kind      probeKind
	probe     *corev1.Probe
	pod       *corev1.Pod
	c         *corev1.Container
	cp        *containerProbes
	id        string
	startedAt time.Time
	podIP     string

	lastOK bool
	streak int // consecutive results equal to lastOK
}

// run probes every periodSeconds, from initialDelaySeconds after the
// container started, until the probe is done or ctx ends.
func (pr *prober) run(ctx context.Context) {
	clk := pr.w.p.clock
	if delay := seconds(pr.probe.InitialDelaySeconds, 0) - clk.Since(pr.startedAt); delay > 0 {
		select {
		case <-ctx.Done():
			return
		case <-clk.After(delay):
		}
	}
	t := clk.NewTicker(seconds(pr.probe.PeriodSeconds, 10))
	defer t.Stop()
	for {
		if !pr.tick(ctx) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// tick probes once (unless the startup probe holds the others back) and
// records the result; false once this probe has nothing left to do.
func (pr *prober) tick(ctx context.Context) bool {
	w := pr.w
	w.mu.Lock()
	started := pr.cp.started
	w.mu.Unlock()
	switch {
	case pr.kind == probeStartup && started:
		return false
	case pr.kind != probeStartup && !started:
		return true
	}
	ok, out := w.p.runProbe(ctx, pr.probe, pr.c, pr.id, pr.podIP)
	if ctx.Err() != nil {
		return false
	}
	if !ok {
		w.p.event(pr.pod, pr.c.Name, corev1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", pr.kind, out)
	}
	return pr.record(ok)
}

// record applies the thresholds: the verdict changes only after
// successThreshold successes or failureThreshold failures in a row.
func (pr *prober) record(ok bool) bool {
	if pr.streak > 0 && ok == pr.lastOK {
		pr.streak++
	} else {
		pr.lastOK, pr.streak = ok, 1
	}
	threshold := int(pr.probe.FailureThreshold)
	if threshold <= 0 {
		threshold = 3
	}
	if ok {
		threshold = max(int(pr.probe.SuccessThreshold), 1)
	}
	if pr.streak < threshold {
		return true
	}
	w := pr.w
	w.mu.Lock()
	changed, more := false, true
	switch pr.kind {
	case probeStartup:
		if ok {
			pr.cp.started = true
		} else {
			pr.cp.failed = "startup"
			pr.cp.failedProbe = pr.probe
		}
		changed, more = true, false
	case probeLiveness:
		if !ok {
			pr.cp.failed = "liveness"
			pr.cp.failedProbe = pr.probe
			changed, more = true, false
		}
	case probeReadiness:
		changed = pr.cp.ready != ok
		pr.cp.ready = ok
	}
	w.mu.Unlock()
	if changed {
		w.wake()
	}
	return more
}

func seconds(n, def int32) time.Duration {
	if n <= 0 {
		n = def
	}
	return time.Duration(n) * time.Second
}

// runProbe runs a probe's handler once: success, or failure with why.
func (p *Provider) runProbe(ctx context.Context, probe *corev1.Probe, c *corev1.Container, id, podIP string) (bool, string) {
	timeout := seconds(probe.TimeoutSeconds, 1)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if podIP == "" {
		podIP = p.cfg.NodeIP
	}
	switch h := probe.ProbeHandler; {
	case h.Exec != nil:
		return p.execProbe(ctx, id, h.Exec.Command, timeout)
	case h.HTTPGet != nil:
		return p.httpProbe(ctx, h.HTTPGet, c, podIP)
	case h.TCPSocket != nil:
		return p.tcpProbe(ctx, h.TCPSocket, c, podIP)
	case h.GRPC != nil:
		return p.grpcProbe(ctx, h.GRPC, podIP)
	}
	return false, "the probe has no handler"
}

func (p *Provider) execProbe(ctx context.Context, id string, cmd []string, timeout time.Duration) (bool, string) {
	out := &limitedBuffer{max: maxProbeOutput}
	code, err := p.rt.Exec(ctx, id, cmd, runtime.ExecStreams{Stdout: out, Stderr: out})
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return false, fmt.Sprintf("command %q timed out after %s", strings.Join(cmd, " "), timeout)
	case err != nil:
		return false, err.Error()
	case code != 0:
		if s := out.String(); s != "" {
			return false, s
		}
		return false, fmt.Sprintf("command %q exited with %d", strings.Join(cmd, " "), code)
	}
	return true, out.String()
}

func (p *Provider) httpProbe(ctx context.Context, h *corev1.HTTPGetAction, c *corev1.Container, podIP string) (bool, string) {
	code, body, err := p.httpGet(ctx, h, c, podIP, "probe")
	switch {
	case err != nil:
		return false, err.Error()
	case code >= http.StatusOK && code < http.StatusBadRequest:
		return true, body
	}
	return false, fmt.Sprintf("HTTP probe failed with statuscode: %d", code)
}

// httpGet sends the GET of a probe or lifecycle hook as Kubernetes'
// kubelet builds it: to the pod's address unless the action names a host,
// the port by number or by the container port's name, its headers (Host
// sets the request's host), User-Agent kube-<agent>/<major>.<minor>. TLS
// is not verified; redirects are followed on the same host only. It
// returns the response's status and the start of its body.
func (p *Provider) httpGet(ctx context.Context, h *corev1.HTTPGetAction, c *corev1.Container, podIP, agent string) (int, string, error) {
	port, err := resolvePort(h.Port, c)
	if err != nil {
		return 0, "", err
	}
	host := h.Host
	if host == "" {
		host = podIP
	}
	scheme := strings.ToLower(string(h.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := h.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse(scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) + path)
	if err != nil {
		return 0, "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, "", err
	}
	for _, hd := range h.HTTPHeaders {
		if strings.EqualFold(hd.Name, "Host") {
			req.Host = hd.Value
			continue
		}
		req.Header.Add(hd.Name, hd.Value)
	}
	if req.Header.Get("User-Agent") == "" {
		v := strings.SplitN(strings.TrimPrefix(kubelet.Version, "v"), ".", 3)
		req.Header.Set("User-Agent", "kube-"+agent+"/"+v[0]+"."+v[1])
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "*/*")
	}
	client := &http.Client{
		Transport: &http.Transport{
			DialContext:       p.dial,
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as Kubernetes' prober
			DisableKeepAlives: true,
			Proxy:             nil,
		},
		// Redirects are followed on the same host only; another host's
		// redirect counts as success, as in Kubernetes.
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Hostname() != via[0].URL.Hostname() {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxProbeOutput))
	return resp.StatusCode, string(body), nil
}

func (p *Provider) tcpProbe(ctx context.Context, t *corev1.TCPSocketAction, c *corev1.Container, podIP string) (bool, string) {
	port, err := resolvePort(t.Port, c)
	if err != nil {
		return false, err.Error()
	}
	host := t.Host
	if host == "" {
		host = podIP
	}
	conn, err := p.dial(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false, err.Error()
	}
	_ = conn.Close()
	return true, ""
}

func (p *Provider) grpcProbe(ctx context.Context, g *corev1.GRPCAction, podIP string) (bool, string) {
	addr := net.JoinHostPort(podIP, strconv.Itoa(int(g.Port)))
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent("kube-probe"),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return p.dial(ctx, "tcp", addr) }),
	)
	if err != nil {
		return false, fmt.Sprintf("failed to connect service %q: %v", addr, err)
	}
	defer conn.Close()
	service := ""
	if g.Service != nil {
		service = *g.Service
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return false, fmt.Sprintf("health rpc probe failed: %v", err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return false, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String())
	}
	return true, ""
}

// dial connects from the node's network namespace.
func (p *Provider) dial(ctx context.Context, netw, addr string) (net.Conn, error) {
	var d net.Dialer
	if p.cfg.HostNetNS == "" {
		return d.DialContext(ctx, netw, addr)
	}
	var conn net.Conn
	err := network.InNetNS(p.cfg.HostNetNS, func() error {
		var err error
		conn, err = d.DialContext(ctx, netw, addr)
		return err
	})
	return conn, err
}

// resolvePort finds a probe's port: a number, or a container port's name.
func resolvePort(port intstr.IntOrString, c *corev1.Container) (int, error) {
	if port.Type == intstr.Int {
		if port.IntVal <= 0 || port.IntVal > 65535 {
			return 0, fmt.Errorf("invalid port number: %d", port.IntVal)
		}
		return int(port.IntVal), nil
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil && n > 0 && n < 65536 {
		return n, nil
	}
	return 0, fmt.Errorf("couldn't find port %q in container %s", port.StrVal, c.Name)
}

// limitedBuffer keeps the first max bytes written to it; writes are safe
// from the two output streams at once.
type limitedBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
