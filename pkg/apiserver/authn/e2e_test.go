package authn_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minik8s/minik8s/pkg/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/pki"
)

var publicPaths = []string{"/healthz", "/livez", "/readyz", "/version"}

// whoAmI serves GET /api/v1/namespaces/default as a Namespace whose
// annotations say who asked; everything else is 404.
func whoAmI(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" {
		io.WriteString(w, "ok")
		return
	}
	if r.URL.Path != "/api/v1/namespaces/default" {
		http.NotFound(w, r)
		return
	}
	u, ok := authn.UserFrom(r.Context())
	if !ok {
		http.Error(w, "no user in context", http.StatusInternalServerError)
		return
	}
	ns := corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: "default", Annotations: map[string]string{
			"user":          u.Name,
			"uid":           u.UID,
			"groups":        strings.Join(u.Groups, ","),
			"authorization": r.Header.Get("Authorization"),
		}},
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(&ns)
}

func startServer(t *testing.T, b *pki.Bundle, clientAuth tls.ClientAuthType) *httptest.Server {
	t.Helper()
	tokens, err := authn.NewTokenFile(b.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	h := authn.Middleware(authn.Union(authn.NewX509(b.CAPool), tokens), publicPaths, http.HandlerFunc(whoAmI))
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{b.Serving},
		ClientAuth:   clientAuth,
		ClientCAs:    b.CAPool,
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // expected handshake failures
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestEndToEnd(t *testing.T) {
	b := newPKI(t)
	other := newPKI(t) // another cluster: another CA
	nodeToken, err := b.AddToken("system:node:n1", []string{"system:nodes"})
	if err != nil {
		t.Fatal(err)
	}

	for _, mode := range []struct {
		name string
		auth tls.ClientAuthType
	}{
		{"VerifyClientCertIfGiven", tls.VerifyClientCertIfGiven},
		{"RequestClientCert", tls.RequestClientCert},
	} {
		t.Run(mode.name, func(t *testing.T) {
			srv := startServer(t, b, mode.auth)
			kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
			if err := pki.WriteKubeconfig(kubeconfig, srv.URL, b); err != nil {
				t.Fatal(err)
			}
			adminConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			// anon trusts the server but presents no credentials.
			anon := rest.AnonymousClientConfig(adminConfig)
			withToken := func(tok string) *rest.Config {
				c := rest.AnonymousClientConfig(adminConfig)
				c.BearerToken = tok
				return c
			}
			foreignCert := rest.AnonymousClientConfig(adminConfig)
			foreignCert.CertData, foreignCert.KeyData = other.AdminCertPEM, other.AdminKeyPEM

			tests := []struct {
				name       string
				config     *rest.Config
				wantUser   string // "" means 401
				wantGroups []string
				wantUID    bool
				// handshakeFails: the TLS layer rejects the request before
				// any HTTP status exists.
				handshakeFails bool
			}{
				{"admin kubeconfig", adminConfig, "minik8s-admin", []string{"system:masters", "system:authenticated"}, false, false},
				{"no credentials", anon, "", nil, false, false},
				{"bad token", withToken("not-a-token"), "", nil, false, false},
				{"admin token", withToken(b.AdminToken), "minik8s-admin", []string{"system:masters", "system:authenticated"}, true, false},
				{"token from AddToken", withToken(nodeToken), "system:node:n1", []string{"system:nodes", "system:authenticated"}, true, false},
				// client-go always presents its certificate (it uses
				// GetClientCertificate), so with VerifyClientCertIfGiven the
				// handshake fails; with RequestClientCert NewX509 rejects it: 401.
				{"cert from another CA", foreignCert, "", nil, false, mode.auth == tls.VerifyClientCertIfGiven},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					cs, err := kubernetes.NewForConfig(tc.config)
					if err != nil {
						t.Fatal(err)
					}
					ns, err := cs.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
					if tc.handshakeFails {
						if err == nil || apierrors.ReasonForError(err) != metav1.StatusReasonUnknown ||
							!strings.Contains(err.Error(), "tls: unknown certificate authority") {
							t.Fatalf("got %v; want a TLS handshake failure", err)
						}
						return
					}
					if tc.wantUser == "" {
						if !apierrors.IsUnauthorized(err) {
							t.Fatalf("got %v, %v; want 401 Unauthorized", ns, err)
						}
						var st apierrors.APIStatus
						if !errors.As(err, &st) || st.Status().Message != "Unauthorized" || st.Status().Code != 401 {
							t.Errorf("status = %#v", err)
						}
						return
					}
					if err != nil {
						t.Fatalf("GET namespace: %v", err)
					}
					a := ns.Annotations
					if a["user"] != tc.wantUser || a["groups"] != strings.Join(tc.wantGroups, ",") || (a["uid"] != "") != tc.wantUID {
						t.Errorf("server saw %v", a)
					}
					if a["authorization"] != "" {
						t.Errorf("handler saw the Authorization header")
					}
				})
			}

			// Raw HTTP: the exact 401 body, and public paths without credentials.
			anonHTTP, err := rest.HTTPClientFor(anon)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := anonHTTP.Get(srv.URL + "/api/v1/namespaces/default")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 401 {
				t.Fatalf("anonymous GET: %d %s", resp.StatusCode, body)
			}
			checkUnauthorizedBody(t, resp.Header.Get("Content-Type"), body)
			resp, err = anonHTTP.Get(srv.URL + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != "ok" {
				t.Errorf("anonymous /healthz: %d %q", resp.StatusCode, body)
			}
		})
	}
}
