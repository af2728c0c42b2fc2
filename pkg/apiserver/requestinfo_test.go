package apiserver

import (
	"net/http/httptest"
	"testing"
)

// ?watch= reads as Kubernetes' parameter codec reads a boolean: only
// "0" and "false" (any case) are false.
func TestWatchParameter(t *testing.T) {
	for query, want := range map[string]string{
		"":             "list",
		"?watch=0":     "list",
		"?watch=false": "list",
		"?watch=FALSE": "list",
		"?watch=1":     "watch",
		"?watch=true":  "watch",
		"?watch=yes":   "watch",
		"?watch=":      "watch",
	} {
		r := httptest.NewRequest("GET", "/api/v1/namespaces/default/configmaps"+query, nil)
		if got := parseRequestInfo(r).Verb; got != want {
			t.Errorf("GET %q: verb %s, want %s", query, got, want)
		}
	}
}

// The proxy subresource keeps what follows it, as written, for the backend.
func TestProxyPath(t *testing.T) {
	for _, tc := range []struct{ path, name, proxyPath string }{
		{"/api/v1/namespaces/d/services/web/proxy", "web", ""},
		{"/api/v1/namespaces/d/services/web/proxy/", "web", "/"},
		{"/api/v1/namespaces/d/services/http:web:80/proxy/a/b", "http:web:80", "/a/b"},
		{"/api/v1/namespaces/d/services/web:http/proxy/a/b/", "web:http", "/a/b/"},
		{"/api/v1/namespaces/d/pods/p:8080/proxy/metrics", "p:8080", "/metrics"},
	} {
		info := parseRequestInfo(httptest.NewRequest("POST", tc.path, nil))
		if !info.IsResource || info.Subresource != "proxy" || info.Name != tc.name || info.ProxyPath != tc.proxyPath || info.Verb != "create" {
			t.Errorf("%s: got %+v, want name %q, proxy path %q", tc.path, info, tc.name, tc.proxyPath)
		}
	}
	if info := parseRequestInfo(httptest.NewRequest("GET", "/api/v1/namespaces/d/services/web/status/x", nil)); info.IsResource {
		t.Errorf("deeper path that is not a proxy: %+v, want not a resource", info)
	}
}
