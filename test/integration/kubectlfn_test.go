package integration

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/kubectl/fn"
	"github.com/minik8s/minik8s/pkg/kubelet/simulated"
	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
)

// fakeRouter stands in for the function router behind
// kube-system/minik8s-functions: it answers a function's path with what
// it received, and 404 for the function "missing".
func fakeRouter(t *testing.T, c *cluster) {
	t.Helper()
	ctx := ctxT(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(r.URL.Path, fnmeta.Path("default", "missing")) {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":"function default/missing not found"}`)
			return
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.NewEncoder(w).Encode(map[string]string{
			"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery, "body": string(body), "type": r.Header.Get("Content-Type"),
		})
	}))
	t.Cleanup(srv.Close)
	port := backendPort(t, srv)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: fnmeta.RouterService, Namespace: fnmeta.RouterNamespace},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	if _, err := c.client.CoreV1().Services(fnmeta.RouterNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: fnmeta.RouterService + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: fnmeta.RouterService}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(port)}},
	}
	if _, err := c.client.DiscoveryV1().EndpointSlices(fnmeta.RouterNamespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func getFunction(t *testing.T, c *cluster, name string) *minik8sv1.Function {
	t.Helper()
	u, err := dynamic.NewForConfigOrDie(c.config).Resource(fnmeta.Resource).Namespace("default").Get(ctxT(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var f minik8sv1.Function
	data, _ := u.MarshalJSON()
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return &f
}

// TestKubectlFn drives `kubectl fn` against the in-process apiserver:
// deploy writes the source ConfigMap and the Function, invoke goes
// through the Service proxy to a stand-in router, list and delete are
// kubectl's, logs reads the function's pods on a simulated kubelet.
func TestKubectlFn(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	k := newKubectl(t, c)
	if msg := k.fails(t, "fn", "invoke", "add"); !strings.Contains(msg, "the function router kube-system/minik8s-functions does not answer") {
		t.Fatalf("invoke without a router: %q", msg)
	}
	fakeRouter(t, c)

	dir := t.TempDir()
	for _, sub := range []string{"lib", "__pycache__"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeTestFile(t, dir, "main.py", "from lib.util import add\n\ndef handle(event):\n    return {'sum': add(event['a'], event['b'])}\n")
	writeTestFile(t, filepath.Join(dir, "lib"), "util.py", "def add(a, b):\n    return a + b\n")
	writeTestFile(t, filepath.Join(dir, "lib"), "__init__.py", "")
	writeTestFile(t, filepath.Join(dir, "__pycache__"), "main.cpython-311.pyc", "junk")

	t.Run("deploy", func(t *testing.T) {
		if got := k.ok(t, "fn", "deploy", "add", "-f", dir, "--handler", "main.handle", "--max-scale", "3", "--scale-to-zero-after", "10s"); got != "function.minik8s.io/add created\n" {
			t.Fatalf("deploy: %q", got)
		}
		f := getFunction(t, c, "add")
		if f.Spec.Runtime != "python3" || f.Spec.Source.ConfigMap == nil || f.Spec.Source.ConfigMap.Name != "fn-add-source" ||
			*f.Spec.Scale.MaxScale != 3 || f.Spec.Scale.ScaleToZeroAfter.Duration.String() != "10s" {
			t.Fatalf("function spec: %+v", f.Spec)
		}
		cm, err := c.client.CoreV1().ConfigMaps("default").Get(ctx, "fn-add-source", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := cm.BinaryData[fn.ArchiveKey]; !ok || len(cm.BinaryData) != 1 {
			t.Fatalf("configmap keys: %v", cm.BinaryData)
		}
		if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != f.UID || cm.OwnerReferences[0].Kind != "Function" {
			t.Fatalf("configmap owners %+v, want function uid %s", cm.OwnerReferences, f.UID)
		}
		if got := k.ok(t, "fn", "deploy", "add", "-f", dir); got != "function.minik8s.io/add unchanged\n" {
			t.Fatalf("deploy again: %q", got)
		}
		if got := k.ok(t, "fn", "deploy", "add", "-f", dir, "--env", "GREETING=hi"); got != "function.minik8s.io/add configured\n" {
			t.Fatalf("deploy with env: %q", got)
		}
		if f := getFunction(t, c, "add"); len(f.Spec.Env) != 1 || *f.Spec.Scale.MaxScale != 3 {
			t.Fatalf("updated spec: %+v", f.Spec)
		}
		if msg := k.fails(t, "fn", "deploy", "nope", "-f", filepath.Join(dir, "nope.py")); !strings.Contains(msg, "no such file or folder") {
			t.Fatalf("deploy of a missing file: %q", msg)
		}
	})

	t.Run("list", func(t *testing.T) {
		out := k.ok(t, "fn", "list")
		if h := tableHeader(out); !slices.Equal(h, []string{"NAME", "RUNTIME", "REVISION", "READY", "INSTANCES", "URL", "AGE"}) {
			t.Fatalf("header %v in\n%s", h, out)
		}
		if lines := outputLines(out); len(lines) != 2 || !strings.HasPrefix(lines[1], "add ") {
			t.Fatalf("list:\n%s", out)
		}
		if got := k.ok(t, "fn", "list", "-o", "name"); got != "function.minik8s.io/add\n" {
			t.Fatalf("list -o name: %q", got)
		}
	})

	t.Run("plugin", func(t *testing.T) {
		// bin/kubectl-fn reads the standard flags, and KUBECONFIG.
		for _, args := range [][]string{{"--kubeconfig", c.cp.KubeconfigPath, "-n", "default", "list", "-o", "name"}, {"list", "-o", "name"}} {
			t.Setenv("KUBECONFIG", c.cp.KubeconfigPath)
			var out, errOut strings.Builder
			cmd := fn.NewPluginCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			cmd.SetArgs(append(args, "--cache-dir", t.TempDir()))
			if err := cmd.Execute(); err != nil || out.String() != "function.minik8s.io/add\n" {
				t.Fatalf("kubectl-fn %v: %q, %v\n%s", args, out.String(), err, errOut.String())
			}
		}
	})

	t.Run("invoke", func(t *testing.T) {
		var got map[string]string
		out := k.ok(t, "fn", "invoke", "add", "-d", `{"a":1,"b":2}`)
		if !strings.HasSuffix(out, "\n") || json.Unmarshal([]byte(out), &got) != nil {
			t.Fatalf("invoke: %q", out)
		}
		if got["method"] != "POST" || got["path"] != "/function/default/add" || got["body"] != `{"a":1,"b":2}` || got["type"] != "application/json" {
			t.Fatalf("the router got %v", got)
		}
		body := writeTestFile(t, t.TempDir(), "event.json", `{"a":3,"b":4}`)
		if out := k.ok(t, "fn", "invoke", "add", "-d", "@"+body); !strings.Contains(out, `"body":"{\"a\":3,\"b\":4}"`) {
			t.Fatalf("invoke -d @file: %q", out)
		}
		out, _, err := k.runWithInput(t, `{"a":5}`, "fn", "invoke", "add", "-d", "-")
		if err != nil || !strings.Contains(out, `"body":"{\"a\":5}"`) {
			t.Fatalf("invoke -d -: %q, %v", out, err)
		}
		out = k.ok(t, "fn", "invoke", "add", "-X", "GET", "--path", "/items?limit=2")
		if json.Unmarshal([]byte(out), &got) != nil || got["method"] != "GET" || got["path"] != "/function/default/add/items" || got["query"] != "limit=2" {
			t.Fatalf("invoke -X GET --path: %q", out)
		}
		stdout, stderr, err := k.run(t, "fn", "invoke", "missing", "-d", "{}")
		if err == nil || stdout != "" || !strings.Contains(stderr, `{"error":"function default/missing not found"}`) {
			t.Fatalf("invoke of a missing function: %v\nstdout %q\nstderr %q", err, stdout, stderr)
		}
	})

	t.Run("logs", func(t *testing.T) {
		startServingNode(t, c, "node-a")
		pods := c.client.CoreV1().Pods("default")
		newPod := func(name, logs string) {
			t.Helper()
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{fnmeta.FunctionLabel: "add"},
					Annotations: map[string]string{simulated.AnnotationLogs: logs}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "fn", Image: "busybox"}}},
			}
			if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, name+" Running", func(ctx context.Context) (bool, error) {
				p, err := pods.Get(ctx, name, metav1.GetOptions{})
				return err == nil && p.Status.Phase == corev1.PodRunning, nil
			})
		}
		newPod("add-1", "one")
		if got := k.ok(t, "fn", "logs", "add", "--tail", "1"); got != "one\n" {
			t.Fatalf("logs of one pod: %q", got)
		}
		newPod("add-2", "two")
		got := k.ok(t, "fn", "logs", "add")
		want := "[add-1] simulated container fn started\n[add-1] one\n[add-2] simulated container fn started\n[add-2] two\n"
		if got != want {
			t.Fatalf("logs of two pods: %q, want %q", got, want)
		}

		// Following: a pod that starts later is followed too.
		fctx, cancel := context.WithCancel(ctx)
		var out syncBuffer
		done := make(chan error, 1)
		go func() {
			done <- fn.Logs(fctx, dynamic.NewForConfigOrDie(c.config), c.client, fn.LogOptions{Namespace: "default", Name: "add", Follow: true, TailLines: ptr.To[int64](1)}, &out, io.Discard)
		}()
		newPod("add-3", "three")
		waitFor(t, "the new pod's log", func(context.Context) (bool, error) {
			s := out.String()
			return strings.Contains(s, "[add-1] one\n") && strings.Contains(s, "[add-3] three\n"), nil
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("logs -f: %v", err)
		}
	})

	t.Run("delete", func(t *testing.T) {
		if got := k.ok(t, "fn", "delete", "add"); !strings.HasPrefix(got, `function.minik8s.io "add" deleted`) {
			t.Fatalf("delete: %q", got)
		}
		waitFor(t, "the source ConfigMap collected with its function", func(ctx context.Context) (bool, error) {
			_, err := c.client.CoreV1().ConfigMaps("default").Get(ctx, "fn-add-source", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if msg := k.fails(t, "fn", "logs", "add"); !strings.Contains(msg, `"add" not found`) {
			t.Fatalf("logs of a deleted function: %q", msg)
		}
	})
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
