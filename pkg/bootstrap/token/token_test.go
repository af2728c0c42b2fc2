package token

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    Token
		wantErr bool
	}{
		{in: "abcdef.0123456789abcdef", want: Token{ID: "abcdef", Secret: "0123456789abcdef"}},
		{in: "a1b2c3.zzzzzzzzzzzzzzzz", want: Token{ID: "a1b2c3", Secret: "zzzzzzzzzzzzzzzz"}},
		{in: "ABCDEF.0123456789abcdef", wantErr: true},
		{in: "abcde.0123456789abcdef", wantErr: true},
		{in: "abcdef.0123456789abcde", wantErr: true},
		{in: "abcdef0123456789abcdef", wantErr: true},
		{in: "abcdef.0123456789abcdef ", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("Parse(%q) = %+v, %v", tt.in, got, err)
			}
		})
	}
}

func TestGenerate(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		tok, err := Generate()
		if err != nil {
			t.Fatal(err)
		}
		if back, err := Parse(tok.String()); err != nil || back != tok {
			t.Fatalf("generated %q does not parse: %v", tok, err)
		}
		if seen[tok.ID] {
			t.Fatalf("id %s twice in 100 tokens", tok.ID)
		}
		seen[tok.ID] = true
	}
	tok := Token{ID: "abcdef", Secret: "0123456789abcdef"}
	if tok.SecretName() != "bootstrap-token-abcdef" || tok.User() != "system:bootstrap:abcdef" {
		t.Fatalf("names: %s %s", tok.SecretName(), tok.User())
	}
}

func TestParseJoin(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	tests := []struct {
		in      string
		want    JoinToken
		wantErr string
	}{
		{in: "K10" + hash + "::abcdef.0123456789abcdef", want: JoinToken{CAHash: hash, Token: Token{"abcdef", "0123456789abcdef"}}},
		{in: "K10" + strings.ToUpper(hash) + "::abcdef.0123456789abcdef\n", want: JoinToken{CAHash: hash, Token: Token{"abcdef", "0123456789abcdef"}}},
		{in: "abcdef.0123456789abcdef", want: JoinToken{Token: Token{"abcdef", "0123456789abcdef"}}},
		{in: "K10" + hash + ":abcdef.0123456789abcdef", wantErr: `no "::"`},
		{in: "K10abc::abcdef.0123456789abcdef", wantErr: "64 hex digits"},
		{in: "K10" + hash + "::server:password", wantErr: "bootstrap token"},
		{in: "Zm9vYmFyYmF6cXV4", wantErr: "bootstrap token"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseJoin(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseJoin(%q) = %+v, %v; want error %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseJoin(%q) = %+v, %v", tt.in, got, err)
			}
			if back, err := ParseJoin(got.String()); err != nil || back != got {
				t.Fatalf("round trip of %q: %+v, %v", got, back, err)
			}
		})
	}
}

func TestCAHash(t *testing.T) {
	// Any DER will do: the hash is over the certificate's bytes.
	der := []byte("not really a certificate")
	caPEM := []byte("-----BEGIN CERTIFICATE-----\nbm90IHJlYWxseSBhIGNlcnRpZmljYXRl\n-----END CERTIFICATE-----\n")
	got, err := CAHash(caPEM)
	if err != nil || got != HashCert(der) || len(got) != 64 {
		t.Fatalf("CAHash = %q, %v; want %q", got, err, HashCert(der))
	}
	if !MatchesHash(der, strings.ToUpper(got)) || MatchesHash([]byte("other"), got) {
		t.Fatal("MatchesHash")
	}
	if _, err := CAHash([]byte("junk")); err == nil {
		t.Fatal("CAHash of junk succeeded")
	}
}

func TestVerify(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tok := Token{ID: "abcdef", Secret: "0123456789abcdef"}
	valid := func() *corev1.Secret {
		s, err := NewSecret(tok, Options{TTL: time.Hour, ExtraGroups: []string{NodeGroup}}, now.Add(-time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name       string
		mutate     func(s *corev1.Secret)
		tok        Token
		wantGroups []string
		wantErr    string
	}{
		{name: "valid", wantGroups: []string{Group, NodeGroup}},
		{name: "no expiry, no extra groups", mutate: func(s *corev1.Secret) {
			delete(s.Data, KeyExpiration)
			delete(s.Data, KeyExtraGroups)
		}, wantGroups: []string{Group}},
		{name: "wrong secret", tok: Token{ID: "abcdef", Secret: "0123456789abcdeX"}, wantErr: "wrong token secret"},
		{name: "other token's secret", tok: Token{ID: "zzzzzz", Secret: "0123456789abcdef"}, wantErr: "not token zzzzzz's"},
		{name: "expired", mutate: func(s *corev1.Secret) { s.Data[KeyExpiration] = []byte(now.Add(-time.Second).Format(time.RFC3339)) }, wantErr: "expired"},
		{name: "expires now", mutate: func(s *corev1.Secret) { s.Data[KeyExpiration] = []byte(now.Format(time.RFC3339)) }, wantErr: "expired"},
		{name: "bad expiration", mutate: func(s *corev1.Secret) { s.Data[KeyExpiration] = []byte("tomorrow") }, wantErr: "bad expiration"},
		{name: "wrong type", mutate: func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }, wantErr: "type"},
		{name: "other namespace", mutate: func(s *corev1.Secret) { s.Namespace = "default" }, wantErr: "not token"},
		{name: "id mismatch", mutate: func(s *corev1.Secret) { s.Data[KeyID] = []byte("ghijkl") }, wantErr: "token-id"},
		{name: "not for authentication", mutate: func(s *corev1.Secret) { delete(s.Data, KeyUsageAuthentication) }, wantErr: "not for authentication"},
		{name: "being deleted", mutate: func(s *corev1.Secret) { s.DeletionTimestamp = &metav1.Time{Time: now} }, wantErr: "being deleted"},
		{name: "bad extra group", mutate: func(s *corev1.Secret) { s.Data[KeyExtraGroups] = []byte("system:masters") }, wantErr: "extra group"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := valid()
			if tt.mutate != nil {
				tt.mutate(s)
			}
			use := tok
			if tt.tok != (Token{}) {
				use = tt.tok
			}
			groups, err := Verify(s, use, now)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Verify = %v, %v; want error %q", groups, err, tt.wantErr)
				}
				return
			}
			if err != nil || strings.Join(groups, ",") != strings.Join(tt.wantGroups, ",") {
				t.Fatalf("Verify = %v, %v; want %v", groups, err, tt.wantGroups)
			}
		})
	}
}

func TestNewSecret(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tok := Token{ID: "abcdef", Secret: "0123456789abcdef"}
	s, err := NewSecret(tok, Options{TTL: 24 * time.Hour, Description: "d"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "bootstrap-token-abcdef" || s.Namespace != "kube-system" || s.Type != "bootstrap.kubernetes.io/token" {
		t.Fatalf("secret %s/%s type %s", s.Namespace, s.Name, s.Type)
	}
	if got := string(s.Data[KeyExpiration]); got != "2030-01-02T00:00:00Z" {
		t.Fatalf("expiration %q", got)
	}
	if _, err := NewSecret(tok, Options{ExtraGroups: []string{"system:masters"}}, now); err == nil {
		t.Fatal("an extra group outside system:bootstrappers: was accepted")
	}
	if _, err := NewSecret(Token{ID: "x", Secret: "y"}, Options{}, now); err == nil {
		t.Fatal("a malformed token was accepted")
	}
}
