package authn

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/bootstrap/token"
)

// SecretGetter reads the Secret name of kube-system, decrypted; it returns an
// error (NotFound or otherwise) when it cannot.
type SecretGetter func(ctx context.Context, name string) (*corev1.Secret, error)

type bootstrapTokens struct {
	get SecretGetter
	now func() time.Time
}

// NewBootstrapToken authenticates "Authorization: Bearer <id>.<secret>"
// against the bootstrap token Secrets of kube-system, as Kubernetes'
// bootstrap token authenticator does (rules: token.Verify). A valid token
// is the user "system:bootstrap:<id>" in "system:bootstrappers" and the
// Secret's auth-extra-groups. Bearer tokens of another shape are left to
// other authenticators. now nil means time.Now.
func NewBootstrapToken(get SecretGetter, now func() time.Time) Authenticator {
	if now == nil {
		now = time.Now
	}
	return &bootstrapTokens{get: get, now: now}
}

var errInvalidBootstrapToken = errors.New("invalid bootstrap token")

func (a *bootstrapTokens) Authenticate(r *http.Request) (*User, bool, error) {
	bearer, ok := bearerToken(r)
	if !ok {
		return nil, false, nil
	}
	t, err := token.Parse(bearer)
	if err != nil {
		return nil, false, nil // not a bootstrap token
	}
	s, err := a.get(r.Context(), t.SecretName())
	if err != nil {
		return nil, false, fmt.Errorf("%w %s: %w", errInvalidBootstrapToken, t.ID, err)
	}
	groups, err := token.Verify(s, t, a.now())
	if err != nil {
		return nil, false, fmt.Errorf("%w %s: %w", errInvalidBootstrapToken, t.ID, err)
	}
	r.Header.Del("Authorization")
	return &User{Name: t.User(), Groups: withAuthenticated(groups)}, true, nil
}
