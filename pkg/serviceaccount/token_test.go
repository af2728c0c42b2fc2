package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func ecKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func issue(t *testing.T, s *Signer, b Bound, aud []string, at time.Time, life time.Duration) string {
	t.Helper()
	c, err := NewClaims(b, aud, at, life)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// payload decodes the claims of tok without verifying it.
func payload(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a JWS", tok)
	}
	data, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestClaimsAsKubernetesWritesThem(t *testing.T) {
	key := ecKey(t)
	s, err := NewSigner(DefaultIssuer, key)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tok := issue(t, s, Bound{Namespace: "ns", Name: "sa", UID: "sa-uid",
		Pod: &Ref{Name: "p", UID: "pod-uid"}, Node: &Ref{Name: "n1", UID: "node-uid"}}, []string{"api"}, now, time.Hour)
	got := payload(t, tok)
	want := map[string]any{
		"iss": DefaultIssuer, "sub": "system:serviceaccount:ns:sa", "aud": []any{"api"},
		"iat": float64(now.Unix()), "nbf": float64(now.Unix()), "exp": float64(now.Add(time.Hour).Unix()),
		"kubernetes.io": map[string]any{
			"namespace":      "ns",
			"serviceaccount": map[string]any{"name": "sa", "uid": "sa-uid"},
			"pod":            map[string]any{"name": "p", "uid": "pod-uid"},
			"node":           map[string]any{"name": "n1", "uid": "node-uid"},
		},
	}
	if jti, _ := got["jti"].(string); jti == "" {
		t.Errorf("no jti: %v", got)
	}
	delete(got, "jti")
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("claims\n got %s\nwant %s", gotJSON, wantJSON)
	}
	header, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	var h map[string]any
	_ = json.Unmarshal(header, &h)
	kid, _ := KeyID(key.Public())
	if h["alg"] != "ES256" || h["kid"] != kid || kid == "" {
		t.Errorf("header %s, want ES256 with kid %s", header, kid)
	}
	if _, err := NewClaims(Bound{Namespace: "ns", Name: "sa", Pod: &Ref{Name: "p"}, Secret: &Ref{Name: "s"}}, nil, now, time.Hour); err == nil {
		t.Error("a token bound to a pod and a secret was built")
	}
}

func TestVerify(t *testing.T) {
	key := ecKey(t)
	s, err := NewSigner(DefaultIssuer, key)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	v, err := NewVerifier(DefaultIssuer, nil, func() time.Time { return now }, key.Public())
	if err != nil {
		t.Fatal(err)
	}
	sa := Bound{Namespace: "ns", Name: "sa", UID: "sa-uid"}
	api := []string{DefaultIssuer}
	other, _ := NewSigner(DefaultIssuer, ecKey(t))
	foreign, _ := NewSigner("https://elsewhere.example", key)
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaSigner, err := NewSigner(DefaultIssuer, rk)
	if err != nil {
		t.Fatal(err)
	}
	good := issue(t, s, sa, api, now.Add(-time.Minute), time.Hour)
	// alg "none" with our claims.
	noneClaims, _ := NewClaims(sa, api, now, time.Hour)
	noneClaims.Issuer = DefaultIssuer
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, noneClaims).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	// A good token with its payload swapped for another account's.
	parts := strings.Split(good, ".")
	forged := strings.Split(issue(t, other, Bound{Namespace: "kube-system", Name: "admin", UID: "x"}, api, now, time.Hour), ".")
	tampered := parts[0] + "." + forged[1] + "." + parts[2]

	tests := []struct {
		name    string
		token   string
		verify  *Verifier
		notOurs bool
		wantErr string
	}{
		{name: "valid", token: good},
		{name: "expired", token: issue(t, s, sa, api, now.Add(-2*time.Hour), time.Hour), wantErr: "has expired"},
		{name: "expired within the leeway", token: issue(t, s, sa, api, now.Add(-time.Hour-30*time.Second), time.Hour)},
		{name: "not valid yet", token: issue(t, s, sa, api, now.Add(5*time.Minute), time.Hour), wantErr: "not valid yet"},
		{name: "another audience", token: issue(t, s, sa, []string{"vault"}, now, time.Hour), wantErr: `token audiences ["vault"] is invalid for the target audiences ["` + DefaultIssuer + `"]`},
		{name: "one audience of several", token: issue(t, s, sa, []string{"vault", DefaultIssuer}, now, time.Hour)},
		{name: "signed by another key", token: issue(t, other, sa, api, now, time.Hour), wantErr: "signature is invalid"},
		{name: "payload swapped", token: tampered, wantErr: "signature is invalid"},
		{name: "alg none", token: none, wantErr: "invalid service account token"},
		{name: "another issuer", token: issue(t, foreign, sa, api, now, time.Hour), notOurs: true},
		{name: "not a JWT", token: "abcdef.0123456789abcdef", notOurs: true},
		{name: "garbage with two dots", token: "a.b.c", notOurs: true},
		{name: "RSA key", token: issue(t, rsaSigner, sa, api, now, time.Hour),
			verify: mustVerifier(t, DefaultIssuer, nil, now, key.Public(), rk.Public())},
		{name: "RSA key unknown", token: issue(t, rsaSigner, sa, api, now, time.Hour), wantErr: "signature is invalid"},
		{name: "custom audiences", token: issue(t, s, sa, []string{"vault"}, now, time.Hour),
			verify: mustVerifier(t, DefaultIssuer, []string{"vault"}, now, key.Public())},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vv := v
			if tc.verify != nil {
				vv = tc.verify
			}
			c, err := vv.Verify(tc.token)
			switch {
			case tc.notOurs:
				if !errors.Is(err, ErrNotOurs) {
					t.Fatalf("err = %v, want ErrNotOurs", err)
				}
			case tc.wantErr != "":
				if err == nil || errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one with %q", err, tc.wantErr)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if c.Kubernetes.Namespace != "ns" || c.Kubernetes.ServiceAccount != (Ref{Name: "sa", UID: "sa-uid"}) || c.Subject != "system:serviceaccount:ns:sa" {
					t.Errorf("claims = %+v", c)
				}
			}
		})
	}
}

func mustVerifier(t *testing.T, iss string, aud []string, now time.Time, keys ...crypto.PublicKey) *Verifier {
	t.Helper()
	v, err := NewVerifier(iss, aud, func() time.Time { return now }, keys...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNames(t *testing.T) {
	if got := UserName("ns", "sa"); got != "system:serviceaccount:ns:sa" {
		t.Errorf("UserName = %q", got)
	}
	if ns, name, err := SplitUserName("system:serviceaccount:ns:sa"); err != nil || ns != "ns" || name != "sa" {
		t.Errorf("SplitUserName = %q %q %v", ns, name, err)
	}
	for _, bad := range []string{"alice", "system:serviceaccount:ns", "system:serviceaccount:ns:a:b", "system:serviceaccount:NS:sa"} {
		if _, _, err := SplitUserName(bad); err == nil {
			t.Errorf("SplitUserName(%q) accepted", bad)
		}
	}
	if got := Groups("ns"); !slices.Equal(got, []string{"system:serviceaccounts", "system:serviceaccounts:ns"}) {
		t.Errorf("Groups = %v", got)
	}
}
