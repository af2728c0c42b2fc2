package apiserver

import (
	"net/http"
	"net/textproto"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/minik8s/minik8s/pkg/apiserver/audit"
	"github.com/minik8s/minik8s/pkg/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/apiserver/authz"
)

// impersonate serves a request carrying Impersonate-* headers (kubectl
// --as, --as-group, --as-uid; client-go's ImpersonationConfig) as the
// user they name, once the authenticated user may impersonate each of
// them: the verb impersonate on users, groups, uids and userextras in
// authentication.k8s.io, or on serviceaccounts for a service account's
// user name, as Kubernetes checks it.
func (s *Server) impersonate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.Header.Get(authenticationv1.ImpersonateUserHeader)
		groups := r.Header.Values(authenticationv1.ImpersonateGroupHeader)
		uid := r.Header.Get(authenticationv1.ImpersonateUIDHeader)
		extra := map[string][]string{}
		for h, vs := range r.Header {
			if key, ok := strings.CutPrefix(h, textproto.CanonicalMIMEHeaderKey(authenticationv1.ImpersonateUserExtraHeaderPrefix)); ok {
				extra[strings.ToLower(key)] = vs
			}
		}
		u, authenticated := authn.UserFrom(r.Context())
		if name == "" && len(groups) == 0 && uid == "" && len(extra) == 0 || !authenticated || s.cfg.Authorizer == nil {
			next.ServeHTTP(w, r)
			return
		}
		if name == "" {
			writeError(w, apierrors.NewBadRequest("requested impersonation of groups, a uid or extra fields without impersonating a user"))
			return
		}
		checks := []authz.Attributes{}
		check := func(group, resource, subresource, namespace, name string) {
			checks = append(checks, authz.Attributes{User: userOf(u), IsResource: true, Verb: "impersonate",
				APIGroup: group, Resource: resource, Subresource: subresource, Namespace: namespace, Name: name})
		}
		as := &authn.User{Name: name, UID: uid, Groups: groups}
		if ns, sa, isSA := serviceAccountOf(name); isSA {
			check("", "serviceaccounts", "", ns, sa)
			if len(groups) == 0 {
				as.Groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}
			}
		} else {
			check(authenticationv1.SchemeGroupVersion.Group, "users", "", "", name)
		}
		for _, g := range groups {
			check(authenticationv1.SchemeGroupVersion.Group, "groups", "", "", g)
		}
		if uid != "" {
			check(authenticationv1.SchemeGroupVersion.Group, "uids", "", "", uid)
		}
		for key, values := range extra {
			for _, v := range values {
				check(authenticationv1.SchemeGroupVersion.Group, "userextras", key, "", v)
			}
		}
		for _, a := range checks {
			if d, reason, _ := s.cfg.Authorizer.Authorize(r.Context(), a); d != authz.Allow {
				audit.Annotate(r.Context(), audit.AnnDecision, "forbid")
				writeError(w, forbidden(a, reason))
				return
			}
		}
		if len(extra) > 0 {
			as.Extra = extra
		}
		if name == "system:anonymous" {
			as.Groups = append(as.Groups, "system:unauthenticated")
		} else if !slices.Contains(as.Groups, authn.AllAuthenticated) {
			as.Groups = append(as.Groups, authn.AllAuthenticated)
		}
		for _, h := range []string{authenticationv1.ImpersonateUserHeader, authenticationv1.ImpersonateGroupHeader, authenticationv1.ImpersonateUIDHeader} {
			r.Header.Del(h)
		}
		next.ServeHTTP(w, r.WithContext(authn.WithUser(r.Context(), as)))
	})
}

// serviceAccountOf splits a service account's user name,
// system:serviceaccount:<namespace>:<name>.
func serviceAccountOf(user string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	return namespace, name, ok && namespace != "" && name != ""
}
