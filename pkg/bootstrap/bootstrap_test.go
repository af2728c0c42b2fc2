package bootstrap

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/bootstrap/token"
	"github.com/minik8s/minik8s/pkg/pki"
)

func newBundle(t *testing.T) *pki.Bundle {
	t.Helper()
	b, err := pki.Ensure(pki.Config{Dir: filepath.Join(t.TempDir(), "pki")})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// serve runs an HTTPS server presenting chain and returns its URL.
func serve(t *testing.T, chain tls.Certificate) string {
	t.Helper()
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("DiscoverCA sent a request")
	}))
	s.TLS = &tls.Config{Certificates: []tls.Certificate{chain}}
	s.StartTLS()
	t.Cleanup(s.Close)
	return strings.Replace(s.URL, "127.0.0.1", "localhost", 1)
}

func TestDiscoverCA(t *testing.T) {
	b, other := newBundle(t), newBundle(t)
	hash, err := token.CAHash(b.CAPEM)
	if err != nil {
		t.Fatal(err)
	}
	otherHash, _ := token.CAHash(other.CAPEM)
	// other's serving certificate sent along with b's CA: the CA is in the
	// chain, but it did not sign the server's certificate.
	forged := other.Serving
	forged.Certificate = [][]byte{other.Serving.Certificate[0], b.Serving.Certificate[1]}
	leafOnly := b.Serving
	leafOnly.Certificate = leafOnly.Certificate[:1]

	ctx := context.Background()
	good := serve(t, b.Serving)
	got, err := DiscoverCA(ctx, good, hash)
	if err != nil {
		t.Fatalf("DiscoverCA: %v", err)
	}
	if string(got) != string(b.CAPEM) {
		t.Fatalf("got CA\n%s\nwant\n%s", got, b.CAPEM)
	}
	if _, err := DiscoverCA(ctx, good, strings.ToUpper(hash)); err != nil {
		t.Fatalf("an upper-case hash: %v", err)
	}
	for name, tc := range map[string]struct {
		url, hash, wantErr string
	}{
		"another cluster's hash": {good, otherHash, "no CA certificate with the join token's hash"},
		"forged chain":           {serve(t, forged), hash, "does not verify"},
		"no CA in the chain":     {serve(t, leafOnly), hash, "no CA certificate"},
		"plain http":             {"http://localhost:1", hash, "not an https:// URL"},
		"nobody there":           {"https://localhost:1", hash, "reach"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := DiscoverCA(ctx, tc.url, tc.hash); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("DiscoverCA = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestJoinNeedsSomethingToTrust(t *testing.T) {
	b := newBundle(t)
	hash, _ := token.CAHash(b.CAPEM)
	other := newBundle(t)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		cfg     Config
		wantErr string
	}{
		"no token, nothing saved": {Config{Server: "https://localhost:1", NodeName: "n"}, "no join token"},
		"token without a CA":      {Config{Server: "https://localhost:1", NodeName: "n", Token: "abcdef.0123456789abcdef"}, "needs the cluster CA"},
		"CA that is not the token's": {Config{Server: "https://localhost:1", NodeName: "n", CAPEM: other.CAPEM,
			Token: "K10" + hash + "::abcdef.0123456789abcdef"}, "hash"},
		"malformed token": {Config{Server: "https://localhost:1", NodeName: "n", Token: "secret"}, "bootstrap token"},
		"no node name":    {Config{Server: "https://localhost:1", Token: "abcdef.0123456789abcdef"}, "node name"},
	} {
		t.Run(name, func(t *testing.T) {
			tc.cfg.Dir, tc.cfg.Logger = t.TempDir(), slog.New(slog.DiscardHandler)
			if _, err := Join(ctx, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Join = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestCheckCredential(t *testing.T) {
	b, other := newBundle(t), newBundle(t)
	certPEM, keyPEM, err := b.IssueClientCert("system:node:n1", []string{"system:nodes"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cred := append(certPEM, keyPEM...)
	now := b.AdminCert.Leaf.NotBefore.Add(2 * 3600e9)
	if _, err := checkCredential(cred, b.CAPEM, "n1", now); err != nil {
		t.Fatalf("a good credential: %v", err)
	}
	if _, err := checkCredential(cred, b.CAPEM, "n2", now); err == nil {
		t.Fatal("another node's credential passed")
	}
	if _, err := checkCredential(cred, other.CAPEM, "n1", now); err == nil {
		t.Fatal("another cluster's credential passed")
	}
	if _, err := checkCredential(cred, b.CAPEM, "n1", now.AddDate(2, 0, 0)); err == nil {
		t.Fatal("an expired credential passed")
	}
	_, otherKey, _ := b.IssueClientCert("system:node:n1", []string{"system:nodes"}, 0)
	if _, err := checkCredential(append(certPEM, otherKey...), b.CAPEM, "n1", now); err == nil {
		t.Fatal("a certificate with another key passed")
	}
}
