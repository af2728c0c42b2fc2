package pki

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
)

// The front proxy (Kubernetes' requestheader authentication): the
// aggregation layer calls an extension API server with a client
// certificate of a CA of its own and names the user it serves in
// X-Remote-User, X-Remote-Group and X-Remote-Extra-* headers. The
// extension server trusts those headers only from a certificate of that
// CA with an allowed name. The CA is not the cluster CA: a client
// certificate of the cluster CA must never be able to claim any user
// through headers, and a front-proxy certificate is no credential on the
// apiserver.
const (
	// FrontProxyDir holds the front proxy's CA (ca.crt, ca.key) and
	// client certificate (client.crt, client.key), under Config.Dir.
	FrontProxyDir            = "front-proxy"
	FrontProxyClientCertFile = "client.crt"
	FrontProxyClientKeyFile  = "client.key"
	// FrontProxyClientUser is the common name of the front proxy's client
	// certificate, the one name extension servers allow (as kubeadm's
	// front-proxy-client).
	FrontProxyClientUser = "front-proxy-client"
)

// FrontProxy is the front proxy's CA and client certificate.
type FrontProxy struct {
	CAPEM                       []byte
	ClientCert                  tls.Certificate
	ClientCertPEM, ClientKeyPEM []byte
}

// ensureFrontProxy creates the front proxy's CA once, as ensureCA does
// the cluster's, and its client certificate, re-issued within 30 days of
// expiry.
func (b *Bundle) ensureFrontProxy() error {
	fp := &Bundle{dir: filepath.Join(b.dir, FrontProxyDir), caName: "minik8s-front-proxy-ca"}
	if err := os.MkdirAll(fp.dir, 0o700); err != nil {
		return fmt.Errorf("pki: create %s: %w", fp.dir, err)
	}
	if err := fp.ensureCA(); err != nil {
		return err
	}
	pair, certPEM, keyPEM, ok := fp.loadLeaf(FrontProxyClientCertFile, FrontProxyClientKeyFile, x509.ExtKeyUsageClientAuth)
	if !ok || nearExpiry(pair.Leaf) || pair.Leaf.Subject.CommonName != FrontProxyClientUser {
		var err error
		if certPEM, keyPEM, err = fp.IssueClientCert(FrontProxyClientUser, nil, 0); err != nil {
			return err
		}
		// Key first: a crash in between leaves a mismatched pair, which
		// the next Ensure re-issues.
		if err := writeFileAtomic(fp.path(FrontProxyClientKeyFile), keyPEM); err != nil {
			return err
		}
		if err := writeFileAtomic(fp.path(FrontProxyClientCertFile), certPEM); err != nil {
			return err
		}
		if pair, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
			return fmt.Errorf("pki: front proxy client certificate: %w", err)
		}
	}
	b.FrontProxy = FrontProxy{CAPEM: fp.CAPEM, ClientCert: pair, ClientCertPEM: certPEM, ClientKeyPEM: keyPEM}
	return nil
}
