// Package token owns the format of bootstrap tokens, as Kubernetes has them:
// a token "<id>.<secret>" (6 and 16 characters of [a-z0-9]) lives in a
// Secret of type bootstrap.kubernetes.io/token named bootstrap-token-<id>
// in kube-system, whose data carries token-id, token-secret and optionally
// expiration (RFC 3339), usage-bootstrap-authentication ("true") and
// auth-extra-groups (comma-separated, each "system:bootstrappers:...").
// A valid, unexpired token authenticates as "system:bootstrap:<id>" in the
// group "system:bootstrappers" plus the extra groups (Verify; the
// authenticator itself is pkg/apiserver/authn's).
//
// A join token is what a node is given: "K10<ca-hash>::<id>.<secret>",
// where ca-hash is the lowercase hex SHA-256 of the cluster CA
// certificate's DER bytes. The prefix lets the node trust the apiserver
// without a CA file (pkg/bootstrap). A bare "<id>.<secret>" is also a join
// token, then the node needs the CA some other way.
//
// The package generates tokens and builds their Secrets (Create writes one
// through the API); it never reads storage.
package token
