package authn

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/minik8s/minik8s/pkg/serviceaccount"
)

// ObjectGetter reads one object from the cluster's store (NotFound when
// it is not there); namespace is empty for cluster-scoped resources.
type ObjectGetter func(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error)

type serviceAccountTokens struct {
	verify *serviceaccount.Verifier
	get    ObjectGetter
	now    func() time.Time

	// cache keeps tokens found valid for tokenCacheTTL (or until they
	// expire), as kube-apiserver's token cache does: controllers send one
	// token with every request, and each check reads the account and what
	// the token is bound to from storage.
	mu    sync.Mutex
	cache map[[sha256.Size]byte]cachedUser
}

type cachedUser struct {
	user  User
	until time.Time
}

// tokenCacheTTL is kube-apiserver's default for valid tokens: a deleted
// account's or pod's token may work that much longer.
const (
	tokenCacheTTL     = 10 * time.Second
	tokenCacheEntries = 4096
)

// NewServiceAccountToken authenticates "Authorization: Bearer <JWT>"
// service account tokens, as Kubernetes' service account token
// authenticator does: verify checks the signature, issuer, audience and
// validity window; then the service account must still exist with the
// UID the token names, and so must the pod, Secret or Node the token is
// bound to (one deleted more than a minute ago no longer counts). The user
// is system:serviceaccount:<ns>:<name> with the account's UID, in
// system:serviceaccounts and system:serviceaccounts:<ns>, with the
// token's pod and node in Extra. Bearer tokens that are not JWTs of this
// issuer are left to other authenticators. now nil means time.Now.
func NewServiceAccountToken(verify *serviceaccount.Verifier, get ObjectGetter, now func() time.Time) Authenticator {
	if now == nil {
		now = time.Now
	}
	return &serviceAccountTokens{verify: verify, get: get, now: now, cache: map[[sha256.Size]byte]cachedUser{}}
}

func (a *serviceAccountTokens) cached(key [sha256.Size]byte) (*User, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.cache[key]
	if !ok || !a.now().Before(c.until) {
		return nil, false
	}
	u := c.user
	u.Groups = slices.Clone(u.Groups)
	u.Extra = maps.Clone(u.Extra)
	return &u, true
}

func (a *serviceAccountTokens) remember(key [sha256.Size]byte, u *User, expires time.Time) {
	now := a.now()
	until := now.Add(tokenCacheTTL)
	if !expires.IsZero() && expires.Before(until) {
		until = expires
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cache) >= tokenCacheEntries {
		for k, c := range a.cache {
			if !now.Before(c.until) {
				delete(a.cache, k)
			}
		}
		if len(a.cache) >= tokenCacheEntries {
			clear(a.cache)
		}
	}
	a.cache[key] = cachedUser{user: *u, until: until}
}

var errInvalidated = errors.New("service account token has been invalidated")

func (a *serviceAccountTokens) Authenticate(r *http.Request) (*User, bool, error) {
	bearer, ok := bearerToken(r)
	if !ok {
		return nil, false, nil
	}
	key := sha256.Sum256([]byte(bearer))
	if u, ok := a.cached(key); ok {
		r.Header.Del("Authorization")
		return u, true, nil
	}
	c, err := a.verify.Verify(bearer)
	if errors.Is(err, serviceaccount.ErrNotOurs) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	u, err := a.validate(r.Context(), c.Kubernetes)
	if err != nil {
		return nil, false, err
	}
	if c.ID != "" {
		if u.Extra == nil {
			u.Extra = map[string][]string{}
		}
		u.Extra[serviceaccount.CredentialIDKey] = []string{"JTI=" + c.ID}
	}
	var expires time.Time
	if c.ExpiresAt != nil {
		expires = c.ExpiresAt.Time
	}
	a.remember(key, u, expires)
	r.Header.Del("Authorization")
	return u, true, nil
}

// validate checks that what the claims name still exists, as Kubernetes'
// bound token validator does, and returns the user.
func (a *serviceAccountTokens) validate(ctx context.Context, k *serviceaccount.KubernetesClaims) (*User, error) {
	ns := k.Namespace
	// Things deleted before now-leeway no longer back a token.
	deletedBefore := a.now().Add(-serviceaccount.Leeway)
	gone := func(m metav1.Object) bool {
		return m.GetDeletionTimestamp() != nil && m.GetDeletionTimestamp().Time.Before(deletedBefore)
	}
	sa, err := getAs[*corev1.ServiceAccount](ctx, a.get, "serviceaccounts", ns, k.ServiceAccount.Name)
	if apierrors.IsNotFound(err) || (err == nil && gone(sa)) {
		return nil, fmt.Errorf("service account %s/%s has been deleted", ns, k.ServiceAccount.Name)
	}
	if err != nil {
		return nil, err
	}
	if string(sa.UID) != k.ServiceAccount.UID {
		return nil, fmt.Errorf("service account UID (%s) does not match claim (%s)", sa.UID, k.ServiceAccount.UID)
	}
	if ref := k.Secret; ref != nil {
		s, err := getAs[*corev1.Secret](ctx, a.get, "secrets", ns, ref.Name)
		if err != nil || gone(s) {
			return nil, errInvalidated
		}
		if string(s.UID) != ref.UID {
			return nil, fmt.Errorf("secret UID (%s) does not match service account secret ref claim (%s)", s.UID, ref.UID)
		}
	}
	u := &User{Name: serviceaccount.UserName(ns, sa.Name), UID: string(sa.UID), Groups: withAuthenticated(serviceaccount.Groups(ns))}
	extra := map[string][]string{}
	if ref := k.Pod; ref != nil {
		p, err := getAs[*corev1.Pod](ctx, a.get, "pods", ns, ref.Name)
		if err != nil || gone(p) {
			return nil, errInvalidated
		}
		if string(p.UID) != ref.UID {
			return nil, fmt.Errorf("pod UID (%s) does not match service account pod ref claim (%s)", p.UID, ref.UID)
		}
		extra[serviceaccount.PodNameKey] = []string{ref.Name}
		extra[serviceaccount.PodUIDKey] = []string{ref.UID}
	}
	if ref := k.Node; ref != nil {
		if k.Pod == nil {
			// Bound to the Node itself: it must still be there.
			n, err := getAs[*corev1.Node](ctx, a.get, "nodes", "", ref.Name)
			if err != nil {
				return nil, errInvalidated
			}
			if string(n.UID) != ref.UID {
				return nil, fmt.Errorf("node UID (%s) does not match service account node ref claim (%s)", n.UID, ref.UID)
			}
		}
		extra[serviceaccount.NodeNameKey] = []string{ref.Name}
		if ref.UID != "" {
			extra[serviceaccount.NodeUIDKey] = []string{ref.UID}
		}
	}
	if len(extra) > 0 {
		u.Extra = extra
	}
	return u, nil
}

// getAs reads core/v1 resource ns/name through get as a T.
func getAs[T runtime.Object](ctx context.Context, get ObjectGetter, resource, ns, name string) (T, error) {
	var zero T
	obj, err := get(ctx, corev1.SchemeGroupVersion.WithResource(resource), ns, name)
	if err != nil {
		return zero, err
	}
	t, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("%s %s/%s: got %T", resource, ns, name, obj)
	}
	return t, nil
}
