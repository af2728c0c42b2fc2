package kinds

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func csrPEM(t *testing.T, subject pkix.Name) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func certPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func validCSR(t *testing.T) *certificatesv1.CertificateSigningRequest {
	return defaulted(&certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "node-csr-1"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    csrPEM(t, pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}),
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			Username:   "system:bootstrap:abcdef",
		},
	})
}

var approvedCondition = certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}

func TestValidateCSR(t *testing.T) {
	csr := validCSR(t)
	mastersReq := csrPEM(t, pkix.Name{CommonName: "x", Organization: []string{"system:masters"}})
	tampered := append([]byte(nil), csr.Spec.Request...)
	tampered[len(tampered)/2] ^= 1
	runCreateCases(t, []createCase{
		{name: "valid", obj: csr},
		{name: "issued", obj: mutate(csr, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approvedCondition}
			c.Status.Certificate = certPEM(t)
		})},
		{name: "no request", obj: mutate(csr, func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = nil }),
			want: []string{"spec.request: Required value"}},
		{name: "not PEM", obj: mutate(csr, func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = []byte("hello") }),
			want: []string{"spec.request: PEM block type must be CERTIFICATE REQUEST"}},
		{name: "a certificate, not a request", obj: mutate(csr, func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = certPEM(t) }),
			want: []string{"spec.request: CERTIFICATE REQUEST"}},
		{name: "tampered", obj: mutate(csr, func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = tampered }),
			want: []string{"spec.request"}},
		{name: "two requests", obj: mutate(csr, func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Request = append(c.Spec.Request, c.Spec.Request...)
		}), want: []string{"spec.request: extra data"}},
		{name: "no signer", obj: mutate(csr, func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "" }),
			want: []string{"spec.signerName: Required value"}},
		{name: "legacy signer", obj: mutate(csr, func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "kubernetes.io/legacy-unknown" }),
			want: []string{"spec.signerName: the legacy signerName"}},
		{name: "signer without path", obj: mutate(csr, func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example.com" }),
			want: []string{"spec.signerName: must be a fully qualified domain and path"}},
		{name: "signer with a bad domain", obj: mutate(csr, func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "Example_com/x" }),
			want: []string{`spec.signerName: Invalid value: "Example_com": validating label "Example_com"`}},
		{name: "no usages", obj: mutate(csr, func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = nil }),
			want: []string{"spec.usages: Required value"}},
		{name: "unknown and duplicate usages", obj: mutate(csr, func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = []certificatesv1.KeyUsage{"flying", certificatesv1.UsageClientAuth, certificatesv1.UsageClientAuth}
		}), want: []string{"spec.usages[0]: Unsupported value", "spec.usages[2]: Duplicate value"}},
		{name: "too short", obj: mutate(csr, func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = ptr.To[int32](599) }),
			want: []string{"spec.expirationSeconds: may not specify a duration less than 600 seconds"}},
		{name: "system:masters from the client signer", obj: mutate(csr, func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.SignerName, c.Spec.Request = certificatesv1.KubeAPIServerClientSignerName, mastersReq
		}), want: []string{"spec.request: Forbidden"}},
		{name: "approved and denied", obj: mutate(csr, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approvedCondition,
				{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}}
		}), want: []string{"status.conditions: Approved and Denied conditions are mutually exclusive"}},
		{name: "approved twice", obj: mutate(csr, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approvedCondition, approvedCondition}
		}), want: []string{"status.conditions[1].type: Duplicate value"}},
		{name: "approved false", obj: mutate(csr, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionFalse}}
		}), want: []string{"status.conditions[0].status: Unsupported value"}},
		{name: "certificate before approval", obj: mutate(csr, func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = certPEM(t) }),
			want: []string{"status.certificate: Forbidden"}},
		{name: "certificate that is no certificate", obj: mutate(csr, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approvedCondition}
			c.Status.Certificate = c.Spec.Request
		}), want: []string{"status.certificate: only CERTIFICATE PEM blocks"}},
	})
}

func TestValidateCSRUpdate(t *testing.T) {
	csr := stored(validCSR(t))
	issued := change(csr, func(c *certificatesv1.CertificateSigningRequest) {
		c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approvedCondition}
		c.Status.Certificate = certPEM(t)
	})
	runUpdateCases(t, []updateCase{
		{name: "approve and issue", old: csr, obj: issued},
		{name: "label", old: issued, obj: change(issued, func(c *certificatesv1.CertificateSigningRequest) { c.Labels = map[string]string{"a": "b"} })},
		{name: "change the requester", old: csr, obj: change(csr, func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Username = "system:node:n1" }),
			want: []string{"spec: Invalid value"}},
		{name: "replace the certificate", old: issued, obj: change(issued, func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = certPEM(t) }),
			want: []string{"status.certificate: Forbidden: updates may not modify existing certificate content"}},
		{name: "remove the approval", old: issued, obj: change(issued, func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = nil
			c.Status.Certificate = nil
		}), want: []string{`status.conditions: Forbidden: updates may not remove a condition of type "Approved"`}},
	})
}
