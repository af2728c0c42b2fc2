package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"time"
)

// The window of certificates issued for CSRs, as kube-controller-manager's
// signer has it.
const (
	csrBackdate = 5 * time.Minute
	csrShort    = 8 * time.Hour
)

// SignCertificateRequest issues a certificate for req with the cluster CA:
// req's subject, names and public key, the given usages, valid for validity
// (<= 0 means one year; never beyond the CA). The caller decides whether req
// deserves it (pkg/controller/certificates); req's signature must have been
// checked.
func (b *Bundle) SignCertificateRequest(req *x509.CertificateRequest, keyUsage x509.KeyUsage, extKeyUsage []x509.ExtKeyUsage, validity time.Duration) ([]byte, error) {
	if req == nil {
		return nil, errors.New("pki: no certificate request")
	}
	if validity <= 0 {
		validity = leafValidity
	}
	if b.caCert == nil || b.caKey == nil {
		return nil, errors.New("pki: bundle has no CA key (use Ensure)")
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	// Kubernetes' CSR signing policy: backdated 5 minutes for clock skew;
	// a certificate of 8 hours or more ends that much earlier, a shorter
	// one lives its full validity (a 1h request: 1h05m in all).
	t := now()
	notAfter := t.Add(validity)
	if validity >= csrShort {
		notAfter = notAfter.Add(-csrBackdate)
	}
	der, err := b.signWindow(&x509.Certificate{
		Subject:        req.Subject,
		KeyUsage:       keyUsage,
		ExtKeyUsage:    extKeyUsage,
		DNSNames:       req.DNSNames,
		IPAddresses:    req.IPAddresses,
		EmailAddresses: req.EmailAddresses,
		URIs:           req.URIs,
	}, req.PublicKey, serial, t.Add(-csrBackdate), notAfter)
	if err != nil {
		return nil, fmt.Errorf("pki: sign certificate request for %q: %w", req.Subject.CommonName, err)
	}
	return encodeCert(der), nil
}
