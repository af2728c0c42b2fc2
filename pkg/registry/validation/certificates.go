package validation

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
)

// ParseCSR reads the one PEM "CERTIFICATE REQUEST" block of a CSR's
// spec.request and checks its signature.
func ParseCSR(data []byte) (*x509.CertificateRequest, error) {
	block, rest := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("PEM block type must be CERTIFICATE REQUEST")
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("extra data after the CERTIFICATE REQUEST PEM block")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, err
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("invalid signature: %w", err)
	}
	return req, nil
}
