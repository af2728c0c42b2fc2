package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// echoBackend answers every request with what it received; /stream
// sends a first line and holds the rest until release is closed; /teapot
// answers 418.
func echoBackend(t *testing.T, addr string, release <-chan struct{}) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stream":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "first\n")
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
			_, _ = io.WriteString(w, "second\n")
			return
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, `<html><body><a href="/rewriteme">test</a><a href="https://example.com/x">away</a></body></html>`)
			return
		case "/teapot":
			w.Header().Set("X-Backend", "teapot")
			w.WriteHeader(http.StatusTeapot)
			_, _ = io.WriteString(w, "short and stout")
			return
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Backend", "echo")
		_, _ = fmt.Fprintf(w, "%s %s?%s test=%s body=%s auth=%q", r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("X-Test"), body, r.Header.Get("Authorization"))
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func backendPort(t *testing.T, srv *httptest.Server) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return int32(n)
}

// TestServiceProxy drives services/{name}/proxy as kubectl get --raw and
// client-go's ProxyGet use it: a selectorless Service whose EndpointSlice
// points at a server on 127.0.0.1.
func TestServiceProxy(t *testing.T) {
	c := startClusterWith(t, apiServerOnly)
	ctx := ctxT(t)
	release := make(chan struct{})
	backend := echoBackend(t, "127.0.0.1:0", release)
	port := backendPort(t, backend)

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromInt32(port)},
			{Name: "metrics", Port: 9090},
		}},
	}
	if _, err := c.client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "echo-1", Labels: map[string]string{discoveryv1.LabelServiceName: "echo"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			// Never picked: not ready.
			{Addresses: []string{"127.0.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
		},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(port)}},
	}
	if _, err := c.client.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("ProxyGet", func(t *testing.T) {
		for range 5 {
			got, err := c.client.CoreV1().Services("default").ProxyGet("http", "echo", "80", "a/b", map[string]string{"x": "1"}).DoRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := `GET /a/b?x=1 test= body= auth=""`; string(got) != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		}
	})
	t.Run("POST with a body and headers, named port", func(t *testing.T) {
		res := c.client.CoreV1().RESTClient().Post().
			AbsPath("/api/v1/namespaces/default/services/echo:http/proxy/function/default/greet").
			SetHeader("X-Test", "yes").SetHeader("Content-Type", "application/json").
			Body([]byte(`{"name":"ada"}`)).Do(ctx)
		got, err := res.Raw()
		if err != nil {
			t.Fatal(err)
		}
		if want := `POST /function/default/greet? test=yes body={"name":"ada"} auth=""`; string(got) != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
	t.Run("kubectl get --raw", func(t *testing.T) {
		k := newKubectl(t, c)
		got := k.ok(t, "get", "--raw", "/api/v1/namespaces/default/services/echo:80/proxy/x/?y=2")
		if want := `GET /x/?y=2 test= body= auth=""`; got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
		// .../proxy without a slash is the backend's root, after a redirect.
		if got := k.ok(t, "get", "--raw", "/api/v1/namespaces/default/services/echo:http/proxy"); !strings.HasPrefix(got, "GET /? ") {
			t.Fatalf("root: got %q", got)
		}
	})
	t.Run("a backend's error passes through", func(t *testing.T) {
		hc, err := rest.HTTPClientFor(c.config)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Get(c.config.Host + "/api/v1/namespaces/default/services/echo:http/proxy/teapot")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusTeapot || resp.Header.Get("X-Backend") != "teapot" || string(body) != "short and stout" {
			t.Fatalf("got %d %v %q, want the backend's 418", resp.StatusCode, resp.Header, body)
		}
	})
	t.Run("streams", func(t *testing.T) {
		rc, err := c.client.CoreV1().Services("default").ProxyGet("", "echo", "http", "stream", nil).Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		r := bufio.NewReader(rc)
		if line, err := r.ReadString('\n'); err != nil || line != "first\n" {
			t.Fatalf("first line %q, %v", line, err)
		}
		close(release) // the backend holds the rest until the first line has arrived
		if rest, err := io.ReadAll(r); err != nil || string(rest) != "second\n" {
			t.Fatalf("rest %q, %v", rest, err)
		}
	})

	for _, tc := range []struct {
		what, path string
		check      func(error) bool
		message    string
	}{
		{"unknown service", "services/nope/proxy/", apierrors.IsNotFound, `services "nope" not found`},
		{"no endpoints for the port", "services/echo:metrics/proxy/", apierrors.IsServiceUnavailable, `no endpoints available for service "echo:metrics"`},
		{"unknown port number", "services/echo:1234/proxy/", apierrors.IsServiceUnavailable, `no service port 1234 found for service "echo"`},
		{"bad scheme", "services/gopher:echo:80/proxy/", apierrors.IsBadRequest, `invalid service request "gopher:echo:80"`},
	} {
		t.Run(tc.what, func(t *testing.T) {
			err := c.client.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/" + tc.path).Do(ctx).Error()
			if !tc.check(err) || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("got %v, want %q", err, tc.message)
			}
		})
	}

	t.Run("no endpoints", func(t *testing.T) {
		empty := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "empty"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
		if _, err := c.client.CoreV1().Services("default").Create(ctx, empty, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err := c.client.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/services/empty/proxy/").Do(ctx).Error()
		if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), `no endpoints available for service "empty"`) {
			t.Fatalf("got %v, want 503 no endpoints", err)
		}
		k := newKubectl(t, c)
		if stderr := k.fails(t, "get", "--raw", "/api/v1/namespaces/default/services/empty/proxy/"); !strings.Contains(stderr, `no endpoints available for service "empty"`) {
			t.Fatalf("kubectl: %s", stderr)
		}
	})
	t.Run("unreachable endpoint", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := int32(l.Addr().(*net.TCPAddr).Port)
		l.Close()
		gone := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "gone"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
		if _, err := c.client.CoreV1().Services("default").Create(ctx, gone, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		goneSlice := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "gone-1", Labels: map[string]string{discoveryv1.LabelServiceName: "gone"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}}},
			Ports:       []discoveryv1.EndpointPort{{Port: ptr.To(closed)}},
		}
		if _, err := c.client.DiscoveryV1().EndpointSlices("default").Create(ctx, goneSlice, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err = c.client.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/services/gone/proxy/").Do(ctx).Error()
		if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), "error trying to reach service") {
			t.Fatalf("got %v, want 503 error trying to reach service", err)
		}
	})
}

// TestPodProxy drives pods/{name}/proxy to a pod's IP. A pod's IP is
// never a loopback address; the backend listens on one of the host's
// other addresses when it has one.
func TestPodProxy(t *testing.T) {
	c := startClusterWith(t, apiServerOnly)
	ctx := ctxT(t)
	newPod := func(name, ip string, port int32) {
		t.Helper()
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "c", Image: "busybox", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: port}},
			}}},
		}
		created, err := c.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.PodIP, created.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		if _, err := c.client.CoreV1().Pods("default").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	newPod("local", "127.0.0.1", 8080)
	err := c.client.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/pods/local:8080/proxy/").Do(ctx).Error()
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "address not allowed") {
		t.Fatalf("loopback pod IP: got %v, want 400 address not allowed", err)
	}

	ip := hostUnicastIPv4(t)
	if ip == "" {
		t.Log("no non-loopback IPv4 address on this host: the pod backend is not reached")
		return
	}
	backend := echoBackend(t, net.JoinHostPort(ip, "0"), make(chan struct{}))
	newPod("web", ip, backendPort(t, backend))
	for _, name := range []string{"web", "web:web", fmt.Sprintf("http:web:%d", backendPort(t, backend))} {
		got, err := c.client.CoreV1().RESTClient().Post().
			AbsPath("/api/v1/namespaces/default/pods/" + name + "/proxy/hello").Body([]byte("hi")).DoRaw(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := `POST /hello? test= body=hi auth=""`; string(got) != want {
			t.Fatalf("%s: got %q, want %q", name, got, want)
		}
		// Absolute links of an HTML page go through the proxy path;
		// links to other hosts are left alone.
		page, err := c.client.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/pods/" + name + "/proxy/page").DoRaw(ctx)
		if err != nil {
			t.Fatalf("%s page: %v", name, err)
		}
		if want := `<a href="/api/v1/namespaces/default/pods/` + name + `/proxy/rewriteme">test</a>`; !strings.Contains(string(page), want) ||
			!strings.Contains(string(page), `href="https://example.com/x"`) {
			t.Fatalf("%s page: %s, want %s and the foreign link untouched", name, page, want)
		}
	}
}

// hostUnicastIPv4 is an IPv4 address of this host that is not loopback,
// or "".
func hostUnicastIPv4(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}
