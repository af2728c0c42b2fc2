package podcert

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"testing"
)

// Every key type of a podCertificate source gets its key, a PKCS#8 PEM
// encoding of it, and a stub request that the key signed and that
// carries its public key, as kube-apiserver checks.
func TestNewKey(t *testing.T) {
	for _, keyType := range []string{"RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"} {
		t.Run(keyType, func(t *testing.T) {
			key, stub, err := NewKey(keyType)
			if err != nil {
				t.Fatal(err)
			}
			csr, err := x509.ParseCertificateRequest(stub)
			if err != nil {
				t.Fatal(err)
			}
			if err := csr.CheckSignature(); err != nil {
				t.Fatalf("stub signature: %v", err)
			}
			if !key.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(csr.PublicKey) {
				t.Fatal("the stub request is for another key")
			}
			if len(csr.Subject.Names) != 0 || len(csr.DNSNames) != 0 || len(csr.Extensions) != 0 {
				t.Errorf("stub request carries more than the key: %+v", csr.Subject)
			}
			encoded, err := EncodeKey(key)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := pem.Decode(encoded)
			parsed, err := x509.ParsePKCS8PrivateKey(b.Bytes)
			if b.Type != "PRIVATE KEY" || err != nil || !parsed.(crypto.Signer).Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(key.Public()) {
				t.Fatalf("PEM %s, %v", b.Type, err)
			}
		})
	}
	if _, _, err := NewKey("RSA2048"); err == nil {
		t.Error("RSA2048 accepted")
	}
}

func TestCleanChain(t *testing.T) {
	in := "leaf:\n-----BEGIN CERTIFICATE-----\nHeader: x\n\nAQID\n-----END CERTIFICATE-----\ntrailing\n-----BEGIN CERTIFICATE-----\nBAUG\n-----END CERTIFICATE-----\n"
	want := "-----BEGIN CERTIFICATE-----\nAQID\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nBAUG\n-----END CERTIFICATE-----\n"
	if got := string(cleanChain([]byte(in))); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
