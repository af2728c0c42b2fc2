package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/gateway"
	"github.com/minik8s/minik8s/pkg/serverless"
	"github.com/minik8s/minik8s/pkg/serverless/build"
	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
	"github.com/minik8s/minik8s/pkg/serverless/pyruntime"
	"github.com/minik8s/minik8s/pkg/serverless/registry"
)

// functionsCluster is a cluster with the add-ons and the functions
// add-on as `minik8s up` runs them: the registry on the host (pushed to
// and pulled from on loopback), the router in the first node's
// namespace beside the gateway's nginx, so it reaches every pod.
type functionsCluster struct {
	*cluster
	dyn dynamic.Interface
	// gateway is nginx's address as the host reaches it.
	gateway string
	images  *build.Builder
	// registry is the registry's address.
	registry string
}

func newClusterWithFunctions(t *testing.T, n int) *functionsCluster {
	t.Helper()
	if _, err := registry.FindBinary(); err != nil {
		t.Skipf("needs the registry (make deps installs it): %v", err)
	}
	for _, rt := range fnmeta.Runtimes {
		if _, err := pyruntime.BaseTarball(rt); err != nil {
			t.Skipf("needs the function runtimes (make deps builds them): %v", err)
		}
	}
	c := newClusterWithAddons(t, n)
	first := c.nodes[c.tag+"-n1"]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	regAddr := ln.Addr().String()
	_ = ln.Close()
	client := kubernetes.NewForConfigOrDie(c.config)
	dyn := dynamic.NewForConfigOrDie(c.config)
	ctx, cancel := context.WithCancel(context.Background())
	regReady, fnReady := make(chan struct{}), make(chan struct{})
	done := make(chan struct{}, 2)
	regDir := t.TempDir()
	reg, err := registry.New(registry.Config{Dir: regDir, Address: regAddr, Logger: c.logger(),
		Ready: func() { close(regReady) }})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer func() { done <- struct{}{} }()
		if err := reg.Start(ctx); err != nil {
			t.Errorf("registry: %v", err)
		}
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		// Short autoscaling windows, as a user may configure them.
		err := serverless.Run(ctx, serverless.Config{Client: client, Dynamic: dyn, Registry: regAddr, RegistryDir: regDir,
			NetNS: first.netns, Address: first.ip, Tick: time.Second, StableWindow: 6 * time.Second,
			Logger: c.logger(), Ready: func() { close(fnReady) }})
		if err != nil {
			t.Errorf("functions: %v", err)
		}
	}()
	// Registered after the cluster's teardown, so it runs first.
	t.Cleanup(func() {
		cancel()
		<-done
		<-done
		if t.Failed() {
			b, _ := os.ReadFile(reg.LogPath())
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("registry log (tail):\n%s", b)
		}
	})
	for what, ch := range map[string]chan struct{}{"registry": regReady, "function router": fnReady} {
		select {
		case <-ch:
		case <-time.After(time.Minute):
			t.Fatalf("%s not ready after a minute", what)
		}
	}
	c.waitFor(time.Minute, "service kube-system/"+fnmeta.RouterService, func(ctx context.Context) (bool, error) {
		_, err := client.DiscoveryV1().EndpointSlices(fnmeta.RouterNamespace).Get(ctx, fnmeta.RouterService+"-minik8s", metav1.GetOptions{})
		return err == nil, nil
	})
	images, err := build.New(build.Config{Registry: regAddr})
	if err != nil {
		t.Fatal(err)
	}
	return &functionsCluster{cluster: c, dyn: dyn, gateway: "http://" + net.JoinHostPort(first.ip.String(), strconv.Itoa(gateway.DefaultPort)), images: images, registry: regAddr}
}

func (c *functionsCluster) function(ctx context.Context, name string) (*minik8sv1.Function, error) {
	u, err := c.dyn.Resource(fnmeta.Resource).Namespace("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	fn := &minik8sv1.Function{}
	return fn, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, fn)
}

func readyCondition(fn *minik8sv1.Function) *metav1.Condition {
	for i := range fn.Status.Conditions {
		if fn.Status.Conditions[i].Type == "Ready" {
			return &fn.Status.Conditions[i]
		}
	}
	return nil
}

// waitFunction waits until the function's Ready condition has status
// (and reason, when given) for its current generation.
func (c *functionsCluster) waitFunction(name string, status metav1.ConditionStatus, reason string, timeout time.Duration) *minik8sv1.Function {
	c.t.Helper()
	var fn *minik8sv1.Function
	c.waitFor(timeout, fmt.Sprintf("function %s Ready=%s %s", name, status, reason), func(ctx context.Context) (bool, error) {
		var err error
		fn, err = c.function(ctx, name)
		if err != nil {
			return false, nil
		}
		cond := readyCondition(fn)
		return cond != nil && cond.ObservedGeneration == fn.Generation && cond.Status == status && (reason == "" || cond.Reason == reason), nil
	})
	return fn
}

// response is one call's outcome.
type response struct {
	// sent and done are when the call was sent and answered.
	sent, done time.Time
	code       int
	body       string
	instance   string
	cold       bool
}

func call(client *http.Client, url, body string) (response, error) {
	sent := time.Now()
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return response{sent: sent, done: time.Now(), code: resp.StatusCode, body: strings.TrimSpace(string(b)),
		instance: resp.Header.Get("X-Minik8s-Instance"), cold: resp.Header.Get("X-Minik8s-Cold-Start") == "true"}, err
}

// functionPods lists the function's pods that are not terminating, with their nodes.
func (c *functionsCluster) functionPods(ctx context.Context, name string) (map[string]string, error) {
	pods, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: fnmeta.FunctionLabel + "=" + name})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = p.Spec.NodeName
		}
	}
	return out, nil
}

// load runs clients closed-loop callers of url until stop closes,
// checking every answer with check; it returns the number of calls,
// the failures (with the first few described) and the instances that
// answered.
type loadResult struct {
	calls, failures int64
	firstFailures   []string
	instances       map[string]int
}

func runLoad(url, body string, clients int, stop <-chan struct{}, check func(response) error) *loadResult {
	res := &loadResult{instances: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: 90 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	for range clients {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := call(hc, url, body)
				if err == nil {
					err = check(r)
				}
				atomic.AddInt64(&res.calls, 1)
				mu.Lock()
				if err != nil {
					res.failures++
					if len(res.firstFailures) < 5 {
						res.firstFailures = append(res.firstFailures, err.Error())
					}
				} else {
					res.instances[r.instance]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return res
}

func greeting(want string) func(response) error {
	return func(r response) error {
		var got struct{ Greeting string }
		if r.code != http.StatusOK || json.Unmarshal([]byte(r.body), &got) != nil || got.Greeting != want {
			return fmt.Errorf("answer %d %q, want greeting %q", r.code, r.body, want)
		}
		return nil
	}
}

// TestFunctions is the user's story of issue 11 on a two-node cluster:
// a Function from examples/, answering through the gateway (from the
// host and from a pod) and through the apiserver (kubectl fn invoke);
// scaled to zero when idle and back on the next call; spread over both
// nodes under 20 concurrent clients with no failed request; updated
// with no failed request; code that cannot run reported in its status;
// a multi-file function deployed with kubectl fn; a scikit-learn model on
// python3-ml; and deleted with everything it made.
func TestFunctions(t *testing.T) {
	c := newClusterWithFunctions(t, 2)
	k := c.kubectl
	ctx := context.Background()
	url := c.gateway + fnmeta.Path("default", "greet")
	hc := &http.Client{Timeout: 90 * time.Second}

	k.OK(t, "apply", "-f", filepath.Join("..", "..", "examples", "serverless", "greet.yaml"))
	// A short idle window, by configuration.
	k.OK(t, "patch", "function", "greet", "--type", "merge", "-p", `{"spec":{"scale":{"scaleToZeroAfter":"4s"}}}`)
	fn := c.waitFunction("greet", metav1.ConditionTrue, "", 3*time.Minute)
	if fn.Status.Revision != 1 || !strings.Contains(fn.Status.Image, "@sha256:") || !strings.HasSuffix(fn.Status.URL, "/function/default/greet") {
		t.Errorf("status after the first build: %+v", fn.Status)
	}
	out := k.OK(t, "get", "functions")
	for _, col := range []string{"NAME", "RUNTIME", "REVISION", "READY", "INSTANCES", "URL", "AGE", "greet", "python3"} {
		if !strings.Contains(out, col) {
			t.Errorf("kubectl get functions lacks %q:\n%s", col, out)
		}
	}

	if out := k.OK(t, "explain", "functions.spec.scale"); !strings.Contains(out, "scaleToZeroAfter") || !strings.Contains(out, "minScale") {
		t.Errorf("kubectl explain functions.spec.scale:\n%s", out)
	}

	t.Run("answers by input", func(t *testing.T) {
		for _, name := range []string{"ada", "grace"} {
			r, err := call(hc, url, `{"name":"`+name+`"}`)
			if err != nil {
				t.Fatal(err)
			}
			if err := greeting("hello " + name)(r); err != nil {
				t.Error(err)
			}
		}
		r, err := call(hc, c.gateway+fnmeta.Path("default", "nope"), `{}`)
		if err != nil || r.code != http.StatusNotFound || !strings.Contains(r.body, "default/nope") {
			t.Errorf("a missing function: %d %q %v, want 404 naming it", r.code, r.body, err)
		}
		out := k.OK(t, "fn", "invoke", "greet", "-d", `{"name":"kubectl"}`)
		if !strings.Contains(out, `"hello kubectl"`) {
			t.Errorf("kubectl fn invoke: %q", out)
		}
		// From a pod, by the gateway's name in the cluster DNS.
		c.apply(clientPod("fn-client", ""))
		c.waitPod("default", "fn-client", 2*time.Minute, "Running", running)
		out, stderr, err := k.Run(t, "exec", "fn-client", "--", "sh", "-c",
			`timeout 30 wget -q -O- --header 'Content-Type: application/json' --post-data '{"name":"pod"}' http://minik8s-gateway.kube-system/function/default/greet`)
		if err != nil || !strings.Contains(out, `"hello pod"`) {
			t.Errorf("from a pod: %q %s %v", out, stderr, err)
		}
	})

	t.Run("scales to zero and back", func(t *testing.T) {
		c.waitFor(2*time.Minute, "greet scaled to zero", func(ctx context.Context) (bool, error) {
			pods, err := c.functionPods(ctx, "greet")
			fn, ferr := c.function(ctx, "greet")
			return err == nil && ferr == nil && len(pods) == 0 && fn.Status.Instances == 0, nil
		})
		start := time.Now()
		r, err := call(hc, url, `{"name":"cold"}`)
		if err != nil {
			t.Fatal(err)
		}
		if err := greeting("hello cold")(r); err != nil {
			t.Error(err)
		}
		if !r.cold {
			t.Errorf("the first call after scale to zero was not a cold start (headers say %+v)", r)
		}
		t.Logf("cold call answered in %s", time.Since(start).Round(time.Millisecond))
		// The router's metrics, through the apiserver's Service proxy.
		metrics := k.OK(t, "get", "--raw", "/api/v1/namespaces/kube-system/services/"+fnmeta.RouterService+":80/proxy/metrics")
		for _, series := range []string{
			`minik8s_function_invocations_total{code="200",function="greet",namespace="default"}`,
			`minik8s_function_cold_starts_total{function="greet",namespace="default"}`,
			`minik8s_function_request_duration_seconds_bucket{function="greet",namespace="default"`,
		} {
			if !strings.Contains(metrics, series) {
				t.Errorf("the router's /metrics lacks %s", series)
			}
		}
	})

	t.Run("20 concurrent clients", func(t *testing.T) {
		stop := make(chan struct{})
		var maxPods int
		nodes := map[string]bool{}
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for {
				select {
				case <-stop:
					return
				case <-time.After(500 * time.Millisecond):
				}
				pods, err := c.functionPods(ctx, "greet")
				if err != nil {
					continue
				}
				maxPods = max(maxPods, len(pods))
				for _, n := range pods {
					if n != "" {
						nodes[n] = true
					}
				}
			}
		}()
		time.AfterFunc(20*time.Second, func() { close(stop) })
		res := runLoad(url, `{"name":"load"}`, 20, stop, greeting("hello load"))
		<-sampled
		t.Logf("%d calls, %d failed, %d instances served (%v), at most %d pods on nodes %v", res.calls, res.failures, len(res.instances), res.instances, maxPods, nodes)
		if res.failures != 0 {
			t.Errorf("%d of %d calls failed, first: %v", res.failures, res.calls, res.firstFailures)
		}
		if maxPods < 2 || len(res.instances) < 2 {
			t.Errorf("20 concurrent clients gave %d pods, %d serving, want more than one", maxPods, len(res.instances))
		}
		if len(nodes) < 2 {
			t.Errorf("instances ran on nodes %v, want both", nodes)
		}
		// The README's load, with Debian's wrk and hack/post.lua.
		if _, err := exec.LookPath("wrk"); err != nil {
			t.Fatalf("needs wrk (make deps installs it): %v", err)
		}
		out, err := exec.Command("wrk", "-c", "4", "-t", "2", "-d", "3s", "-s", filepath.Join("..", "..", "hack", "post.lua"), url).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Requests/sec") || strings.Contains(string(out), "Non-2xx") || strings.Contains(string(out), "Socket errors") {
			t.Errorf("wrk: %v\n%s", err, out)
		}
	})

	t.Run("update without a failed call", func(t *testing.T) {
		stop := make(chan struct{})
		var res *loadResult
		loaded := make(chan struct{})
		// switchedAt is when the first answer of the new revision came
		// (UnixNano; 0 before). A call sent after it must not get the old
		// answer; calls already in flight may finish on the old revision.
		var switchedAt atomic.Int64
		switched := func() bool { return switchedAt.Load() != 0 }
		go func() {
			defer close(loaded)
			res = runLoad(url, `{"name":"ada"}`, 4, stop, func(r response) error {
				if greeting("hi ada")(r) == nil {
					switchedAt.CompareAndSwap(0, r.done.UnixNano())
					return nil
				}
				if at := switchedAt.Load(); at != 0 && r.sent.UnixNano() > at {
					return fmt.Errorf("old answer %q to a call sent %s after the new revision answered", r.body, time.Duration(r.sent.UnixNano()-at))
				}
				return greeting("hello ada")(r)
			})
		}()
		time.Sleep(2 * time.Second)
		patch := `{"spec":{"source":{"inline":"def handle(event):\n    return {\"greeting\": \"hi \" + str(event.get(\"name\"))}\n"}}}`
		k.OK(t, "patch", "function", "greet", "--type", "merge", "-p", patch)
		c.waitFor(3*time.Minute, "answers from revision 2", func(context.Context) (bool, error) { return switched(), nil })
		time.Sleep(2 * time.Second)
		close(stop)
		<-loaded
		t.Logf("%d calls during the update, %d failed", res.calls, res.failures)
		if res.failures != 0 {
			t.Errorf("%d of %d calls failed during the update, first: %v", res.failures, res.calls, res.firstFailures)
		}
		if fn, err := c.function(ctx, "greet"); err != nil || fn.Status.Revision != 2 {
			t.Errorf("after the update: revision %v (%v), want 2", fn.Status.Revision, err)
		}
	})

	t.Run("code that cannot run", func(t *testing.T) {
		c.apply(`apiVersion: minik8s.io/v1
kind: Function
metadata: {name: broken}
spec:
  runtime: python3
  source:
    inline: |
      def handle(event)
          return event
`)
		c.apply(`apiVersion: minik8s.io/v1
kind: Function
metadata: {name: nohandler}
spec:
  runtime: python3
  handler: main.handle
  source:
    inline: |
      def other(event):
          return event
`)
		fn := c.waitFunction("broken", metav1.ConditionFalse, "BuildFailed", time.Minute)
		if msg := readyCondition(fn).Message; !strings.Contains(msg, "SyntaxError") || !strings.Contains(msg, "line 1") {
			t.Errorf("syntax error message: %q", msg)
		}
		fn = c.waitFunction("nohandler", metav1.ConditionFalse, "HandlerNotFound", time.Minute)
		if msg := readyCondition(fn).Message; !strings.Contains(msg, "handle") {
			t.Errorf("missing handler message: %q", msg)
		}
		// A call says why at once, instead of waiting for an instance
		// (once the router has seen the status).
		quick := &http.Client{Timeout: 3 * time.Second}
		c.waitFor(time.Minute, "a call to a function that never built: 503 naming the SyntaxError", func(context.Context) (bool, error) {
			r, err := call(quick, c.gateway+fnmeta.Path("default", "broken"), `{}`)
			return err == nil && r.code == http.StatusServiceUnavailable && strings.Contains(r.body, "SyntaxError"), nil
		})
		for _, name := range []string{"broken", "nohandler"} {
			if pods, err := c.functionPods(ctx, name); err != nil || len(pods) != 0 {
				t.Errorf("%s has pods %v (%v): a function that cannot run must not crash-loop", name, pods, err)
			}
		}
		// 3 MB of inline code: a clear 4xx, nothing created.
		big := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "minik8s.io/v1", "kind": "Function", "metadata": map[string]any{"name": "huge"},
			"spec": map[string]any{"runtime": "python3", "source": map[string]any{"inline": "# " + strings.Repeat("x", 3_000_000)}}}}
		_, err := c.dyn.Resource(fnmeta.Resource).Namespace("default").Create(ctx, big, metav1.CreateOptions{})
		var status apierrors.APIStatus
		if err == nil || !errorsAs(err, &status) || status.Status().Code < 400 || status.Status().Code >= 500 {
			t.Errorf("3 MB inline source: %v, want a 4xx", err)
		} else {
			t.Logf("3 MB inline source: %d %s", status.Status().Code, status.Status().Message[:min(len(status.Status().Message), 200)])
		}
		if _, err := c.function(ctx, "huge"); !apierrors.IsNotFound(err) {
			t.Errorf("the refused function exists: %v", err)
		}
	})

	t.Run("kubectl fn deploy of several files", func(t *testing.T) {
		out := k.OK(t, "fn", "deploy", "add", "--runtime", "python3", "--handler", "main.handle",
			"-f", filepath.Join("..", "..", "examples", "serverless", "add"))
		if !strings.Contains(out, "add") {
			t.Errorf("kubectl fn deploy: %q", out)
		}
		c.waitFunction("add", metav1.ConditionTrue, "", 2*time.Minute)
		out = k.OK(t, "fn", "invoke", "add", "-d", `{"x":1,"y":2}`)
		var got struct{ Sum float64 }
		if json.Unmarshal([]byte(out), &got) != nil || got.Sum != 3 {
			t.Errorf("add 1 2: %q", out)
		}
		r, err := call(hc, c.gateway+fnmeta.Path("default", "add"), `{"x":"nope","y":2}`)
		if err != nil || r.code != http.StatusInternalServerError || !strings.Contains(r.body, "ValueError") {
			t.Errorf("an exception in the handler: %d %q %v, want 500 naming it", r.code, r.body, err)
		}
		if r, err := call(hc, c.gateway+fnmeta.Path("default", "add"), `{"x":40,"y":2}`); err != nil || !strings.Contains(r.body, "42") {
			t.Errorf("after an exception the instance still answers: %q %v", r.body, err)
		}
	})

	t.Run("a scikit-learn model on python3-ml", func(t *testing.T) {
		k.OK(t, "apply", "-f", filepath.Join("..", "..", "examples", "serverless", "digits.yaml"))
		c.waitFunction("digits", metav1.ConditionTrue, "", 3*time.Minute)
		for want, sample := range []string{"digits-0.json", "digits-1.json"} {
			b, err := os.ReadFile(filepath.Join("..", "..", "examples", "serverless", sample))
			if err != nil {
				t.Fatal(err)
			}
			r, err := call(hc, c.gateway+fnmeta.Path("default", "digits"), string(b))
			var got struct{ Digit *int }
			if err != nil || r.code != http.StatusOK || json.Unmarshal([]byte(r.body), &got) != nil || got.Digit == nil || *got.Digit != want {
				t.Errorf("%s: %d %q %v, want digit %d", sample, r.code, r.body, err, want)
			}
		}
	})

	t.Run("delete", func(t *testing.T) {
		k.OK(t, "delete", "function", "greet")
		c.waitFor(2*time.Minute, "greet, its pods and its Service gone", func(ctx context.Context) (bool, error) {
			_, err := c.function(ctx, "greet")
			pods, perr := c.functionPods(ctx, "greet")
			_, serr := c.client.CoreV1().Services("default").Get(ctx, fnmeta.ServiceName("greet"), metav1.GetOptions{})
			_, derr := c.client.AppsV1().Deployments("default").Get(ctx, fnmeta.DeploymentName("greet"), metav1.GetOptions{})
			return apierrors.IsNotFound(err) && perr == nil && len(pods) == 0 && apierrors.IsNotFound(serr) && apierrors.IsNotFound(derr), nil
		})
		r, err := call(hc, url, `{"name":"ada"}`)
		if err != nil || r.code != http.StatusNotFound || !strings.Contains(r.body, "greet") {
			t.Errorf("a call after delete: %d %q %v, want 404 naming greet", r.code, r.body, err)
		}
		if tags, err := c.images.Tags(ctx, fnmeta.Repository("default", "greet")); err != nil || len(tags) != 0 {
			t.Errorf("greet's images after delete: %v %v", tags, err)
		}
		if tags, err := c.images.Tags(ctx, fnmeta.Repository("default", "add")); err != nil || len(tags) == 0 {
			t.Errorf("add's images are gone too: %v %v", tags, err)
		}
		// The registry's catalog forgets greet.
		resp, err := hc.Get("http://" + c.registry + "/v2/_catalog")
		if err != nil {
			t.Fatal(err)
		}
		catalog, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(catalog), fnmeta.Repository("default", "greet")) || !strings.Contains(string(catalog), fnmeta.Repository("default", "add")) {
			t.Errorf("the registry's catalog after deleting greet: %s", catalog)
		}
	})
}

func errorsAs(err error, status *apierrors.APIStatus) bool {
	s, ok := err.(apierrors.APIStatus)
	if ok {
		*status = s
	}
	return ok
}
