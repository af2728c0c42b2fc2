// Package authn owns authentication: deciding who is making an HTTP request
// to the apiserver. It knows four kinds of credentials, as Kubernetes does:
//
//   - X.509 client certificates signed by the cluster CA (NewX509):
//     CN is the user name, O the groups;
//   - bearer tokens from a static token file in the format of Kubernetes'
//     --token-auth-file (NewTokenFile), re-read whenever the file changes;
//   - bootstrap tokens "<id>.<secret>" (NewBootstrapToken), checked against
//     their Secrets in kube-system on every request: the user
//     system:bootstrap:<id> in system:bootstrappers, for nodes that join
//     (pkg/bootstrap/token has the format and the rules);
//   - service account tokens, JWTs the apiserver signs (the TokenRequest
//     API; pkg/serviceaccount has the format), checked against the
//     store on every request (NewServiceAccountToken): the user
//     system:serviceaccount:<ns>:<name> in system:serviceaccounts and
//     system:serviceaccounts:<ns>, valid while the account and the pod,
//     Secret or Node the token is bound to exist.
//
// Union tries several authenticators in turn. Middleware runs an
// Authenticator in front of a handler: it answers 401 with a Kubernetes
// Status body (reason Unauthorized) to requests that carry no valid
// credentials, except on a few always-allowed paths, and stores the
// authenticated User in the request context (UserFrom).
//
// Authentication says only who the caller is. Authorization (what the user
// may do) comes later, as a separate layer that consumes the User placed in
// the context here; every authenticated User carries the group
// "system:authenticated".
//
// The apiserver should serve TLS with tls.RequestClientCert and ClientCAs set
// to the cluster CA, as kube-apiserver does: the handshake then accepts any
// client certificate and NewX509 verifies it, so a bad certificate yields a
// 401 (and a request may still authenticate by token). With
// tls.VerifyClientCertIfGiven the TLS layer already rejects a certificate
// that does not chain to ClientCAs, so such a client sees a handshake error
// instead of a 401; NewX509 verifies again either way.
package authn
