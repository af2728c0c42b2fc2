package authn_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/pki"
)

func newPKI(t *testing.T) *pki.Bundle {
	t.Helper()
	b, err := pki.Ensure(pki.Config{Dir: filepath.Join(t.TempDir(), "pki")})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func certChain(t *testing.T, certPEM, keyPEM []byte) []*x509.Certificate {
	t.Helper()
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return []*x509.Certificate{pair.Leaf}
}

func sameUser(got *authn.User, name, uid string, groups ...string) bool {
	return got != nil && got.Name == name && got.UID == uid && slices.Equal(got.Groups, groups)
}

func TestX509(t *testing.T) {
	b := newPKI(t)
	other := newPKI(t)
	nodeCert, nodeKey, err := b.IssueClientCert("system:node:n1", []string{"system:nodes"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		pool    *x509.CertPool
		tls     *tls.ConnectionState
		wantOK  bool
		wantErr bool
		check   func(*authn.User) bool
	}{
		{name: "plain HTTP", pool: b.CAPool},
		{name: "TLS without client cert", pool: b.CAPool, tls: &tls.ConnectionState{}},
		{
			name: "admin", pool: b.CAPool, wantOK: true,
			tls: &tls.ConnectionState{PeerCertificates: certChain(t, b.AdminCertPEM, b.AdminKeyPEM)},
			check: func(u *authn.User) bool {
				return sameUser(u, "minik8s-admin", "", "system:masters", "system:authenticated")
			},
		},
		{
			name: "issued node cert", pool: b.CAPool, wantOK: true,
			tls: &tls.ConnectionState{PeerCertificates: certChain(t, nodeCert, nodeKey)},
			check: func(u *authn.User) bool {
				return sameUser(u, "system:node:n1", "", "system:nodes", "system:authenticated")
			},
		},
		{
			name: "cert from another CA", pool: b.CAPool, wantErr: true,
			tls: &tls.ConnectionState{PeerCertificates: certChain(t, other.AdminCertPEM, other.AdminKeyPEM)},
		},
		{
			name: "serving cert is no client cert", pool: b.CAPool, wantErr: true,
			tls: &tls.ConnectionState{PeerCertificates: []*x509.Certificate{b.Serving.Leaf}},
		},
		{
			name: "no CA configured", pool: nil, wantErr: true,
			tls: &tls.ConnectionState{PeerCertificates: certChain(t, b.AdminCertPEM, b.AdminKeyPEM)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api", nil)
			r.TLS = tc.tls
			u, ok, err := authn.NewX509(tc.pool).Authenticate(r)
			if ok != tc.wantOK || (err != nil) != tc.wantErr {
				t.Fatalf("ok=%v err=%v; want ok=%v err=%v", ok, err, tc.wantOK, tc.wantErr)
			}
			if tc.check != nil && !tc.check(u) {
				t.Errorf("user = %+v", u)
			}
		})
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestTokenFile(t *testing.T) {
	const file = `tok-alice,alice,uid-a,"dev,ops"
tok-bob, bob, uid-b
  tok-carol,carol,uid-c,"system:masters"

,nobody,uid-x
tok-dup,first,uid-1
tok-dup,second,uid-2,g
`
	path := filepath.Join(t.TempDir(), "tokens.csv")
	writeFile(t, path, file)
	a, err := authn.NewTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		header  string
		wantOK  bool
		wantErr bool
		check   func(*authn.User) bool
	}{
		{name: "no header"},
		{name: "basic auth", header: "Basic YWxpY2U6cGFzcw=="},
		{name: "empty bearer", header: "Bearer "},
		{name: "bearer only", header: "Bearer"},
		{
			name: "alice", header: "Bearer tok-alice", wantOK: true,
			check: func(u *authn.User) bool { return sameUser(u, "alice", "uid-a", "dev", "ops", "system:authenticated") },
		},
		{
			name: "scheme is case-insensitive", header: "bearer   tok-bob ", wantOK: true,
			check: func(u *authn.User) bool { return sameUser(u, "bob", "uid-b", "system:authenticated") },
		},
		{
			name: "leading spaces", header: "Bearer tok-carol", wantOK: true,
			check: func(u *authn.User) bool {
				return sameUser(u, "carol", "uid-c", "system:masters", "system:authenticated")
			},
		},
		{
			name: "last duplicate wins", header: "Bearer tok-dup", wantOK: true,
			check: func(u *authn.User) bool { return sameUser(u, "second", "uid-2", "g", "system:authenticated") },
		},
		{name: "unknown token", header: "Bearer tok-mallory", wantErr: true},
		{name: "prefix of a token", header: "Bearer tok-alic", wantErr: true},
		{name: "token with extra", header: "Bearer tok-alice2", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			u, ok, err := a.Authenticate(r)
			if ok != tc.wantOK || (err != nil) != tc.wantErr {
				t.Fatalf("ok=%v err=%v; want ok=%v err=%v", ok, err, tc.wantOK, tc.wantErr)
			}
			if tc.check != nil && !tc.check(u) {
				t.Errorf("user = %+v", u)
			}
			if ok && r.Header.Get("Authorization") != "" {
				t.Errorf("Authorization header kept after authenticating")
			}
		})
	}
}

func TestTokenFileBadFiles(t *testing.T) {
	tests := []struct {
		name string
		data string
	}{
		{"too few columns", "tok,alice\n"},
		{"empty user", "tok,,uid\n"},
		{"broken quoting", "tok,alice,uid,\"dev\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tokens.csv")
			writeFile(t, path, tc.data)
			if _, err := authn.NewTokenFile(path); err == nil {
				t.Fatal("NewTokenFile accepted a bad file")
			}
		})
	}
	if _, err := authn.NewTokenFile(filepath.Join(t.TempDir(), "missing.csv")); err == nil {
		t.Fatal("NewTokenFile accepted a missing file")
	}
}

func TestTokenFileReload(t *testing.T) {
	b := newPKI(t)
	a, err := authn.NewTokenFile(b.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	auth := func(tok string) (*authn.User, bool, error) {
		r := httptest.NewRequest("GET", "/api", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return a.Authenticate(r)
	}
	if _, ok, _ := auth(b.AdminToken); !ok {
		t.Fatal("admin token rejected")
	}
	tok, err := b.AddToken("system:node:n1", []string{"system:nodes"})
	if err != nil {
		t.Fatal(err)
	}
	u, ok, err := auth(tok)
	if !ok || err != nil || u.Name != "system:node:n1" || u.UID == "" ||
		!slices.Equal(u.Groups, []string{"system:nodes", "system:authenticated"}) {
		t.Fatalf("new token: user %+v ok %v err %v", u, ok, err)
	}

	// A broken file fails closed, a fixed one works again.
	good, _ := os.ReadFile(b.TokenFile)
	writeFile(t, b.TokenFile, "garbage\n")
	if _, ok, err := auth(b.AdminToken); ok || err == nil {
		t.Fatalf("broken file: ok=%v err=%v", ok, err)
	}
	writeFile(t, b.TokenFile, string(good))
	if _, ok, _ := auth(tok); !ok {
		t.Fatal("token rejected after the file was fixed")
	}

	// Removing a row revokes the token.
	var kept []string
	for _, line := range strings.Split(strings.TrimSpace(string(good)), "\n") {
		if !strings.HasPrefix(line, tok+",") {
			kept = append(kept, line)
		}
	}
	writeFile(t, b.TokenFile, strings.Join(kept, "\n")+"\n")
	if _, ok, err := auth(tok); ok || err == nil {
		t.Fatalf("revoked token: ok=%v err=%v", ok, err)
	}
	if _, ok, _ := auth(b.AdminToken); !ok {
		t.Fatal("admin token rejected after revoking another")
	}
}

func TestUnion(t *testing.T) {
	alice := &authn.User{Name: "alice", Groups: []string{"system:authenticated"}}
	none := authn.AuthenticatorFunc(func(*http.Request) (*authn.User, bool, error) { return nil, false, nil })
	bad := authn.AuthenticatorFunc(func(*http.Request) (*authn.User, bool, error) { return nil, false, errors.New("bad") })
	good := authn.AuthenticatorFunc(func(*http.Request) (*authn.User, bool, error) { return alice, true, nil })
	tests := []struct {
		name    string
		as      []authn.Authenticator
		wantOK  bool
		wantErr bool
	}{
		{"empty", nil, false, false},
		{"no credentials", []authn.Authenticator{none, none}, false, false},
		{"error then success", []authn.Authenticator{bad, good}, true, false},
		{"success first", []authn.Authenticator{good, bad}, true, false},
		{"errors only", []authn.Authenticator{none, bad}, false, true},
		{"nil skipped", []authn.Authenticator{nil, good}, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, ok, err := authn.Union(tc.as...).Authenticate(httptest.NewRequest("GET", "/", nil))
			if ok != tc.wantOK || (err != nil) != tc.wantErr {
				t.Fatalf("ok=%v err=%v; want ok=%v err=%v", ok, err, tc.wantOK, tc.wantErr)
			}
			if ok && u != alice {
				t.Errorf("user = %+v", u)
			}
		})
	}
}

func TestUserContext(t *testing.T) {
	if _, ok := authn.UserFrom(context.Background()); ok {
		t.Fatal("user in empty context")
	}
	u := &authn.User{Name: "alice"}
	if got, ok := authn.UserFrom(authn.WithUser(context.Background(), u)); !ok || got != u {
		t.Fatalf("UserFrom = %v, %v", got, ok)
	}
	if _, ok := authn.UserFrom(authn.WithUser(context.Background(), nil)); ok {
		t.Fatal("nil user reported present")
	}
}

func checkUnauthorizedBody(t *testing.T, contentType string, body []byte) {
	t.Helper()
	if contentType != "application/json" {
		t.Errorf("Content-Type = %q", contentType)
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	want := map[string]any{
		"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": "Unauthorized", "reason": "Unauthorized", "code": float64(401),
	}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("body = %s, want %s", gotJSON, wantJSON)
	}
}

func TestMiddleware(t *testing.T) {
	// The fake authenticator reads the user name from a header.
	a := authn.AuthenticatorFunc(func(r *http.Request) (*authn.User, bool, error) {
		switch name := r.Header.Get("X-Test-User"); name {
		case "":
			return nil, false, nil
		case "bad":
			return nil, false, errors.New("bad credentials")
		default:
			return &authn.User{Name: name, Groups: []string{"g"}}, true, nil
		}
	})
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, ok := authn.UserFrom(r.Context()); ok {
			w.Write([]byte(u.Name + ":" + strings.Join(u.Groups, ",")))
			return
		}
		w.Write([]byte("anonymous"))
	})
	h := authn.Middleware(a, []string{"/healthz", "/version", "/readyz/*"}, next)
	tests := []struct {
		name     string
		path     string
		user     string
		wantCode int
		wantBody string
	}{
		{"authenticated", "/api/v1/pods", "alice", 200, "alice:g,system:authenticated"},
		{"no credentials", "/api/v1/pods", "", 401, ""},
		{"bad credentials", "/api/v1/pods", "bad", 401, ""},
		{"public path", "/healthz", "", 200, "anonymous"},
		{"public path with bad credentials", "/version", "bad", 200, "anonymous"},
		{"public path with user", "/healthz", "alice", 200, "alice:g,system:authenticated"},
		{"public prefix", "/readyz/etcd", "", 200, "anonymous"},
		{"public prefix itself", "/readyz/", "", 200, "anonymous"},
		{"dot segment", "/readyz/./etcd", "", 401, ""},
		{"relative", "healthz", "", 401, ""},
		{"not a prefix entry", "/healthz/etcd", "", 401, ""},
		{"similar name", "/healthzz", "", 401, ""},
		{"dot-dot escape", "/readyz/../api/v1/secrets", "", 401, ""},
		{"double slash", "//healthz", "", 401, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "http://example.test/", nil)
			r.URL.Path = tc.path
			if tc.user != "" {
				r.Header.Set("X-Test-User", tc.user)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.wantCode {
				t.Fatalf("code %d, want %d", w.Code, tc.wantCode)
			}
			if tc.wantCode == 401 {
				checkUnauthorizedBody(t, w.Header().Get("Content-Type"), w.Body.Bytes())
			} else if w.Body.String() != tc.wantBody {
				t.Errorf("body %q, want %q", w.Body.String(), tc.wantBody)
			}
		})
	}
}

func TestTokenFileConcurrentAdds(t *testing.T) {
	b := newPKI(t)
	a, err := authn.NewTokenFile(b.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	errs := make(chan error, 2*n)
	done := make(chan struct{})
	go func() { // keep authenticating the admin while the file changes
		defer close(done)
		for i := 0; i < 200; i++ {
			r := httptest.NewRequest("GET", "/api", nil)
			r.Header.Set("Authorization", "Bearer "+b.AdminToken)
			if _, ok, err := a.Authenticate(r); !ok {
				errs <- errors.Join(errors.New("admin token rejected during reload"), err)
				return
			}
		}
	}()
	toks := make(chan string, n)
	for i := 0; i < n; i++ {
		go func() {
			tok, err := b.AddToken("user", []string{"g"})
			if err != nil {
				errs <- err
			}
			toks <- tok
		}()
	}
	for i := 0; i < n; i++ {
		tok := <-toks
		r := httptest.NewRequest("GET", "/api", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		if _, ok, err := a.Authenticate(r); !ok {
			t.Errorf("token %d rejected: %v", i, err)
		}
	}
	<-done
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
