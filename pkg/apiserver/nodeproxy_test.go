package apiserver

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/pki"
)

// fakeKubelet answers every request with what it received and who sent
// it (the client certificate's common name); /forbidden answers 403 as a
// kubelet does.
func fakeKubelet(t *testing.T) (*httptest.Server, int32) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := ""
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			user = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		if r.URL.Path == "/forbidden" {
			http.Error(w, "Forbidden (user="+user+", verb=get, resource=nodes, subresource=proxy)", http.StatusForbidden)
			return
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = fmt.Fprintf(w, "%s %s?%s user=%s auth=%q cookie=%q body=%s", r.Method, r.URL.Path, r.URL.RawQuery, user,
			r.Header.Get("Authorization"), r.Header.Get("Cookie"), body)
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, p, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return srv, int32(port)
}

// closedPort is a local port nothing listens on.
func closedPort(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return int32(port)
}

func TestNodeProxy(t *testing.T) {
	bundle, err := pki.Ensure(pki.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := bundle.KubeletClientCert()
	if err != nil {
		t.Fatal(err)
	}
	store := &memStore{kvs: map[string][]byte{}}
	s, err := New(Config{Store: store, KubeletClientCert: cert, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	_, port := fakeKubelet(t)
	nodes, _ := s.table.Lookup(corev1.SchemeGroupVersion.WithResource("nodes"))
	for _, n := range []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
			// The InternalIP is preferred to the hostname.
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n1.invalid"}, {Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: port}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "down"}, Status: corev1.NodeStatus{
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: closedPort(t)}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "nowhere"}},
	} {
		data, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		store.kvs[objectKey(nodes, "", n.Name)] = data
	}
	api := httptest.NewServer(s.Handler())
	t.Cleanup(api.Close)
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	p := strconv.Itoa(int(port))
	for _, tc := range []struct {
		name, method, path, body string
		code                     int
		want                     string // in the body, or the Location of a redirect
	}{
		{"cadvisor metrics", "GET", "/api/v1/nodes/n1/proxy/metrics/cadvisor", "", 200,
			`GET /metrics/cadvisor? user=minik8s-apiserver auth="" cookie="" body=`},
		{"query goes through", "GET", "/api/v1/nodes/n1/proxy/stats/summary?only_cpu_and_memory=true", "", 200,
			"GET /stats/summary?only_cpu_and_memory=true user=minik8s-apiserver"},
		{"the kubelet port named", "GET", "/api/v1/nodes/n1:" + p + "/proxy/metrics", "", 200, "GET /metrics? user=minik8s-apiserver"},
		{"a scheme is ignored", "GET", "/api/v1/nodes/https:n1:" + p + "/proxy/metrics", "", 200, "GET /metrics? user=minik8s-apiserver"},
		{"trailing slash kept", "GET", "/api/v1/nodes/n1/proxy/", "", 200, "GET /? user=minik8s-apiserver"},
		{"other methods and bodies", "POST", "/api/v1/nodes/n1/proxy/exec/ns/p/c?command=ls", "hello", 200,
			"POST /exec/ns/p/c?command=ls user=minik8s-apiserver auth=\"\" cookie=\"\" body=hello"},
		{"the kubelet's answer comes back", "GET", "/api/v1/nodes/n1/proxy/forbidden", "", 403, "Forbidden (user=minik8s-apiserver"},
		{"no path: the root", "GET", "/api/v1/nodes/n1/proxy?x=1", "", 301, "/api/v1/nodes/n1/proxy/?x=1"},
		{"another port", "GET", "/api/v1/nodes/n1:9100/proxy/metrics", "", 400, `only the kubelet port (` + p + `) is proxied, not \"9100\"`},
		{"bad name", "GET", "/api/v1/nodes/a:b:c:d/proxy/metrics", "", 400, `invalid node request \"a:b:c:d\"`},
		{"no such node", "GET", "/api/v1/nodes/nope/proxy/metrics", "", 404, `nodes \"nope\" not found`},
		{"kubelet down", "GET", "/api/v1/nodes/down/proxy/metrics", "", 500, "error dialing backend"},
		{"no address", "GET", "/api/v1/nodes/nowhere/proxy/metrics", "", 500, "no preferred addresses found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, api.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			// Credentials for the apiserver stay there.
			req.Header.Set("Authorization", "Bearer secret")
			req.Header.Set("Cookie", "session=secret")
			resp, err := noRedirects.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			got := string(body)
			if resp.StatusCode == http.StatusMovedPermanently {
				got = resp.Header.Get("Location")
			}
			if resp.StatusCode != tc.code || !strings.Contains(got, tc.want) {
				t.Errorf("%s %s = %d %q, want %d with %q", tc.method, tc.path, resp.StatusCode, got, tc.code, tc.want)
			}
		})
	}
}

// TestNodeProxyRequestInfo: RBAC sees nodes/proxy with the verb of the
// method, as Kubernetes' authorizer does (a Prometheus ClusterRole grants
// get on nodes/proxy).
func TestNodeProxyRequestInfo(t *testing.T) {
	for _, tc := range []struct {
		method, path          string
		verb, name, proxyPath string
	}{
		{"GET", "/api/v1/nodes/n1/proxy/metrics/cadvisor", "get", "n1", "/metrics/cadvisor"},
		{"GET", "/api/v1/nodes/n1:10250/proxy/metrics", "get", "n1:10250", "/metrics"},
		{"POST", "/api/v1/nodes/n1/proxy/exec/ns/p/c", "create", "n1", "/exec/ns/p/c"},
		{"GET", "/api/v1/nodes/n1/proxy", "get", "n1", ""},
	} {
		info := parseRequestInfo(httptest.NewRequest(tc.method, tc.path, nil))
		if !info.IsResource || info.Resource != "nodes" || info.Subresource != "proxy" || info.Namespace != "" ||
			info.Verb != tc.verb || info.Name != tc.name || info.ProxyPath != tc.proxyPath {
			t.Errorf("%s %s: %+v", tc.method, tc.path, info)
		}
	}
}
