package controlplane

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/minik8s/minik8s/pkg/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/pki"
	"github.com/minik8s/minik8s/pkg/serviceaccount"
)

// serviceAccountTokens are the signer of the TokenRequest API and the
// authenticator of the tokens it signs, both on the PKI's sa.key, for
// kube-apiserver's default issuer and audience; the authenticator reads
// the accounts and the objects tokens are bound to through objects.
func serviceAccountTokens(bundle *pki.Bundle, objects *secretReader) (*serviceaccount.Signer, authn.Authenticator, error) {
	signer, err := serviceaccount.NewSigner(serviceaccount.DefaultIssuer, bundle.ServiceAccountKey)
	if err != nil {
		return nil, nil, err
	}
	verifier, err := serviceaccount.NewVerifier(serviceaccount.DefaultIssuer, nil, nil, signer.PublicKey())
	if err != nil {
		return nil, nil, err
	}
	return signer, authn.NewServiceAccountToken(verifier, objects.object, nil), nil
}

// object reads any object through the apiserver's storage path, as get
// reads Secrets.
func (r *secretReader) object(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	if r.api == nil {
		return nil, errors.New("apiserver not ready")
	}
	return r.api.Get(ctx, gvr, namespace, name)
}
