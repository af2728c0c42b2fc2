package certificates

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/bootstrap/token"
	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/pki"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

var nodeUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}

// request describes a CSR for the tests.
type request struct {
	cn       string
	orgs     []string
	dns      []string
	signer   string
	usages   []certificatesv1.KeyUsage
	username string
	groups   []string
}

func (r request) csr(t *testing.T, name string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: r.cn, Organization: r.orgs}, DNSNames: r.dns,
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	if r.signer == "" {
		r.signer = certificatesv1.KubeAPIServerClientKubeletSignerName
	}
	if r.usages == nil {
		r.usages = nodeUsages
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: r.signer, Usages: r.usages, Username: r.username, Groups: r.groups,
		},
	}
}

var bootstrapper = []string{token.Group, "system:bootstrappers:minik8s:default-node-token", "system:authenticated"}

func TestApproval(t *testing.T) {
	tests := []struct {
		name string
		req  request
		want bool
	}{
		{"bootstrap token asks for a node certificate",
			request{cn: "system:node:n1", orgs: []string{"system:nodes"}, username: "system:bootstrap:abcdef", groups: bootstrapper}, true},
		{"node renews its own certificate",
			request{cn: "system:node:n1", orgs: []string{"system:nodes"}, username: "system:node:n1", groups: []string{"system:nodes"}}, true},
		{"with key encipherment (RSA kubelets)",
			request{cn: "system:node:n1", orgs: []string{"system:nodes"}, username: "system:bootstrap:abcdef", groups: bootstrapper,
				usages: []certificatesv1.KeyUsage{certificatesv1.UsageKeyEncipherment, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}}, true},
		{"node asks for another node's certificate",
			request{cn: "system:node:n2", orgs: []string{"system:nodes"}, username: "system:node:n1", groups: []string{"system:nodes"}}, false},
		{"bootstrap token asks for the admin",
			request{cn: "minik8s-admin", orgs: []string{"system:masters"}, username: "system:bootstrap:abcdef", groups: bootstrapper}, false},
		{"bootstrap token asks for a node in system:masters",
			request{cn: "system:node:n1", orgs: []string{"system:nodes", "system:masters"}, username: "system:bootstrap:abcdef", groups: bootstrapper}, false},
		{"bootstrap token asks for a node without its group",
			request{cn: "system:node:n1", username: "system:bootstrap:abcdef", groups: bootstrapper}, false},
		{"bootstrap token asks for an empty node name",
			request{cn: "system:node:", orgs: []string{"system:nodes"}, username: "system:bootstrap:abcdef", groups: bootstrapper}, false},
		{"bootstrap token asks for DNS names",
			request{cn: "system:node:n1", orgs: []string{"system:nodes"}, dns: []string{"n1"}, username: "system:bootstrap:abcdef", groups: bootstrapper}, false},
		{"bootstrap token asks for server auth",
			request{cn: "system:node:n1", orgs: []string{"system:nodes"}, username: "system:bootstrap:abcdef", groups: bootstrapper,
				usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth}}, false},
		{"bootstrap token asks the plain client signer",
			request{cn: "system:node:n1", orgs: []string{"system:nodes"}, username: "system:bootstrap:abcdef", groups: bootstrapper,
				signer: certificatesv1.KubeAPIServerClientSignerName}, false},
		{"an ordinary user asks for a node certificate",
			request{cn: "system:node:n1", orgs: []string{"system:nodes"}, username: "alice", groups: []string{"system:authenticated"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csr := tt.req.csr(t, "c")
			req, err := validation.ParseCSR(csr.Spec.Request)
			if err != nil {
				t.Fatal(err)
			}
			if got, why := approval(csr, req); got != tt.want {
				t.Fatalf("approval = %v (%s), want %v", got, why, tt.want)
			}
		})
	}
}

func TestSigning(t *testing.T) {
	tests := []struct {
		name    string
		req     request
		wantKU  x509.KeyUsage
		wantErr bool
	}{
		{"node client", request{cn: "system:node:n1", orgs: []string{"system:nodes"}}, x509.KeyUsageDigitalSignature, false},
		{"node client with key encipherment", request{cn: "system:node:n1", orgs: []string{"system:nodes"},
			usages: []certificatesv1.KeyUsage{certificatesv1.UsageKeyEncipherment, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}},
			x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, false},
		{"kubelet signer, not a node", request{cn: "alice", orgs: []string{"dev"}}, 0, true},
		{"client signer", request{cn: "alice", orgs: []string{"dev"}, signer: certificatesv1.KubeAPIServerClientSignerName}, x509.KeyUsageDigitalSignature, false},
		{"client signer, system:masters", request{cn: "alice", orgs: []string{"system:masters"}, signer: certificatesv1.KubeAPIServerClientSignerName}, 0, true},
		{"client signer, server auth", request{cn: "alice", signer: certificatesv1.KubeAPIServerClientSignerName,
			usages: []certificatesv1.KeyUsage{certificatesv1.UsageServerAuth}}, 0, true},
		{"another signer", request{cn: "alice", signer: "example.com/mine"}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csr := tt.req.csr(t, "c")
			req, err := validation.ParseCSR(csr.Spec.Request)
			if err != nil {
				t.Fatal(err)
			}
			ku, eku, err := signing(csr, req)
			if (err != nil) != tt.wantErr {
				t.Fatalf("signing: %v", err)
			}
			if err == nil && (ku != tt.wantKU || len(eku) != 1 || eku[0] != x509.ExtKeyUsageClientAuth) {
				t.Fatalf("usages %v %v", ku, eku)
			}
		})
	}
}

// harness is a fake API with both controllers on it; the informer cache
// is filled by hand (sync), so each Reconcile sees exactly what the test put.
type harness struct {
	client   *fake.Clientset
	indexer  cache.Indexer
	approver *Approver
	signer   *Signer
	ca       *pki.Bundle
	now      time.Time
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	ca, err := pki.Ensure(pki.Config{Dir: filepath.Join(t.TempDir(), "pki")})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{client: fake.NewClientset(), ca: ca, now: time.Now().Truncate(time.Second)}
	factory := informers.NewSharedInformerFactory(h.client, 0)
	h.indexer = factory.Certificates().V1().CertificateSigningRequests().Informer().GetIndexer()
	kc := &kit.Context{Client: h.client, Factory: factory, Logger: slog.New(slog.DiscardHandler)}
	cfg := Config{Now: func() time.Time { return h.now }}
	if h.approver, err = NewApprover(kc, cfg); err != nil {
		t.Fatal(err)
	}
	if h.signer, err = NewSigner(kc, ca, SignerConfig{Config: cfg}); err != nil {
		t.Fatal(err)
	}
	return h
}

// create stores csr in the fake API and the cache.
func (h *harness) create(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
	t.Helper()
	if _, err := h.client.CertificatesV1().CertificateSigningRequests().Create(context.Background(), csr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync(t, csr.Name)
}

// sync copies the API's csr into the cache and returns it.
func (h *harness) sync(t *testing.T, name string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	csr, err := h.client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.indexer.Update(csr); err != nil {
		t.Fatal(err)
	}
	return csr
}

// reconcile runs the approver, then the signer, on name.
func (h *harness) reconcile(t *testing.T, name string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	ctx := context.Background()
	if err := h.approver.Reconcile(ctx, name); err != nil {
		t.Fatal(err)
	}
	h.sync(t, name)
	if err := h.signer.Reconcile(ctx, name); err != nil {
		t.Fatal(err)
	}
	return h.sync(t, name)
}

func condition(csr *certificatesv1.CertificateSigningRequest, typ certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequestCondition {
	for i := range csr.Status.Conditions {
		if csr.Status.Conditions[i].Type == typ {
			return &csr.Status.Conditions[i]
		}
	}
	return nil
}

func TestBootstrapRequestIsApprovedAndSigned(t *testing.T) {
	h := newHarness(t)
	csr := request{cn: "system:node:n1", orgs: []string{"system:nodes"}, username: "system:bootstrap:abcdef", groups: bootstrapper}.csr(t, "node-csr")
	csr.Spec.ExpirationSeconds = ptr.To[int32](3600)
	h.create(t, csr)
	got := h.reconcile(t, "node-csr")

	approved := condition(got, certificatesv1.CertificateApproved)
	if approved == nil || approved.Status != corev1.ConditionTrue || approved.Reason != "AutoApproved" || !approved.LastUpdateTime.Time.Equal(h.now) {
		t.Fatalf("approved condition %+v", approved)
	}
	block, _ := pem.Decode(got.Status.Certificate)
	if block == nil {
		t.Fatalf("no certificate issued: %+v", got.Status)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: h.ca.CAPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("the certificate does not verify with the CA: %v", err)
	}
	if cert.Subject.CommonName != "system:node:n1" || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "system:nodes" {
		t.Fatalf("subject %s", cert.Subject)
	}
	if life := cert.NotAfter.Sub(time.Now()); life > time.Hour || life < 50*time.Minute {
		t.Fatalf("lifetime %s, want the requested hour", life)
	}
	req, _ := validation.ParseCSR(csr.Spec.Request)
	if !req.PublicKey.(*ecdsa.PublicKey).Equal(cert.PublicKey) {
		t.Fatal("the certificate is not for the request's key")
	}

	// Level-based: once issued, nothing more happens.
	again := h.reconcile(t, "node-csr")
	if string(again.Status.Certificate) != string(got.Status.Certificate) || len(again.Status.Conditions) != 1 {
		t.Fatalf("a second pass changed the CSR: %+v", again.Status)
	}
}

func TestOtherIdentitiesStayPending(t *testing.T) {
	h := newHarness(t)
	h.create(t, request{cn: "minik8s-admin", orgs: []string{"system:masters"}, username: "system:bootstrap:abcdef", groups: bootstrapper}.csr(t, "admin"))
	h.create(t, request{cn: "system:node:n2", orgs: []string{"system:nodes"}, username: "system:node:n1", groups: []string{"system:nodes"}}.csr(t, "other-node"))
	for _, name := range []string{"admin", "other-node"} {
		if got := h.reconcile(t, name); len(got.Status.Conditions) != 0 || len(got.Status.Certificate) != 0 {
			t.Fatalf("%s: %+v", name, got.Status)
		}
	}
}

func TestSignerFailsRequestsThatDoNotFit(t *testing.T) {
	h := newHarness(t)
	// An administrator approved a kubelet-signer request that is no node's.
	csr := request{cn: "alice", orgs: []string{"dev"}, username: "minik8s-admin"}.csr(t, "alice")
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
	h.create(t, csr)
	got := h.reconcile(t, "alice")
	failed := condition(got, certificatesv1.CertificateFailed)
	if failed == nil || failed.Reason != "SignerValidationFailure" || len(got.Status.Certificate) != 0 {
		t.Fatalf("status %+v", got.Status)
	}
}

func TestSignerLeavesOthersAlone(t *testing.T) {
	h := newHarness(t)
	pending := request{cn: "alice", signer: certificatesv1.KubeAPIServerClientSignerName, username: "alice"}.csr(t, "pending")
	h.create(t, pending)
	foreign := request{cn: "alice", signer: "example.com/mine", username: "alice"}.csr(t, "foreign")
	foreign.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
	h.create(t, foreign)
	denied := request{cn: "system:node:n1", orgs: []string{"system:nodes"}, username: "system:bootstrap:abcdef", groups: bootstrapper}.csr(t, "denied")
	denied.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}}
	h.create(t, denied)
	for _, name := range []string{"pending", "foreign", "denied"} {
		before := h.sync(t, name)
		if got := h.reconcile(t, name); len(got.Status.Certificate) != 0 || len(got.Status.Conditions) != len(before.Status.Conditions) {
			t.Fatalf("%s: %+v", name, got.Status)
		}
	}
	if err := h.signer.Reconcile(context.Background(), "gone"); err != nil {
		t.Fatalf("a CSR that is gone: %v", err)
	}
}
