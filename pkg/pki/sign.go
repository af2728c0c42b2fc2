package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"time"
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
	der, err := b.sign(&x509.Certificate{
		Subject:        req.Subject,
		KeyUsage:       keyUsage,
		ExtKeyUsage:    extKeyUsage,
		DNSNames:       req.DNSNames,
		IPAddresses:    req.IPAddresses,
		EmailAddresses: req.EmailAddresses,
		URIs:           req.URIs,
	}, req.PublicKey, validity)
	if err != nil {
		return nil, fmt.Errorf("pki: sign certificate request for %q: %w", req.Subject.CommonName, err)
	}
	return encodeCert(der), nil
}
