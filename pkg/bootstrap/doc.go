// Package bootstrap is the node's side of TLS bootstrap, as the kubelet
// does it: a node given a join token (pkg/bootstrap/token) and the
// apiserver's URL
//
//  1. learns the cluster CA: from the join token's CA hash, matched against
//     the certificates the apiserver serves in its TLS handshake (nothing
//     is sent before the server has proven it holds a certificate signed
//     by that CA), or from a CA the caller gives;
//  2. creates, authenticated by the bootstrap token, a
//     CertificateSigningRequest for kubernetes.io/kube-apiserver-client-kubelet
//     with subject CN=system:node:<name>, O=system:nodes and a key made
//     here, and waits until the control plane approves and signs it
//     (pkg/controller/certificates);
//  3. saves the key and the certificate (one PEM file) and a kubeconfig
//     using them under its directory, and from then on talks to the
//     apiserver as system:node:<name> only.
//
// On later starts a saved credential that is still valid is used as it is,
// and one close to expiry is renewed with itself (the approver approves a
// node's request for its own name). The token is only needed again when
// the saved credential is gone, expired, or for another cluster or name.
//
// It owns the files under Config.Dir and nothing else.
package bootstrap
