package router

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
)

// functions is a FunctionLister over a fixed set.
type functions map[string]*minik8sv1.Function

func (f functions) Get(namespace, name string) (*minik8sv1.Function, bool) {
	fn, ok := f[namespace+"/"+name]
	return fn, ok
}

// pokes records the Scaler's pokes and runs onPoke, once, on the first.
type pokes struct {
	n      atomic.Int32
	once   sync.Once
	onPoke func()
}

func (p *pokes) Poke(namespace, name string) {
	p.n.Add(1)
	if p.onPoke != nil {
		p.once.Do(p.onPoke)
	}
}

func function(name string, timeout time.Duration) *minik8sv1.Function {
	fn := &minik8sv1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	if timeout > 0 {
		fn.Spec.Timeout = &metav1.Duration{Duration: timeout}
	}
	return fn
}

// pod is a running instance of fn at revision rev with ip, Ready or not.
func pod(name, fn string, rev int, ip string, ready bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: name, UID: types.UID(name),
			Labels: map[string]string{fnmeta.FunctionLabel: fn, fnmeta.RevisionLabel: strconv.Itoa(rev)},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}},
		},
	}
}

// backend stands for an instance: /healthz answers healthy (200 or 503),
// anything else echoes the request as JSON, after gate (when set) opens.
type backend struct {
	srv     *httptest.Server
	healthy atomic.Bool
	calls   atomic.Int32
	gate    chan struct{}
	delay   time.Duration
}

func newBackend(t *testing.T, name string) *backend {
	b := &backend{}
	b.healthy.Store(true)
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/healthz" {
			if !b.healthy.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
			return
		}
		b.calls.Add(1)
		if b.gate != nil {
			<-b.gate
		}
		time.Sleep(b.delay)
		body, _ := io.ReadAll(req.Body)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{
			"pod": name, "method": req.Method, "path": req.URL.Path, "query": req.URL.RawQuery,
			"header": req.Header.Get("X-Test"), "body": string(body),
			"xff": strings.Join(req.Header.Values("X-Forwarded-For"), ", "), "host": req.Host,
		})
	}))
	t.Cleanup(b.srv.Close)
	return b
}

type fixture struct {
	t      *testing.T
	r      *Router
	client *fake.Clientset
	pokes  *pokes
	url    string
	// addrs maps pod IPs to where their backends listen.
	mu    sync.Mutex
	addrs map[string]string
}

func newFixture(t *testing.T, fns functions, p *pokes, pods ...*corev1.Pod) *fixture {
	t.Helper()
	f := &fixture{t: t, pokes: p, addrs: map[string]string{}}
	f.client = fake.NewClientset()
	for _, p := range pods {
		if _, err := f.client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := New(Config{Client: f.client, Functions: fns, Scaler: p, Address: "127.0.0.1:0", MaxBodyBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	r.dial = func(ctx context.Context, nw, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		f.mu.Lock()
		target, ok := f.addrs[host]
		f.mu.Unlock()
		if !ok {
			return nil, &net.OpError{Op: "dial", Net: nw, Err: fmt.Errorf("no backend at %s", host)}
		}
		return (&net.Dialer{}).DialContext(ctx, nw, target)
	}
	f.r = r
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	select {
	case <-r.Ready():
	case err := <-done:
		t.Fatalf("Start: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("router not ready")
	}
	f.url = "http://" + r.Addr().String()
	return f
}

// serve points ip at b.
func (f *fixture) serve(ip string, b *backend) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addrs[ip] = b.srv.Listener.Addr().String()
}

// call POSTs body to path and returns the response with its body read.
func (f *fixture) call(path, body string) (*http.Response, string) {
	f.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.url+path, strings.NewReader(body))
	req.Header.Set("X-Test", "yes")
	req.Header.Set("X-Forwarded-For", "192.0.2.7")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// metrics is what the router serves on /metrics.
func (f *fixture) metrics() string {
	f.t.Helper()
	resp, err := http.Get(f.url + "/metrics")
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	return string(text)
}

// waitPods waits until the router's cache holds n pods of fn.
func (f *fixture) waitPods(fn string, n int) {
	f.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(f.r.podsOf(types.NamespacedName{Namespace: "default", Name: fn})) != n {
		if time.Now().After(deadline) {
			f.t.Fatalf("the router never saw %d pods of %s", n, fn)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestNotFound(t *testing.T) {
	f := newFixture(t, functions{}, &pokes{})
	for _, path := range []string{"/function/default/nope", "/function/default/nope/x?y=1"} {
		resp, body := f.call(path, "{}")
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: code %d, want 404", path, resp.StatusCode)
		}
		if want := `{"error":"function default/nope not found","reason":"NotFound"}`; strings.TrimSpace(body) != want {
			t.Errorf("%s: body %s, want %s", path, body, want)
		}
	}
	if resp, _ := f.call("/elsewhere", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/elsewhere: code %d, want 404", resp.StatusCode)
	}
}

// A function whose code never built answers 503 with the reason at
// once; one still building, or with an earlier revision, is held.
func TestNeverBuilt(t *testing.T) {
	broken := function("broken", 0)
	broken.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "BuildFailed",
		Message: "SyntaxError: invalid syntax (main.py, line 1)"}}
	p := &pokes{}
	f := newFixture(t, functions{"default/broken": broken}, p)
	start := time.Now()
	resp, body := f.call("/function/default/broken", "{}")
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "NotReady") || !strings.Contains(body, "SyntaxError") {
		t.Errorf("code %d body %s, want 503 NotReady naming the SyntaxError", resp.StatusCode, body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("answered after %s, want at once", d)
	}
	for _, tc := range []struct {
		name string
		fn   *minik8sv1.Function
	}{
		{"an earlier revision serves", func() *minik8sv1.Function { fn := broken.DeepCopy(); fn.Status.Image = "img@sha256:1"; return fn }()},
		{"a newer generation is building", func() *minik8sv1.Function { fn := broken.DeepCopy(); fn.Generation = 2; return fn }()},
	} {
		if _, failed := neverBuilt(tc.fn); failed {
			t.Errorf("%s: refused", tc.name)
		}
	}
}

func TestForward(t *testing.T) {
	b := newBackend(t, "greet-a")
	f := newFixture(t, functions{"default/greet": function("greet", 0)}, &pokes{},
		pod("greet-a", "greet", 1, "10.0.0.1", true))
	f.serve("10.0.0.1", b)
	f.waitPods("greet", 1)

	resp, body := f.call("/function/default/greet/sub?x=1", `{"name":"ada"}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("code %d: %s", resp.StatusCode, body)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"pod": "greet-a", "method": "POST", "path": "/function/default/greet/sub",
		"query": "x=1", "header": "yes", "body": `{"name":"ada"}`,
		"xff": "192.0.2.7, 127.0.0.1", "host": strings.TrimPrefix(f.url, "http://")}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
	if h := resp.Header.Get("X-Minik8s-Instance"); h != "greet-a" {
		t.Errorf("X-Minik8s-Instance %q, want greet-a", h)
	}
	if h := resp.Header.Get("X-Minik8s-Cold-Start"); h != "" {
		t.Errorf("X-Minik8s-Cold-Start %q on a warm call", h)
	}

	// A body over Config.MaxBodyBytes is refused.
	resp, body = f.call("/function/default/greet", strings.Repeat("x", 2<<10))
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "RequestEntityTooLarge") {
		t.Errorf("large body: code %d %s, want 413", resp.StatusCode, body)
	}
}

func TestHoldUntilReady(t *testing.T) {
	b := newBackend(t, "greet-a")
	p := &pokes{}
	f := newFixture(t, functions{"default/greet": function("greet", 0)}, p)
	// The poke starts an instance: a running pod the kubelet has not
	// found ready yet, whose server answers a little later.
	b.healthy.Store(false)
	p.onPoke = func() {
		f.serve("10.0.0.1", b)
		_, err := f.client.CoreV1().Pods("default").Create(context.Background(),
			pod("greet-a", "greet", 1, "10.0.0.1", false), metav1.CreateOptions{})
		if err != nil {
			t.Error(err)
		}
		time.AfterFunc(200*time.Millisecond, func() { b.healthy.Store(true) })
	}
	start := time.Now()
	resp, body := f.call("/function/default/greet", `{}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("code %d: %s", resp.StatusCode, body)
	}
	if took := time.Since(start); took < 200*time.Millisecond || took > 2*time.Second {
		t.Errorf("answered after %v; want soon after the instance became healthy (200ms)", took)
	}
	if p.n.Load() == 0 {
		t.Error("the Scaler was never poked")
	}
	if h := resp.Header.Get("X-Minik8s-Cold-Start"); h != "true" {
		t.Errorf("X-Minik8s-Cold-Start %q, want true", h)
	}
	if want := `minik8s_function_cold_starts_total{function="greet",namespace="default"} 1`; !strings.Contains(f.metrics(), want) {
		t.Errorf("/metrics lacks %s", want)
	}
	// The next call is warm.
	if resp, _ := f.call("/function/default/greet", `{}`); resp.Header.Get("X-Minik8s-Cold-Start") != "" {
		t.Error("second call marked cold")
	}
}

func TestLeastLoaded(t *testing.T) {
	gate := make(chan struct{})
	a, b := newBackend(t, "a"), newBackend(t, "b")
	a.gate, b.gate = gate, gate
	f := newFixture(t, functions{"default/greet": function("greet", 0)}, &pokes{},
		pod("a", "greet", 1, "10.0.0.1", true), pod("b", "greet", 1, "10.0.0.2", true))
	f.serve("10.0.0.1", a)
	f.serve("10.0.0.2", b)
	f.waitPods("greet", 2)

	const n = 6
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, body := f.call("/function/default/greet", "{}"); resp.StatusCode != http.StatusOK {
				t.Errorf("code %d: %s", resp.StatusCode, body)
			}
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for a.calls.Load()+b.calls.Load() < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if a.calls.Load() != n/2 || b.calls.Load() != n/2 {
		t.Errorf("calls in flight a=%d b=%d, want %d each", a.calls.Load(), b.calls.Load(), n/2)
	}
	key := types.NamespacedName{Namespace: "default", Name: "greet"}
	if in, _ := f.r.Activity(key); in != n {
		t.Errorf("in flight %d, want %d", in, n)
	}
	close(gate)
	wg.Wait()
	st := f.r.Stats()[key]
	if st.InFlight != 0 || st.Requests != n || st.LastActive.IsZero() {
		t.Errorf("stats %+v, want 0 in flight, %d requests, a last activity", st, n)
	}
}

func TestNewestRevision(t *testing.T) {
	old, cur := newBackend(t, "old"), newBackend(t, "new")
	f := newFixture(t, functions{"default/greet": function("greet", 0)}, &pokes{},
		pod("old", "greet", 1, "10.0.0.1", true), pod("new", "greet", 2, "10.0.0.2", false))
	f.serve("10.0.0.1", old)
	f.serve("10.0.0.2", cur)
	f.waitPods("greet", 2)

	// The new revision's pod is not ready and does not answer its probe:
	// the old revision serves.
	cur.healthy.Store(false)
	for range 3 {
		if resp, body := f.call("/function/default/greet", "{}"); resp.Header.Get("X-Minik8s-Instance") != "old" {
			t.Fatalf("served by %q (%s), want old", resp.Header.Get("X-Minik8s-Instance"), body)
		}
	}
	// Once it answers its probe, every new request goes to it.
	cur.healthy.Store(true)
	deadline := time.Now().Add(2 * time.Second)
	for {
		resp, _ := f.call("/function/default/greet", "{}")
		if resp.Header.Get("X-Minik8s-Instance") == "new" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the new revision never served")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for range 5 {
		if resp, _ := f.call("/function/default/greet", "{}"); resp.Header.Get("X-Minik8s-Instance") != "new" {
			t.Fatalf("served by %q after the new revision was ready", resp.Header.Get("X-Minik8s-Instance"))
		}
	}
	// A connection to the new pod failing (it needs a probe again) holds
	// requests for that probe: they never go back to the old revision.
	for range 5 {
		f.r.distrust(instance{uid: "new"})
		if resp, _ := f.call("/function/default/greet", "{}"); resp.Header.Get("X-Minik8s-Instance") != "new" {
			t.Fatalf("served by %q after the new revision answered", resp.Header.Get("X-Minik8s-Instance"))
		}
	}
}

func TestRetryAfterDialError(t *testing.T) {
	live := newBackend(t, "live")
	gone := newBackend(t, "gone")
	f := newFixture(t, functions{"default/greet": function("greet", 0)}, &pokes{},
		pod("gone", "greet", 1, "10.0.0.1", true), pod("live", "greet", 1, "10.0.0.2", true))
	f.serve("10.0.0.1", gone)
	gone.srv.Close() // its port refuses connections now
	f.serve("10.0.0.2", live)
	f.waitPods("greet", 2)

	for i := range 10 {
		resp, body := f.call("/function/default/greet", fmt.Sprintf(`{"i":%d}`, i))
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Minik8s-Instance") != "live" {
			t.Fatalf("call %d: code %d by %q: %s", i, resp.StatusCode, resp.Header.Get("X-Minik8s-Instance"), body)
		}
		if !strings.Contains(body, fmt.Sprintf(`{\"i\":%d}`, i)) {
			t.Fatalf("call %d: the body was not resent: %s", i, body)
		}
	}
}

func TestTimeout(t *testing.T) {
	slow := newBackend(t, "slow")
	slow.delay = time.Second
	f := newFixture(t, functions{
		"default/slow":  function("slow", 200*time.Millisecond),
		"default/empty": function("empty", 200*time.Millisecond),
	}, &pokes{}, pod("slow", "slow", 1, "10.0.0.1", true))
	f.serve("10.0.0.1", slow)
	f.waitPods("slow", 1)

	for _, tc := range []struct{ fn, want string }{
		{"slow", "function default/slow did not answer within 200ms"},
		{"empty", "function default/empty had no ready instance within 200ms"},
	} {
		start := time.Now()
		resp, body := f.call("/function/default/"+tc.fn, "{}")
		if resp.StatusCode != http.StatusGatewayTimeout {
			t.Errorf("%s: code %d (%s), want 504", tc.fn, resp.StatusCode, body)
		}
		if want := `{"error":"` + tc.want + `","reason":"Timeout"}`; strings.TrimSpace(body) != want {
			t.Errorf("%s: body %s, want %s", tc.fn, body, want)
		}
		if took := time.Since(start); took > 900*time.Millisecond {
			t.Errorf("%s: answered after %v, want about 200ms", tc.fn, took)
		}
	}
}

func TestMetrics(t *testing.T) {
	b := newBackend(t, "greet-a")
	f := newFixture(t, functions{"default/greet": function("greet", 0)}, &pokes{},
		pod("greet-a", "greet", 1, "10.0.0.1", true))
	f.serve("10.0.0.1", b)
	f.waitPods("greet", 1)
	for range 3 {
		f.call("/function/default/greet", "{}")
	}
	f.call("/function/default/greet", strings.Repeat("x", 2<<10)) // 413

	text := f.metrics()
	for _, want := range []string{
		`minik8s_function_invocations_total{code="200",function="greet",namespace="default"} 3`,
		`minik8s_function_invocations_total{code="413",function="greet",namespace="default"} 1`,
		`minik8s_function_request_duration_seconds_count{function="greet",namespace="default"} 4`,
		`minik8s_function_in_flight{function="greet",namespace="default"} 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestAverageConcurrency(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakePassiveClock(t0)
	d := newDemand(clk.Now())
	step := func(dt time.Duration, delta int) {
		clk.SetTime(clk.Now().Add(dt))
		d.change(clk.Now(), delta)
	}
	// Two requests in flight for 10s, then none for 10s.
	step(0, +1)
	step(0, +1)
	step(10*time.Second, -1)
	step(0, -1)
	clk.SetTime(clk.Now().Add(10 * time.Second))
	now := clk.Now()
	for _, tc := range []struct {
		window time.Duration
		want   float64
	}{
		{20 * time.Second, 1},
		{10 * time.Second, 0},
		{15 * time.Second, 2.0 * 5 / 15},
		{40 * time.Second, 0.5},
		{time.Hour, 2.0 * 10 / 600},
	} {
		if got := d.average(now, tc.window); abs(got-tc.want) > 1e-9 {
			t.Errorf("average over %v: %v, want %v", tc.window, got, tc.want)
		}
	}
	// A window starting inside a second counts the part of it inside.
	if got, want := d.average(now.Add(-500*time.Millisecond), 10*time.Second), 2*0.5/10; abs(got-want) > 1e-9 {
		t.Errorf("average over 10s to 19.5s: %v, want %v", got, want)
	}
	// Long idle: the history empties.
	if got := d.average(now.Add(time.Hour), time.Minute); got != 0 {
		t.Errorf("average after an hour idle: %v, want 0", got)
	}
	if d.Requests != 2 || d.InFlight != 0 {
		t.Errorf("requests %d in flight %d, want 2 and 0", d.Requests, d.InFlight)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// podsOf is the cached pods of a function (tests).
func (r *Router) podsOf(key types.NamespacedName) []*corev1.Pod {
	objs, _ := r.podIndex.ByIndex(byFunction, key.Namespace+"/"+key.Name)
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		pods = append(pods, o.(*corev1.Pod))
	}
	return pods
}
