package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
)

func publicDER(t *testing.T, k crypto.Signer) []byte {
	t.Helper()
	if k == nil {
		return nil
	}
	der, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func writeP384Key(path string) error {
	k, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

func TestServiceAccountKey(t *testing.T) {
	b := mustEnsure(t, Config{Dir: t.TempDir()})
	k, ok := b.ServiceAccountKey.(*ecdsa.PrivateKey)
	if !ok || k.Curve != elliptic.P256() {
		t.Fatalf("service account key is %T, want an ECDSA P-256 key", b.ServiceAccountKey)
	}

	// An RSA key put in sa.key by hand (PKCS#1, as openssl writes it) is used.
	dir := t.TempDir()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemData := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rk)})
	if err := os.WriteFile(filepath.Join(dir, ServiceAccountKeyFile), pemData, 0o600); err != nil {
		t.Fatal(err)
	}
	b = mustEnsure(t, Config{Dir: dir})
	if got, ok := b.ServiceAccountKey.(*rsa.PrivateKey); !ok || !got.Equal(rk) {
		t.Fatalf("service account key = %T, want the RSA key of sa.key", b.ServiceAccountKey)
	}
}
