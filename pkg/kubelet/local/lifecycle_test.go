package local

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

// recordExec makes the fake runtime's exec log "exec <container> <cmd>"
// among its ops and answer with code.
func recordExec(e *testEnv, code func(cmd []string) int) {
	e.rt.exec = func(id string, cmd []string, _ runtime.ExecStreams) (int, error) {
		e.rt.mu.Lock()
		e.rt.op("exec %s %s", e.rt.all[id].Name, strings.Join(cmd, " "))
		e.rt.mu.Unlock()
		return code(cmd), nil
	}
}

// runningID is the ID of the running attempt of container name.
func runningID(t *testing.T, e *testEnv, name string) string {
	t.Helper()
	e.rt.mu.Lock()
	defer e.rt.mu.Unlock()
	for id, c := range e.rt.all {
		if c.Name == name && c.State == runtime.StateRunning {
			return id
		}
	}
	t.Fatalf("no running %s", name)
	return ""
}

func (r *recorder) has(prefix string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.events, func(e string) bool { return strings.HasPrefix(e, prefix) })
}

func exitCommand(cmd ...string) *corev1.LifecycleHandler {
	return &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: cmd}}
}

// Deleting a pod runs each container's preStop hook before its SIGTERM,
// with what is left of the grace period after it; sidecars (restartable
// init containers) stay until the app containers stopped, so a hook may
// still use them, and stop last. A failed hook is an event, and the
// container still stops.
func TestPreStopHookOnDelete(t *testing.T) {
	e := newTestEnv(t)
	rec := &recorder{}
	e.p.events = rec
	recordExec(e, func(cmd []string) int {
		if cmd[0] == "fail" {
			return 1
		}
		return 0
	})
	pod := testPod("hooks", "app", "broken")
	pod.Spec.InitContainers = []corev1.Container{{Name: "side", Image: "busybox", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: exitCommand("say", "bye")}
	pod.Spec.Containers[1].Lifecycle = &corev1.Lifecycle{PreStop: exitCommand("fail")}
	pod.Spec.InitContainers[0].Lifecycle = &corev1.Lifecycle{PreStop: exitCommand("side", "bye")}
	w := e.worker(pod)
	e.sync(w)
	e.sync(w)
	ids := map[string]string{}
	for _, name := range []string{"side", "app", "broken"} {
		ids[name] = runningID(t, e, name)
	}
	e.rt.takeOps()
	if err := e.p.DeletePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	ops := e.rt.takeOps()
	at := func(op string) int {
		i := slices.Index(ops, op)
		if i < 0 {
			t.Fatalf("no %q in %v", op, ops)
		}
		return i
	}
	if at("exec app say bye") > at("stop app") || at("exec broken fail") > at("stop broken") || at("exec side side bye") > at("stop side") {
		t.Errorf("a preStop hook ran after its container's stop: %v", ops)
	}
	if at("stop side") < at("stop app") || at("stop side") < at("stop broken") {
		t.Errorf("the sidecar stopped before the app containers: %v", ops)
	}
	for name, id := range ids {
		if g := e.rt.stops[id]; g != 30*time.Second {
			t.Errorf("%s stopped with grace %s, want the 30s left", name, g)
		}
	}
	if !rec.has("Warning FailedPreStopHook PreStopHook failed") {
		t.Errorf("no FailedPreStopHook event: %v", rec.events)
	}
}

// afterClock tells of every After asked of it, so a test steps the
// fake clock only once the provider waits on it.
type afterClock struct {
	*testclock.FakeClock
	afters chan time.Duration
}

func (c *afterClock) After(d time.Duration) <-chan time.Time {
	ch := c.FakeClock.After(d)
	c.afters <- d
	return ch
}

// The time a sleep hook takes counts against the grace period: the
// container gets what is left, but at least 2s; a hook still running
// when the grace period ends is cut short.
func TestPreStopSleepWithinGrace(t *testing.T) {
	for _, tc := range []struct {
		name         string
		sleep, grace int64
		step         time.Duration // when the hook ends, after the delete
		stopGrace    time.Duration
	}{
		{"sleep within grace", 10, 13, 10 * time.Second, 3 * time.Second},
		{"sleep longer than grace", 50, 30, 30 * time.Second, minStopGrace},
		{"sleep zero", 0, 30, 0, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			clk := &afterClock{FakeClock: e.clock, afters: make(chan time.Duration, 10)}
			e.providerClock = clk
			e.p = e.provider()
			pod := testPod("sleepy", "c")
			pod.Spec.TerminationGracePeriodSeconds = ptr.To(tc.grace)
			pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: tc.sleep}}}
			w := e.worker(pod)
			e.sync(w)
			id := runningID(t, e, "c")
			start := e.clock.Now()
			done := make(chan error)
			go func() { done <- e.p.DeletePod(context.Background(), pod) }()
			// The grace period's deadline, and the sleep.
			waits := []time.Duration{<-clk.afters}
			if tc.sleep > 0 {
				waits = append(waits, <-clk.afters)
				slices.Sort(waits)
				if want := []time.Duration{time.Duration(min(tc.sleep, tc.grace)) * time.Second, time.Duration(max(tc.sleep, tc.grace)) * time.Second}; !slices.Equal(waits, want) {
					t.Fatalf("waits %v, want %v", waits, want)
				}
				e.clock.Step(tc.step)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if took := e.rt.stopped[id].Sub(start); took != tc.step {
				t.Errorf("stopped %s after the delete, want %s", took, tc.step)
			}
			if g := e.rt.stops[id]; g != tc.stopGrace {
				t.Errorf("stopped with grace %s, want %s", g, tc.stopGrace)
			}
		})
	}
}

// httpGet hooks go to the pod's address unless they name a host, to a
// port by number or by name, with the hook's headers and the kubelet's
// User-Agent; any answer will do. An HTTPS hook answered in plain HTTP is
// retried in HTTP, with an event. tcpSocket hooks, accepted by the API
// for compatibility only, fail.
func TestHTTPHooks(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("X-Hook")+" "+strings.Split(r.UserAgent(), "/")[0])
		mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError) // still a success for a hook
	}))
	defer srv.Close()
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)

	e := newTestEnv(t)
	rec := &recorder{}
	e.p.events = rec
	e.p.cfg.NodeIP = "127.0.0.1" // a hostNetwork pod's address
	pod := testPod("web", "c", "tcp")
	pod.Spec.HostNetwork = true
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
		PostStart: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/echo?msg=poststart", Port: intstr.FromString("http"),
			HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Hook", Value: "yes"}}}},
		PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/echo?msg=prestop", Host: "127.0.0.1",
			Port: intstr.FromInt32(int32(port)), Scheme: corev1.URISchemeHTTPS}},
	}
	pod.Spec.Containers[1].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}}
	w := e.worker(pod)
	e.sync(w)
	if s := e.sync(w); s.ContainerStatuses[0].State.Running == nil {
		t.Fatalf("the container with a postStart hook is not running: %+v", s.ContainerStatuses[0].State)
	}
	if err := e.p.DeletePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	want := []string{"GET /echo?msg=poststart yes kube-lifecycle", "GET /echo?msg=prestop  kube-lifecycle"}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("requests %q, want %q", got, want)
	}
	if !rec.has("Warning LifecycleHTTPFallback") {
		t.Errorf("no LifecycleHTTPFallback event: %v", rec.events)
	}
	if !rec.has("Warning FailedPreStopHook") {
		t.Errorf("the tcpSocket hook did not fail: %v", rec.events)
	}
}

// A postStart hook runs right after the start; one that fails gives a
// FailedPostStartHook event and kills the container (its preStop hook
// first), which restarts as its policy says.
func TestPostStartHook(t *testing.T) {
	e := newTestEnv(t)
	rec := &recorder{}
	e.p.events = rec
	fail := true
	recordExec(e, func(cmd []string) int {
		if cmd[0] == "setup" && fail {
			return 1
		}
		return 0
	})
	pod := testPod("post", "c")
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: exitCommand("setup"), PreStop: exitCommand("teardown")}
	w := e.worker(pod)
	e.sync(w)
	ops := e.rt.takeOps()
	want := []string{"start c/0", "exec c setup", "exec c teardown", "stop c"}
	if i := slices.Index(ops, "start c/0"); i < 0 || !slices.Equal(ops[i:i+4], want) {
		t.Fatalf("ops %v, want %v in order", ops, want)
	}
	if !rec.has("Warning FailedPostStartHook PostStartHook failed") {
		t.Errorf("no FailedPostStartHook event: %v", rec.events)
	}
	fail = false
	s := e.sync(w)
	if cs := s.ContainerStatuses[0]; cs.RestartCount != 1 || cs.State.Running == nil || cs.LastTerminationState.Terminated == nil {
		t.Fatalf("after a failed postStart hook: restarts %d state %+v, want restarted", cs.RestartCount, cs.State)
	}
	if ops := e.rt.takeOps(); !slices.Contains(ops, "exec c setup") || slices.Contains(ops, "stop c") {
		t.Errorf("a passing postStart hook: ops %v", ops)
	}
	if got := e.rt.running(); !slices.Equal(got, []string{"c/1"}) {
		t.Errorf("running %v, want c/1", got)
	}
}
