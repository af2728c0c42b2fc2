package bootstrap

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/url"

	"github.com/minik8s/minik8s/pkg/bootstrap/token"
)

// DiscoverCA finds the cluster CA whose hash is caHash (token.HashCert) in
// the certificate chain the apiserver at server presents, and checks that
// the server's own certificate is signed by it for the server's name.
// Nothing is sent to the server but a TLS handshake.
func DiscoverCA(ctx context.Context, server, caHash string) ([]byte, error) {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("bootstrap: server %q is not an https:// URL", server)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "443"
	}
	d := &tls.Dialer{Config: &tls.Config{
		// Verified below, against the CA the token names: the chain is
		// only read here.
		InsecureSkipVerify: true, //nolint:gosec
		ServerName:         host,
		MinVersion:         tls.VersionTLS12,
	}}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("bootstrap: reach %s: %w", server, err)
	}
	chain := conn.(*tls.Conn).ConnectionState().PeerCertificates
	_ = conn.Close()
	if len(chain) == 0 {
		return nil, fmt.Errorf("bootstrap: %s presented no certificate", server)
	}
	var ca *x509.Certificate
	for _, c := range chain {
		if token.MatchesHash(c.Raw, caHash) {
			ca = c
			break
		}
	}
	if ca == nil {
		return nil, fmt.Errorf("bootstrap: %s presents no CA certificate with the join token's hash %s: wrong server or wrong token", server, caHash)
	}
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	roots.AddCert(ca)
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: host}); err != nil {
		return nil, fmt.Errorf("bootstrap: %s's certificate does not verify with the cluster CA: %w", server, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), nil
}
