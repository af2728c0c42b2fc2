package authn_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/minik8s/minik8s/pkg/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/bootstrap/token"
)

func TestBootstrapToken(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	secrets := map[string]*corev1.Secret{}
	add := func(tok token.Token, opts token.Options, created time.Time) {
		s, err := token.NewSecret(tok, opts, created)
		if err != nil {
			t.Fatal(err)
		}
		secrets[s.Name] = s
	}
	node := token.Token{ID: "abcdef", Secret: "0123456789abcdef"}
	add(node, token.Options{ExtraGroups: []string{token.NodeGroup}}, now)
	expired := token.Token{ID: "expire", Secret: "0123456789abcdef"}
	add(expired, token.Options{TTL: time.Hour}, now.Add(-2*time.Hour))
	lookupFails := token.Token{ID: "broken", Secret: "0123456789abcdef"}
	get := func(_ context.Context, name string) (*corev1.Secret, error) {
		if name == lookupFails.SecretName() {
			return nil, errors.New("etcd is down")
		}
		if s, ok := secrets[name]; ok {
			return s.DeepCopy(), nil
		}
		return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
	}
	a := authn.NewBootstrapToken(get, func() time.Time { return now })

	tests := []struct {
		name    string
		header  string
		wantOK  bool
		wantErr bool
		want    []string // user, then groups
	}{
		{name: "no credentials"},
		{name: "not a bootstrap token", header: "Bearer Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4"},
		{name: "basic auth", header: "Basic YWJjOmRlZg=="},
		{name: "valid", header: "Bearer " + node.String(), wantOK: true,
			want: []string{"system:bootstrap:abcdef", "system:bootstrappers", token.NodeGroup, "system:authenticated"}},
		{name: "lower-case scheme", header: "bearer " + node.String(), wantOK: true,
			want: []string{"system:bootstrap:abcdef", "system:bootstrappers", token.NodeGroup, "system:authenticated"}},
		{name: "wrong secret", header: "Bearer abcdef.0000000000000000", wantErr: true},
		{name: "unknown id", header: "Bearer zzzzzz.0123456789abcdef", wantErr: true},
		{name: "expired", header: "Bearer " + expired.String(), wantErr: true},
		{name: "lookup fails", header: "Bearer " + lookupFails.String(), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			u, ok, err := a.Authenticate(r)
			if ok != tt.wantOK || (err != nil) != tt.wantErr {
				t.Fatalf("Authenticate = %+v, %v, %v", u, ok, err)
			}
			if !ok {
				if u != nil {
					t.Fatalf("a user without ok: %+v", u)
				}
				return
			}
			if !sameUser(u, tt.want[0], "", tt.want[1:]...) {
				t.Fatalf("user %+v, want %v", u, tt.want)
			}
			if r.Header.Get("Authorization") != "" {
				t.Fatal("the token stayed in the request")
			}
		})
	}
}
