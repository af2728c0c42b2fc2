package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// A service account reads the issuer's OpenID discovery document and key
// set, and the key there verifies its token, as a relying party outside
// the cluster would; an anonymous client may not read them.
func TestServiceAccountIssuerDiscovery(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	sas := c.client.CoreV1().ServiceAccounts("default")
	if _, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "relying"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := sas.CreateToken(ctx, "relying", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(c.config)
	cfg.BearerToken = tok.Status.Token
	asAccount := kubernetes.NewForConfigOrDie(cfg).Discovery().RESTClient()

	raw, err := asAccount.Get().AbsPath("/.well-known/openid-configuration").DoRaw(ctx)
	if err != nil {
		t.Fatalf("discovery document as a service account: %v", err)
	}
	var doc struct {
		Issuer  string   `json:"issuer"`
		JWKSURI string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	if doc.Issuer != "https://kubernetes.default.svc.cluster.local" || !strings.HasSuffix(doc.JWKSURI, "/openid/v1/jwks") || len(doc.Algs) == 0 {
		t.Fatalf("discovery document %s", raw)
	}

	raw, err = asAccount.Get().AbsPath("/openid/v1/jwks").DoRaw(ctx)
	if err != nil {
		t.Fatalf("key set: %v", err)
	}
	var set struct {
		Keys []struct{ Kty, Kid, Alg, Crv, N, E, X, Y string } `json:"keys"`
	}
	if err := json.Unmarshal(raw, &set); err != nil || len(set.Keys) != 1 {
		t.Fatalf("key set %s: %v", raw, err)
	}
	k := set.Keys[0]
	num := func(s string) *big.Int {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("key set %s: %v", raw, err)
		}
		return new(big.Int).SetBytes(b)
	}
	var pub any
	switch k.Kty {
	case "EC":
		pub = &ecdsa.PublicKey{Curve: elliptic.P256(), X: num(k.X), Y: num(k.Y)}
	case "RSA":
		pub = &rsa.PublicKey{N: num(k.N), E: int(num(k.E).Int64())}
	default:
		t.Fatalf("key type %q", k.Kty)
	}
	parsed, err := jwt.Parse(tok.Status.Token, func(tk *jwt.Token) (any, error) {
		if tk.Header["kid"] != k.Kid {
			t.Errorf("token kid %v, key set kid %q", tk.Header["kid"], k.Kid)
		}
		return pub, nil
	}, jwt.WithValidMethods([]string{k.Alg}), jwt.WithIssuer(doc.Issuer))
	if err != nil || !parsed.Valid {
		t.Fatalf("the published key does not verify the account's token: %v", err)
	}

	anonymous := kubernetes.NewForConfigOrDie(rest.AnonymousClientConfig(c.config)).Discovery().RESTClient()
	if _, err := anonymous.Get().AbsPath("/openid/v1/jwks").DoRaw(ctx); !apierrors.IsUnauthorized(err) && !apierrors.IsForbidden(err) {
		t.Errorf("key set without credentials: %v, want 401 or 403", err)
	}
}
