package gateway

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

func svc(name, ip string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

func lookup(svcs ...*corev1.Service) serviceLookup {
	return func(ns, name string) (*corev1.Service, bool) {
		for _, s := range svcs {
			if s.Namespace == ns && s.Name == name {
				return s, true
			}
		}
		return nil, false
	}
}

func record(name string, age int, host string, paths ...minik8sv1.DNSRecordPath) *minik8sv1.DNSRecord {
	return &minik8sv1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, CreationTimestamp: metav1.NewTime(time.Unix(int64(1000-age), 0))},
		Spec:       minik8sv1.DNSRecordSpec{Host: host, Paths: paths},
	}
}

func ingress(name string, age int, spec networkingv1.IngressSpec) *networkingv1.Ingress {
	return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name,
		CreationTimestamp: metav1.NewTime(time.Unix(int64(1000-age), 0))}, Spec: spec}
}

func ingressPath(path string, typ networkingv1.PathType, service string, port int32) networkingv1.HTTPIngressPath {
	return networkingv1.HTTPIngressPath{Path: path, PathType: &typ, Backend: networkingv1.IngressBackend{
		Service: &networkingv1.IngressServiceBackend{Name: service, Port: networkingv1.ServiceBackendPort{Number: port}}}}
}

func TestBuildAndRender(t *testing.T) {
	services := lookup(
		svc("a", "10.96.0.11", corev1.ServicePort{Name: "http", Port: 80}),
		svc("b", "10.96.0.12", corev1.ServicePort{Name: "web", Port: 8080}),
		svc("headless", "None", corev1.ServicePort{Port: 80}),
	)
	tests := []struct {
		name         string
		recs         []*minik8sv1.DNSRecord
		ings         []*networkingv1.Ingress
		want, avoid  []string
		names        []string
		problemsOf   string // object name with problems
		problemWants string
	}{{
		name: "the seeds' record: two paths on one host, stripped",
		recs: []*minik8sv1.DNSRecord{record("r", 1, "minik8s.com",
			minik8sv1.DNSRecordPath{Path: "/path1", Service: "a", Port: intstr.FromInt32(80)},
			minik8sv1.DNSRecordPath{Path: "path2", Service: "b", Port: intstr.FromString("web")})},
		want: []string{"server_name minik8s.com;", "location /path1/ {", "proxy_pass http://10.96.0.11:80/;",
			"location = /path1 {\n            proxy_pass http://10.96.0.11:80/;\n            proxy_redirect http://10.96.0.11:80/ /path1/;\n            proxy_redirect http://$host/ /path1/;\n            proxy_redirect / /path1/;",
			"location /path2/ {", "location = /path2 {", "proxy_pass http://10.96.0.12:8080/;", "listen 10080 default_server;",
			"absolute_redirect off;", "server_name minik8s-gateway.invalid;", `return 200 "id\n";`},
		names: []string{"minik8s.com"},
	}, {
		name: "missing backend answers 503 and is reported",
		recs: []*minik8sv1.DNSRecord{record("r", 1, "x.io",
			minik8sv1.DNSRecordPath{Path: "/p", Service: "nope", Port: intstr.FromInt32(80)},
			minik8sv1.DNSRecordPath{Path: "/q", Service: "a", Port: intstr.FromInt32(81)},
			minik8sv1.DNSRecordPath{Path: "/h", Service: "headless", Port: intstr.FromInt32(80)})},
		want:       []string{`return 503 "no backend for /p/\n";`, `return 503 "no backend for /q/\n";`},
		names:      []string{"x.io"},
		problemsOf: "r", problemWants: "service default/nope not found; service default/a has no TCP port 81; service default/headless has no clusterIP",
	}, {
		name: "ingress: exact, prefix on segments, default backend, no host",
		ings: []*networkingv1.Ingress{ingress("i", 1, networkingv1.IngressSpec{
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "b", Port: networkingv1.ServiceBackendPort{Name: "web"}}},
			Rules: []networkingv1.IngressRule{{Host: "shop.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{ingressPath("/exact", networkingv1.PathTypeExact, "a", 80), ingressPath("/api/", networkingv1.PathTypePrefix, "a", 80)}}}},
				{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{ingressPath("/any", networkingv1.PathTypeImplementationSpecific, "a", 80)}}}}},
		})},
		want: []string{"server_name shop.example.com;", "location = /exact {", "location = /api {", "location /api/ {",
			"proxy_pass http://10.96.0.11:80;", "server_name _;", "location = /any {", "location / {\n            proxy_pass http://10.96.0.12:8080;"},
		avoid: []string{"proxy_pass http://10.96.0.11:80/;"},
		names: []string{"shop.example.com"},
	}, {
		name: "the older object keeps a contested path",
		recs: []*minik8sv1.DNSRecord{
			record("young", 1, "minik8s.com", minik8sv1.DNSRecordPath{Path: "/p", Service: "b", Port: intstr.FromInt32(8080)}),
			record("old", 5, "minik8s.com", minik8sv1.DNSRecordPath{Path: "/p", Service: "a", Port: intstr.FromInt32(80)}),
		},
		want:       []string{"proxy_pass http://10.96.0.11:80/;"},
		avoid:      []string{"10.96.0.12"},
		names:      []string{"minik8s.com"},
		problemsOf: "young", problemWants: "minik8s.com/p/ is already routed by dnsrecord default/old",
	}, {
		name: "an Exact path wins over the one a Prefix implies, in one Ingress or another, older or not",
		ings: []*networkingv1.Ingress{
			ingress("old", 5, networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "e.io",
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{ingressPath("/api", networkingv1.PathTypePrefix, "a", 80),
						ingressPath("/v1/", networkingv1.PathTypePrefix, "a", 80), ingressPath("/v1", networkingv1.PathTypeExact, "b", 8080)}}}}}}),
			ingress("young", 1, networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "e.io",
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{ingressPath("/api", networkingv1.PathTypeExact, "b", 8080)}}}}}}),
		},
		want: []string{"# ingress default/young\n        location = /api {\n            proxy_pass http://10.96.0.12:8080;",
			"# ingress default/old\n        location /api/ {\n            proxy_pass http://10.96.0.11:80;",
			"# ingress default/old\n        location = /v1 {\n            proxy_pass http://10.96.0.12:8080;",
			"location /v1/ {\n            proxy_pass http://10.96.0.11:80;"},
		names: []string{"e.io"},
	}, {
		name:       "the gateway's own name is refused",
		recs:       []*minik8sv1.DNSRecord{record("own", 1, "minik8s-gateway.invalid", minik8sv1.DNSRecordPath{Path: "/", Service: "a", Port: intstr.FromInt32(80)})},
		problemsOf: "own", problemWants: "minik8s-gateway.invalid is the gateway's own name",
	}, {
		name: "paths that could inject into nginx.conf are refused",
		ings: []*networkingv1.Ingress{ingress("evil", 1, networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "e.io",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{ingressPath("/x;} server {", networkingv1.PathTypeExact, "a", 80)}}}}}})},
		avoid:      []string{"/x;"},
		problemsOf: "evil", problemWants: "e.io/x;} server {: the gateway routes only",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, problems := build(services, tc.recs, tc.ings)
			conf := nginxConfig("/d", DefaultPort, []string{"10.244.0.0/16"}, "id", r)
			for _, w := range tc.want {
				if !strings.Contains(conf, w) {
					t.Errorf("config lacks %q:\n%s", w, conf)
				}
			}
			for _, a := range tc.avoid {
				if strings.Contains(conf, a) {
					t.Errorf("config has %q:\n%s", a, conf)
				}
			}
			if got := r.names(); strings.Join(got, ",") != strings.Join(tc.names, ",") {
				t.Errorf("names = %v, want %v", got, tc.names)
			}
			for obj, probs := range problems {
				msg := problemsMessage(probs)
				if obj.name == tc.problemsOf {
					if !strings.HasPrefix(msg, tc.problemWants) {
						t.Errorf("problems of %s = %q, want %q", obj.name, msg, tc.problemWants)
					}
				} else if len(probs) > 0 {
					t.Errorf("unexpected problems of %s: %q", obj.name, msg)
				}
			}
			if tc.problemsOf != "" && len(problems[objectKey{"DNSRecord", "default", tc.problemsOf}])+len(problems[objectKey{"Ingress", "default", tc.problemsOf}]) == 0 {
				t.Errorf("%s has no problems, want %q", tc.problemsOf, tc.problemWants)
			}
			nginxAccepts(t, r)
		})
	}
}

// nginxAccepts runs the real `nginx -t` on the rendered configuration.
func nginxAccepts(t *testing.T, r routes) {
	t.Helper()
	bin, err := FindNginx()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Logf("not checked with nginx -t: %v", err)
		return
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o777); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxConfig(dir, 18080, []string{"127.0.0.0/8"}, "id", r)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-t", "-q", "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log")).CombinedOutput(); err != nil {
		t.Errorf("nginx -t: %v: %s", err, out)
	}
}

func TestHostsFile(t *testing.T) {
	got := hostsFile("10.96.0.20", []string{"a.io", "minik8s.com"})
	if !strings.Contains(got, "10.96.0.20 a.io\n10.96.0.20 minik8s.com\n") {
		t.Errorf("hosts file = %q", got)
	}
	if got := hostsFile("", []string{"a.io"}); strings.Contains(got, "a.io") {
		t.Errorf("hosts file without an address names hosts: %q", got)
	}
}

// TestNginxServesRoutes runs the real nginx on the rendered configuration
// in front of a backend on loopback: a DNSRecord path answers with and
// without its trailing slash and strips itself, an Ingress Prefix path
// matches whole segments and keeps the path, Exact only itself; no
// redirect names nginx's port, a backend's redirect stays below the
// record's path; the status server tells the configuration's id.
func TestNginxServesRoutes(t *testing.T) {
	bin, err := FindNginx()
	if err != nil {
		t.Skipf("needs nginx (make deps installs it): %v", err)
	}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/dir": // as busybox httpd answers a directory
			http.Redirect(w, r, "/dir/", http.StatusFound)
		case "/abs":
			http.Redirect(w, r, "http://"+r.Host+"/abs/", http.StatusFound)
		default:
			fmt.Fprintf(w, "backend %s", r.URL.RequestURI())
		}
	}))
	defer backend.Close()
	host, portStr, _ := net.SplitHostPort(backend.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	services := lookup(svc("a", host, corev1.ServicePort{Port: int32(port)}))
	r, problems := build(services,
		[]*minik8sv1.DNSRecord{record("r", 1, "minik8s.com", minik8sv1.DNSRecordPath{Path: "/path1", Service: "a", Port: intstr.FromInt32(int32(port))})},
		[]*networkingv1.Ingress{ingress("i", 1, networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "shop.io",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{
				ingressPath("/foo", networkingv1.PathTypePrefix, "a", int32(port)),
				ingressPath("/exact", networkingv1.PathTypeExact, "a", int32(port)),
			}}}}}})})
	for obj, probs := range problems {
		if len(probs) > 0 {
			t.Fatalf("problems of %v: %v", obj, probs)
		}
	}

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(filepath.Join(dir, "tmp"), 0o777)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nginxPort := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxConfig(dir, nginxPort, []string{"127.0.0.0/8"}, "run-7", r)), 0o644); err != nil {
		t.Fatal(err)
	}
	nginx := exec.Command(bin, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log"), "-g", "daemon off;")
	nginx.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := nginx.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = nginx.Process.Signal(syscall.SIGTERM) // its workers stop with it
		_ = nginx.Wait()
	}()

	g := &Gateway{cfg: Config{Port: nginxPort, Dir: dir}, id: "run-7"}
	if err := g.checkServing(context.Background()); err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		t.Fatalf("checkServing: %v\n%s", err, b)
	}
	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		host, path string
		status     int
		want       string // body, or Location of a redirect
	}{
		{"minik8s.com", "/path1", 200, "backend /"},
		{"minik8s.com", "/path1?q=1", 200, "backend /?q=1"},
		{"minik8s.com", "/path1/", 200, "backend /"},
		{"minik8s.com", "/path1/x/y", 200, "backend /x/y"},
		{"minik8s.com", "/path10", 404, ""},
		{"minik8s.com", "/path1/dir", 302, "/path1/dir/"},
		{"minik8s.com", "/path1/abs", 302, "/path1/abs/"},
		{"shop.io", "/foo", 200, "backend /foo"},
		{"shop.io", "/foo/", 200, "backend /foo/"},
		{"shop.io", "/foo/bar", 200, "backend /foo/bar"},
		{"shop.io", "/foobar", 404, ""},
		{"shop.io", "/exact", 200, "backend /exact"},
		{"shop.io", "/exact/", 404, ""},
	} {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", nginxPort, tc.path), nil)
		req.Host = tc.host
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("%s%s: %v", tc.host, tc.path, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		got := string(body)
		if loc := resp.Header.Get("Location"); loc != "" {
			got = loc
			if strings.Contains(loc, strconv.Itoa(nginxPort)) {
				t.Errorf("%s%s redirects to %s, naming nginx's port", tc.host, tc.path, loc)
			}
		}
		if resp.StatusCode != tc.status || (tc.want != "" && got != tc.want) {
			t.Errorf("%s%s: %d %q, want %d %q", tc.host, tc.path, resp.StatusCode, got, tc.status, tc.want)
		}
	}

	g.id = "run-6" // an nginx that serves another configuration
	if err := g.checkServing(context.Background()); err == nil || !strings.Contains(err.Error(), `answers with configuration "run-7"`) {
		t.Errorf("checkServing of another configuration: %v", err)
	}
}

// The functions' and workflows' routes exist on the default server while
// the router's Service does, and no Ingress takes them.
func TestBuiltinFunctionRoute(t *testing.T) {
	router := svc("minik8s-functions", "10.96.0.30", corev1.ServicePort{Port: 80})
	router.Namespace = "kube-system"
	grab := []*networkingv1.Ingress{ingress("grab", 1, networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
		IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{
			ingressPath("/function", networkingv1.PathTypePrefix, "a", 80)}}}}}})}
	services := lookup(router, svc("a", "10.96.0.31", corev1.ServicePort{Port: 80}))
	r, problems := build(services, nil, grab)
	var got []string
	for _, l := range r.hosts[defaultHost] {
		got = append(got, l.key()+" -> "+l.upstream)
	}
	want := []string{"= /function -> 10.96.0.30:80", "/function/ -> 10.96.0.30:80",
		"= /workflow -> 10.96.0.30:80", "/workflow/ -> 10.96.0.30:80", "= /trigger -> 10.96.0.30:80", "/trigger/ -> 10.96.0.30:80"}
	if !slices.Equal(got, want) {
		t.Errorf("default server routes = %q, want %q", got, want)
	}
	if probs := problems[objectKey{"Ingress", "default", "grab"}]; len(probs) == 0 || probs[0].reason != "PathConflict" {
		t.Errorf("the Ingress claiming /function: problems %v, want PathConflict", probs)
	}
	if r, _ := build(lookup(), nil, nil); len(r.hosts[defaultHost]) != 0 {
		t.Errorf("without the router's Service: routes %v", r.hosts[defaultHost])
	}
}
