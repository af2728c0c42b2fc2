package pki

import (
	"crypto/tls"
	"fmt"
)

// KubeletClientUser is who the apiserver is when it calls a kubelet (to
// proxy logs, exec and attach): the CN of its kubelet client certificate.
// Kubelets let this user and MastersGroup in.
const KubeletClientUser = "minik8s-apiserver"

// KubeletClientCert issues the apiserver's client certificate for kubelets
// (CN=minik8s-apiserver, no groups: it is no admin on the apiserver). It
// lives in memory only; each control plane start issues a fresh one.
func (b *Bundle) KubeletClientCert() (tls.Certificate, error) {
	certPEM, keyPEM, err := b.IssueClientCert(KubeletClientUser, nil, 0)
	if err != nil {
		return tls.Certificate{}, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("pki: kubelet client certificate: %w", err)
	}
	return pair, nil
}
