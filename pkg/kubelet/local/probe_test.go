package local

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

func TestProbeThresholds(t *testing.T) {
	// Each result is applied in turn; after each, the container's probe
	// state is "started/ready/failed".
	tests := []struct {
		name     string
		kind     probeKind
		probe    corev1.Probe
		results  []bool
		want     []string
		moreWant []bool // whether the probe goes on
	}{
		{name: "readiness defaults", kind: probeReadiness, results: []bool{true, false, false, false, true},
			want:     []string{"s/ready/", "s/ready/", "s/ready/", "s/-/", "s/ready/"},
			moreWant: []bool{true, true, true, true, true}},
		{name: "readiness thresholds", kind: probeReadiness, probe: corev1.Probe{SuccessThreshold: 2, FailureThreshold: 1},
			results: []bool{true, true, false, true, true},
			want:    []string{"s/-/", "s/ready/", "s/-/", "s/-/", "s/ready/"}, moreWant: []bool{true, true, true, true, true}},
		{name: "liveness", kind: probeLiveness, probe: corev1.Probe{FailureThreshold: 2},
			results: []bool{false, true, false, false},
			want:    []string{"s/-/", "s/-/", "s/-/", "s/-/liveness"}, moreWant: []bool{true, true, true, false}},
		{name: "startup succeeds", kind: probeStartup, probe: corev1.Probe{FailureThreshold: 3},
			results: []bool{false, false, true},
			want:    []string{"-/-/", "-/-/", "s/-/"}, moreWant: []bool{true, true, false}},
		{name: "startup fails", kind: probeStartup, probe: corev1.Probe{FailureThreshold: 2},
			results: []bool{false, false},
			want:    []string{"-/-/", "-/-/startup"}, moreWant: []bool{true, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			w := e.worker(testPod("p", "c"))
			cp := &containerProbes{hasReadiness: true, started: tc.kind != probeStartup}
			pr := &prober{w: w, kind: tc.kind, probe: &tc.probe, c: &corev1.Container{Name: "c"}, cp: cp}
			for i, ok := range tc.results {
				more := pr.record(ok)
				got := map[bool]string{true: "s", false: "-"}[cp.started] + "/" + map[bool]string{true: "ready", false: "-"}[cp.ready] + "/" + cp.failed
				if got != tc.want[i] || more != tc.moreWant[i] {
					t.Errorf("after result %d (%v): %s more=%v, want %s more=%v", i, ok, got, more, tc.want[i], tc.moreWant[i])
				}
			}
		})
	}
}

func TestProbeHandlers(t *testing.T) {
	e := newTestEnv(t)
	e.rt.exec = func(id string, cmd []string, s runtime.ExecStreams) (int, error) {
		switch cmd[0] {
		case "ok":
			fmt.Fprint(s.Stdout, "fine")
			return 0, nil
		case "fail":
			fmt.Fprint(s.Stderr, "not ready yet")
			return 1, nil
		case "silent":
			return 3, nil
		}
		return -1, fmt.Errorf("exec in %s: no such command", id)
	}
	var gotHeaders http.Header
	var gotHost string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHeaders, gotHost = r.Header, r.Host
		switch r.URL.Path {
		case "/healthz":
			fmt.Fprint(w, "ok")
		case "/redirect":
			http.Redirect(w, r, "/healthz", http.StatusFound)
		case "/elsewhere":
			http.Redirect(w, r, "http://192.0.2.1/", http.StatusFound)
		default:
			http.Error(w, "broken", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	c := &corev1.Container{Name: "c", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}

	exec := func(cmd ...string) corev1.ProbeHandler {
		return corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}
	}
	httpGet := func(path string, port intstr.IntOrString, headers ...corev1.HTTPHeader) corev1.ProbeHandler {
		return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: port, HTTPHeaders: headers}}
	}
	tcp := func(port int) corev1.ProbeHandler {
		return corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(port)}}
	}
	for _, tc := range []struct {
		name    string
		handler corev1.ProbeHandler
		ok      bool
		out     string
	}{
		{"exec ok", exec("ok"), true, "fine"},
		{"exec failing", exec("fail"), false, "not ready yet"},
		{"exec failing silently", exec("silent"), false, `command "silent" exited with 3`},
		{"exec error", exec("missing"), false, "exec in c1: no such command"},
		{"http ok", httpGet("/healthz", intstr.FromInt(port)), true, "ok"},
		{"http named port", httpGet("healthz", intstr.FromString("http")), true, "ok"},
		{"http redirect", httpGet("/redirect", intstr.FromInt(port)), true, "ok"},
		{"http redirect elsewhere", httpGet("/elsewhere", intstr.FromInt(port)), true, ""},
		{"http 500", httpGet("/broken", intstr.FromInt(port)), false, "HTTP probe failed with statuscode: 500"},
		{"http refused", httpGet("/", intstr.FromInt(closedPort)), false, "connection refused"},
		{"http unknown port", httpGet("/", intstr.FromString("nope")), false, `couldn't find port "nope" in container c`},
		{"tcp open", tcp(port), true, ""},
		{"tcp closed", tcp(closedPort), false, "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, out := e.p.runProbe(context.Background(), &corev1.Probe{ProbeHandler: tc.handler}, c, "c1", "127.0.0.1")
			if ok != tc.ok || !strings.Contains(out, tc.out) {
				t.Errorf("ok=%v out=%q, want ok=%v out containing %q", ok, out, tc.ok, tc.out)
			}
		})
	}
	ok, _ := e.p.runProbe(context.Background(), &corev1.Probe{ProbeHandler: httpGet("/healthz", intstr.FromInt(port),
		corev1.HTTPHeader{Name: "X-Custom", Value: "yes"}, corev1.HTTPHeader{Name: "Host", Value: "example.com"})}, c, "c1", "127.0.0.1")
	if !ok || gotHeaders.Get("X-Custom") != "yes" || gotHost != "example.com" || !strings.HasPrefix(gotHeaders.Get("User-Agent"), "kube-probe/1.") {
		t.Errorf("headers %v host %q", gotHeaders, gotHost)
	}

	// A probe that takes longer than timeoutSeconds fails.
	e.rt.exec = func(string, []string, runtime.ExecStreams) (int, error) {
		time.Sleep(1500 * time.Millisecond)
		return 0, nil
	}
	start := time.Now()
	ok, out := e.p.runProbe(context.Background(), &corev1.Probe{ProbeHandler: exec("slow"), TimeoutSeconds: 1}, c, "c1", "")
	if ok || !strings.Contains(out, "timed out") || time.Since(start) > 3*time.Second {
		t.Errorf("slow exec: ok=%v out=%q", ok, out)
	}
}

func TestLivenessRestarts(t *testing.T) {
	for _, tc := range []struct {
		policy  corev1.RestartPolicy
		running []string
		event   string
	}{
		{corev1.RestartPolicyAlways, []string{"c/1"}, "Normal Killing Container c failed liveness probe, will be restarted"},
		{corev1.RestartPolicyOnFailure, []string{"c/1"}, "Normal Killing Container c failed liveness probe, will be restarted"},
		{corev1.RestartPolicyNever, nil, "Normal Killing Container c failed liveness probe"},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			e := newTestEnv(t)
			rec := &recorder{}
			e.p.events = rec
			e.rt.stopCode = 0 // it exits cleanly on SIGTERM: still a restart
			pod := testPod("live", "c")
			pod.Spec.RestartPolicy = tc.policy
			pod.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
				InitialDelaySeconds: 3600, TerminationGracePeriodSeconds: ptrInt64(5)}
			w := e.worker(pod)
			e.sync(w)
			e.sync(w) // the probes start once the container is seen running
			// The probe worker runs; its failure is recorded as it would.
			id := observe(mustList(t, e.rt), pod.UID).containers[0].ID
			w.mu.Lock()
			cp := w.probes[id]
			w.mu.Unlock()
			if cp == nil {
				t.Fatal("no probes started")
			}
			w.mu.Lock()
			cp.failed, cp.failedProbe = "liveness", pod.Spec.Containers[0].LivenessProbe
			w.mu.Unlock()
			s := e.sync(w)
			if got := e.rt.running(); !slices.Equal(got, tc.running) {
				t.Errorf("running %v, want %v", got, tc.running)
			}
			if e.rt.stops[id] != 5*time.Second {
				t.Errorf("stopped with grace %s, want the probe's 5s", e.rt.stops[id])
			}
			if !slices.Contains(rec.events, tc.event) {
				t.Errorf("events %v, want %q", rec.events, tc.event)
			}
			if tc.policy == corev1.RestartPolicyNever {
				if s.Phase != corev1.PodSucceeded {
					t.Errorf("phase %s", s.Phase)
				}
			} else if cs := s.ContainerStatuses[0]; cs.RestartCount != 1 || cs.LastTerminationState.Terminated == nil {
				t.Errorf("status %+v", cs)
			}
		})
	}
}

func ptrInt64(n int64) *int64 { return &n }

func TestReadinessAndStartup(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("ready", "c")
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"x"}}}, InitialDelaySeconds: 3600}
	pod.Spec.Containers[0].StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"x"}}}, InitialDelaySeconds: 3600}
	w := e.worker(pod)
	e.sync(w)
	s := e.sync(w)
	cs := s.ContainerStatuses[0]
	if cs.Ready || *cs.Started || condition(s, corev1.PodReady) != "False:ContainersNotReady" {
		t.Fatalf("before the probes: ready %v started %v %v", cs.Ready, *cs.Started, s.Conditions)
	}
	id := strings.TrimPrefix(cs.ContainerID, "containerd://")
	set := func(started, ready bool) {
		w.mu.Lock()
		w.probes[id].started, w.probes[id].ready = started, ready
		w.mu.Unlock()
	}
	set(true, false)
	s = e.sync(w)
	if cs := s.ContainerStatuses[0]; cs.Ready || !*cs.Started {
		t.Errorf("started: ready %v started %v", cs.Ready, *cs.Started)
	}
	set(true, true)
	s = e.sync(w)
	if cs := s.ContainerStatuses[0]; !cs.Ready || condition(s, corev1.PodReady) != "True" || condition(s, corev1.ContainersReady) != "True" {
		t.Errorf("ready: %v %v", cs.Ready, s.Conditions)
	}
}

func TestProbeLoop(t *testing.T) {
	// The probe goroutine waits initialDelaySeconds, then probes every
	// periodSeconds on the injected clock.
	e := newTestEnv(t)
	calls := make(chan string, 10)
	e.rt.exec = func(_ string, cmd []string, _ runtime.ExecStreams) (int, error) {
		calls <- cmd[0]
		return 1, nil
	}
	pod := testPod("loop", "c")
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"check"}}},
		InitialDelaySeconds: 5, PeriodSeconds: 2, FailureThreshold: 1}
	w := e.worker(pod)
	e.sync(w)
	e.sync(w)
	waitFor(t, func() bool { return e.clock.HasWaiters() })
	select {
	case c := <-calls:
		t.Fatalf("probed (%s) before the initial delay", c)
	case <-time.After(50 * time.Millisecond):
	}
	e.clock.Step(5 * time.Second)
	if c := <-calls; c != "check" {
		t.Fatal(c)
	}
	waitFor(t, func() bool { return e.clock.HasWaiters() })
	e.clock.Step(2 * time.Second)
	<-calls
	w.stop()
}
