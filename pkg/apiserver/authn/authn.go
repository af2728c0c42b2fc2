package authn

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"slices"
)

// Well-known groups.
const (
	// AllAuthenticated is in the groups of every authenticated user.
	AllAuthenticated = "system:authenticated"
)

// User is an authenticated caller.
type User struct {
	Name   string
	UID    string
	Groups []string // always includes AllAuthenticated
	// Extra is what else the credential says, as Kubernetes' user.Info
	// extra (a service account token's pod and node); nil for most.
	Extra map[string][]string
}

// Authenticator tells who made a request. ok is false with a nil error when
// the request carries no credentials of this kind; ok is false with an error
// when it carries credentials of this kind that are not valid.
type Authenticator interface {
	Authenticate(r *http.Request) (u *User, ok bool, err error)
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(r *http.Request) (*User, bool, error)

// Authenticate calls f(r).
func (f AuthenticatorFunc) Authenticate(r *http.Request) (*User, bool, error) { return f(r) }

// withAuthenticated returns groups with AllAuthenticated added when missing,
// never sharing the input's backing array.
func withAuthenticated(groups []string) []string {
	out := slices.Clone(groups)
	if !slices.Contains(out, AllAuthenticated) {
		out = append(out, AllAuthenticated)
	}
	return out
}

type x509Authenticator struct{ pool *x509.CertPool }

// NewX509 authenticates requests by their TLS client certificate: the first
// peer certificate must chain (through any further peer certificates) to a
// CA in pool and allow client authentication. The user name is its Subject
// CN, the groups its Subject O.
func NewX509(pool *x509.CertPool) Authenticator { return &x509Authenticator{pool: pool} }

func (a *x509Authenticator) Authenticate(r *http.Request) (*User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	if a.pool == nil {
		// A nil Roots would mean the system roots: never that.
		return nil, false, errors.New("x509: no client CA configured")
	}
	certs := r.TLS.PeerCertificates
	opts := x509.VerifyOptions{
		Roots:         a.pool,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	leaf := certs[0]
	if _, err := leaf.Verify(opts); err != nil {
		return nil, false, fmt.Errorf("x509: verify client certificate %q: %w", leaf.Subject.String(), err)
	}
	if leaf.Subject.CommonName == "" {
		return nil, false, errors.New("x509: client certificate has an empty common name")
	}
	return &User{Name: leaf.Subject.CommonName, Groups: withAuthenticated(leaf.Subject.Organization)}, true, nil
}

type union []Authenticator

// Union tries the authenticators in order and returns the first success.
// When none succeeds, ok is false and the error joins the errors they
// returned (nil when no request carried credentials of any kind).
func Union(a ...Authenticator) Authenticator {
	return union(slices.DeleteFunc(slices.Clone(a), func(x Authenticator) bool { return x == nil }))
}

func (u union) Authenticate(r *http.Request) (*User, bool, error) {
	var errs []error
	for _, a := range u {
		user, ok, err := a.Authenticate(r)
		if ok && user != nil {
			return user, true, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return nil, false, errors.Join(errs...)
}

type userKey struct{}

// WithUser returns a copy of ctx carrying u.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user stored in ctx by WithUser (Middleware does that
// for every authenticated request).
func UserFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	return u, ok && u != nil
}
