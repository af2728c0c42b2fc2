package local

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func testCertPEM(t *testing.T, cn string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func TestTrustAnchors(t *testing.T) {
	a, b := testCertPEM(t, "a"), testCertPEM(t, "b")
	bundle := func(name, signer string, labels map[string]string, pems ...string) *certificatesv1.ClusterTrustBundle {
		return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: strings.Join(pems, "")}}
	}
	e := newTestEnv(t,
		bundle("plain", "", nil, a),
		bundle("example.com:signer:one", "example.com/signer", map[string]string{"team": "x"}, a, b),
		bundle("example.com:signer:two", "example.com/signer", map[string]string{"team": "y"}, b),
		bundle("other.com:signer:one", "other.com/signer", map[string]string{"team": "x"}, a),
	)
	count := func(data []byte) int { return strings.Count(string(data), "BEGIN CERTIFICATE") }
	cases := []struct {
		name    string
		src     corev1.ClusterTrustBundleProjection
		certs   int
		wantErr string
	}{
		{"by name", corev1.ClusterTrustBundleProjection{Name: ptr.To("plain")}, 1, ""},
		{"missing name", corev1.ClusterTrustBundleProjection{Name: ptr.To("nope")}, 0, "not found"},
		{"missing name, optional", corev1.ClusterTrustBundleProjection{Name: ptr.To("nope"), Optional: ptr.To(true)}, 0, ""},
		{"signer, all labels, deduplicated", corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/signer"), LabelSelector: &metav1.LabelSelector{}}, 2, ""},
		{"signer and label", corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/signer"), LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "y"}}}, 1, ""},
		{"signer, nil selector matches nothing", corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/signer")}, 0, "matched zero"},
		{"signer, nil selector, optional", corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/signer"), Optional: ptr.To(true)}, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.p.trustAnchors(context.Background(), &tc.src)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || count(got) != tc.certs {
				t.Fatalf("%d certificates (%v), want %d:\n%s", count(got), err, tc.certs, got)
			}
		})
	}
}
