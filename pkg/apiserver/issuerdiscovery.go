package apiserver

import (
	"encoding/json"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/minik8s/minik8s/pkg/serviceaccount"
)

// installIssuerDiscovery serves the service account issuer's OpenID
// Connect discovery document and key set, as kube-apiserver does, so a
// relying party can verify service account tokens on its own. RBAC lets
// service accounts read them (system:service-account-issuer-discovery);
// the key set names the apiserver's address as the client reached it.
func (s *Server) installIssuerDiscovery(mux *http.ServeMux) {
	signer := s.cfg.ServiceAccountTokens
	if signer == nil {
		return
	}
	serve := func(contentType string, body func(r *http.Request) (any, error)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				writeError(w, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "serviceaccounts"}, r.Method))
				return
			}
			v, err := body(r)
			if err != nil {
				writeError(w, apierrors.NewInternalError(err))
				return
			}
			data, err := json.Marshal(v)
			if err != nil {
				writeError(w, apierrors.NewInternalError(err))
				return
			}
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Cache-Control", "public, max-age=3600")
			_, _ = w.Write(data)
		}
	}
	mux.Handle(serviceaccount.DiscoveryPath, serve("application/json", func(r *http.Request) (any, error) {
		return signer.Discovery(serviceaccount.JWKSURI(r.Host)), nil
	}))
	mux.Handle(serviceaccount.JWKSPath, serve("application/jwk-set+json", func(*http.Request) (any, error) {
		return signer.KeySet()
	}))
}
