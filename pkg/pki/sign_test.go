package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"path/filepath"
	"testing"
	"time"
)

func TestServingChainCarriesTheCA(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	for _, b := range []*Bundle{mustEnsure(t, Config{Dir: dir}), mustEnsure(t, Config{Dir: dir})} { // issued, then loaded
		if len(b.Serving.Certificate) != 2 || !bytes.Equal(b.Serving.Certificate[1], b.caCert.Raw) {
			t.Fatalf("serving chain has %d certificates, want leaf and CA", len(b.Serving.Certificate))
		}
	}
}

func TestSignCertificateRequest(t *testing.T) {
	b := mustEnsure(t, Config{Dir: filepath.Join(t.TempDir(), "pki")})
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}},
		IPAddresses: []net.IP{net.ParseIP("10.0.0.1")},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	req, err := x509.ParseCertificateRequest(der)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := b.SignCertificateRequest(req, x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	verifies(t, b, cert, x509.ExtKeyUsageClientAuth)
	if cert.Subject.CommonName != "system:node:n1" || len(cert.Subject.Organization) != 1 || !cert.IPAddresses[0].Equal(net.ParseIP("10.0.0.1")) {
		t.Fatalf("certificate %s %v", cert.Subject, cert.IPAddresses)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		t.Fatal("certificate for another key")
	}
	if life := time.Until(cert.NotAfter); life > time.Hour || life < 59*time.Minute {
		t.Fatalf("lifetime %s, want an hour", life)
	}
	// Backdated 5 minutes, as Kubernetes' signer (the conformance suite
	// wants an hour's request valid 1h05m at most).
	if w := cert.NotAfter.Sub(cert.NotBefore); w != time.Hour+5*time.Minute {
		t.Fatalf("validity window %s, want 1h5m", w)
	}
	if _, err := b.SignCertificateRequest(nil, 0, nil, 0); err == nil {
		t.Fatal("signed nothing")
	}
}
