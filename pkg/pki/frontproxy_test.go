package pki

import (
	"bytes"
	"crypto/x509"
	"path/filepath"
	"testing"
)

// The front proxy's client certificate verifies against its own CA only,
// keeps across restarts, and is no credential of the cluster CA.
func TestFrontProxy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	first := mustEnsure(t, Config{Dir: dir})
	second := mustEnsure(t, Config{Dir: dir})
	fp := first.FrontProxy
	if !bytes.Equal(fp.CAPEM, second.FrontProxy.CAPEM) || !bytes.Equal(fp.ClientCertPEM, second.FrontProxy.ClientCertPEM) {
		t.Error("the front proxy's CA or client certificate changed on reload")
	}
	leaf := fp.ClientCert.Leaf
	if leaf == nil || leaf.Subject.CommonName != FrontProxyClientUser {
		t.Fatalf("client certificate %v, want CN %s", leaf, FrontProxyClientUser)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(fp.CAPEM) {
		t.Fatal("front proxy CA does not parse")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate does not verify against the front proxy CA: %v", err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: first.CAPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("the front proxy's client certificate verifies against the cluster CA")
	}
	if bytes.Equal(fp.CAPEM, first.CAPEM) {
		t.Error("the front proxy CA is the cluster CA")
	}
}
