// Package serviceaccount owns the format of service account tokens, as
// Kubernetes' pkg/serviceaccount: JSON Web Tokens signed with the
// cluster's service account key (pki sa.key; ES256, or RS256 for an RSA
// key) whose claims are
//
//	iss  the issuer (DefaultIssuer, as kube-apiserver's default)
//	sub  system:serviceaccount:<namespace>:<name>
//	aud  the audiences asked for (default: the apiserver's, the issuer)
//	exp, iat, nbf, jti
//	kubernetes.io  {namespace, serviceaccount{name,uid},
//	                pod{name,uid} and node{name,uid} for a token bound to a
//	                pod, secret{name,uid} for one bound to a Secret,
//	                node{name,uid} for one bound to a Node}
//
// Signer issues them (the TokenRequest API, POST
// .../serviceaccounts/<name>/token); Verifier checks the signature, the
// issuer, the audiences and the validity window. Checking that the bound
// objects still exist is the authenticator's (pkg/apiserver/authn), which
// reads them from the store.
//
// The package also names what the rest of the cluster shares about
// service accounts: user names and groups, the default account every
// namespace has, the kube-root-ca.crt ConfigMap and the projected volume
// the ServiceAccount admission adds to pods.
package serviceaccount
