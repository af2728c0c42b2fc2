package authn

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"path"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Middleware authenticates every request with a. Authenticated requests
// reach next with the User in their context (see UserFrom). Others get 401
// with a Kubernetes Status body (reason Unauthorized, message
// "Unauthorized"), except requests for the public paths, which reach next
// without a User. A public entry matches its exact path, or, when it ends
// in "*", every path with the prefix before the "*" (e.g. "/healthz/*").
// Only clean paths (no "//", "." or ".." segments) can be public.
func Middleware(a Authenticator, public []string, next http.Handler) http.Handler {
	isPublic := publicMatcher(public)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok, err := a.Authenticate(r)
		if ok && u != nil {
			uu := *u
			uu.Groups = withAuthenticated(u.Groups)
			next.ServeHTTP(w, r.WithContext(WithUser(r.Context(), &uu)))
			return
		}
		if isPublic(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		if err != nil {
			slog.Debug("unable to authenticate the request", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
		}
		WriteUnauthorized(w)
	})
}

func publicMatcher(public []string) func(string) bool {
	exact := map[string]bool{}
	var prefixes []string
	for _, p := range public {
		if pre, ok := strings.CutSuffix(p, "*"); ok {
			prefixes = append(prefixes, pre)
		} else {
			exact[p] = true
		}
	}
	return func(p string) bool {
		if !isClean(p) {
			return false
		}
		if exact[p] {
			return true
		}
		for _, pre := range prefixes {
			if strings.HasPrefix(p, pre) {
				return true
			}
		}
		return false
	}
}

// isClean reports whether p is an absolute path without empty, "." or ".."
// segments (a trailing slash is fine).
func isClean(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}

// UnauthorizedStatus is the Status sent with every 401, as kube-apiserver
// sends it.
func UnauthorizedStatus() *metav1.Status {
	st := apierrors.NewUnauthorized("Unauthorized").Status()
	st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	return &st
}

// WriteUnauthorized answers 401 with UnauthorizedStatus as JSON.
func WriteUnauthorized(w http.ResponseWriter) {
	body, err := json.Marshal(UnauthorizedStatus())
	if err != nil { // cannot happen for a Status
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write(append(body, '\n'))
}
