package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/minik8s/minik8s/pkg/bootstrap"
	"github.com/minik8s/minik8s/pkg/bootstrap/token"
	"github.com/minik8s/minik8s/pkg/controlplane"
)

// csrFor makes a CSR object for subject with a fresh key.
func csrFor(t *testing.T, name, signer string, subject pkix.Name) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: signer,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}
}

// whoAmI is who the apiserver takes client for (kubectl auth whoami).
func whoAmI(t *testing.T, ctx context.Context, client kubernetes.Interface) (string, []string) {
	t.Helper()
	r, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("who am I: %v", err)
	}
	return r.Status.UserInfo.Username, r.Status.UserInfo.Groups
}

func readNodeToken(t *testing.T, c *cluster) token.JoinToken {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(c.dataDir, controlplane.NodeTokenName))
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.TrimSpace(string(data)); s != c.cp.NodeToken {
		t.Fatalf("node-token file %q, control plane says %q", s, c.cp.NodeToken)
	}
	j, err := token.ParseJoin(string(data))
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// waitIssued waits for CSR name's certificate.
func waitIssued(t *testing.T, c *cluster, name string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	var got *certificatesv1.CertificateSigningRequest
	waitFor(t, "csr "+name+" issued", func(ctx context.Context) (bool, error) {
		var err error
		got, err = c.client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		return err == nil && len(got.Status.Certificate) > 0, err
	})
	return got
}

// TestBootstrapNodeJoin: a node given the server's URL and node-token
// joins with its own credential, keeps it across restarts and renews it as
// itself.
func TestBootstrapNodeJoin(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	j := readNodeToken(t, c)
	if want, _ := token.CAHash(c.cp.Bundle.CAPEM); j.CAHash != want {
		t.Fatalf("node token CA hash %s, CA's %s", j.CAHash, want)
	}

	// No CA file: the node trusts the server through the token's CA hash.
	dir := t.TempDir()
	rc, err := bootstrap.Join(ctx, bootstrap.Config{Server: c.cp.URL, Token: c.cp.NodeToken, NodeName: "joiner", Dir: dir, Logger: quietLog()})
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	if rc.BearerToken != "" || rc.CertFile == "" {
		t.Fatalf("the node's config is not a client certificate: %+v", rc)
	}
	node := kubernetes.NewForConfigOrDie(rc)
	if user, groups := whoAmI(t, ctx, node); user != "system:node:joiner" || !slices.Equal(groups, []string{"system:nodes", "system:authenticated"}) {
		t.Fatalf("the joined node is %q %v", user, groups)
	}
	if _, err := node.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "joiner"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the node registers itself: %v", err)
	}

	// The bootstrap CSR records the token as its requester, and was
	// approved and issued by the control plane.
	csrs, err := c.client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(csrs.Items) != 1 {
		t.Fatalf("%d CSRs, want the bootstrap one", len(csrs.Items))
	}
	boot := csrs.Items[0]
	if boot.Spec.Username != "system:bootstrap:"+j.Token.ID || !slices.Contains(boot.Spec.Groups, token.Group) ||
		!slices.Contains(boot.Spec.Groups, token.NodeGroup) || boot.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		t.Fatalf("bootstrap CSR spec %+v", boot.Spec)
	}
	if len(boot.Status.Certificate) == 0 || len(boot.Status.Conditions) != 1 || boot.Status.Conditions[0].Type != certificatesv1.CertificateApproved {
		t.Fatalf("bootstrap CSR status %+v", boot.Status)
	}
	for _, f := range []string{bootstrap.KubeconfigFile, bootstrap.CredentialFile} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, fi, err)
		}
	}
	cred, _ := os.ReadFile(filepath.Join(dir, bootstrap.CredentialFile))

	// A restart uses the saved credential: no token, no new CSR.
	rc, err = bootstrap.Join(ctx, bootstrap.Config{Server: c.cp.URL, NodeName: "joiner", Dir: dir, Logger: quietLog()})
	if err != nil {
		t.Fatalf("rejoin: %v", err)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, bootstrap.CredentialFile)); string(again) != string(cred) {
		t.Fatal("the saved credential was replaced")
	}
	if user, _ := whoAmI(t, ctx, kubernetes.NewForConfigOrDie(rc)); user != "system:node:joiner" {
		t.Fatalf("after a restart the node is %q", user)
	}
	if n, _ := c.client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{}); len(n.Items) != 1 {
		t.Fatalf("%d CSRs after a restart, want 1", len(n.Items))
	}

	// Near expiry (here: renew anything under five years), the node renews
	// its certificate as itself, and the control plane approves that.
	rc, err = bootstrap.Join(ctx, bootstrap.Config{Server: c.cp.URL, NodeName: "joiner", Dir: dir, Logger: quietLog(), RenewBefore: 5 * 365 * 24 * time.Hour})
	if err != nil {
		t.Fatalf("renew: %v", err)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, bootstrap.CredentialFile)); string(again) == string(cred) {
		t.Fatal("the credential was not renewed")
	}
	list, _ := c.client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	renewals := slices.DeleteFunc(list.Items, func(r certificatesv1.CertificateSigningRequest) bool { return r.Name == boot.Name })
	if len(renewals) != 1 || renewals[0].Spec.Username != "system:node:joiner" || len(renewals[0].Status.Certificate) == 0 {
		t.Fatalf("renewal CSRs %+v", renewals)
	}
	if user, _ := whoAmI(t, ctx, kubernetes.NewForConfigOrDie(rc)); user != "system:node:joiner" {
		t.Fatalf("after renewal the node is %q", user)
	}

	// The node token survives a control plane restart.
	c.restart()
	if j2 := readNodeToken(t, c); j2 != j {
		t.Fatalf("node token changed across a restart: %v -> %v", j, j2)
	}
}

// TestBootstrapTokens: what the authenticator lets in and what it does not.
func TestBootstrapTokens(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	bearer := func(tok string) kubernetes.Interface {
		return kubernetes.NewForConfigOrDie(&rest.Config{Host: c.cp.URL, BearerToken: tok,
			TLSClientConfig: rest.TLSClientConfig{CAData: c.cp.Bundle.CAPEM}})
	}
	// What a bootstrap token may do: read CSRs.
	asks := func(client kubernetes.Interface) error {
		_, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		return err
	}

	if err := asks(bearer(readNodeToken(t, c).Token.String())); err != nil {
		t.Fatalf("the node token: %v", err)
	}
	if err := asks(bearer("abcdef.0123456789abcdef")); !apierrors.IsUnauthorized(err) {
		t.Fatalf("an unknown token: %v, want 401", err)
	}

	// A token made as `minik8s token create` makes it.
	j, err := token.CreateJoin(ctx, c.client, c.cp.Bundle.CAPEM, token.Options{TTL: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := asks(bearer(j.Token.String())); err != nil {
		t.Fatalf("a new token: %v", err)
	}
	if err := asks(bearer(j.Token.ID + ".0000000000000000")); !apierrors.IsUnauthorized(err) {
		t.Fatalf("the right id with a wrong secret: %v, want 401", err)
	}
	rc, err := bootstrap.Join(ctx, bootstrap.Config{Server: c.cp.URL, Token: j.String(), NodeName: "second", Dir: t.TempDir(), Logger: quietLog()})
	if err != nil {
		t.Fatalf("join with a created token: %v", err)
	}
	if user, _ := whoAmI(t, ctx, kubernetes.NewForConfigOrDie(rc)); user != "system:node:second" {
		t.Fatalf("joined as %q", user)
	}
	// Deleting the Secret revokes the token at once.
	if err := c.client.CoreV1().Secrets(token.SecretNamespace).Delete(ctx, j.Token.SecretName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := asks(bearer(j.Token.String())); !apierrors.IsUnauthorized(err) {
		t.Fatalf("a deleted token: %v, want 401", err)
	}

	// An expired token.
	expired := token.Token{ID: "expire", Secret: "0123456789abcdef"}
	s, err := token.NewSecret(expired, token.Options{TTL: time.Hour}, time.Now().Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.CoreV1().Secrets(token.SecretNamespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := asks(bearer(expired.String())); !apierrors.IsUnauthorized(err) {
		t.Fatalf("an expired token: %v, want 401", err)
	}
	_, err = bootstrap.Join(ctx, bootstrap.Config{Server: c.cp.URL, Token: expired.String(), CAPEM: c.cp.Bundle.CAPEM, NodeName: "late", Dir: t.TempDir(), Logger: quietLog()})
	if !apierrors.IsUnauthorized(err) {
		t.Fatalf("join with an expired token: %v, want 401", err)
	}

	// A token naming another CA: the node refuses the server before
	// sending anything.
	wrong := token.JoinToken{CAHash: strings.Repeat("0", 64), Token: readNodeToken(t, c).Token}
	_, err = bootstrap.Join(ctx, bootstrap.Config{Server: c.cp.URL, Token: wrong.String(), NodeName: "misled", Dir: t.TempDir(), Logger: quietLog()})
	if err == nil || !strings.Contains(err.Error(), "hash") {
		t.Fatalf("join against the wrong CA hash: %v", err)
	}
}

// TestBootstrapCSRRules: a bootstrap token gets node certificates and
// nothing else; the requester is the server's to record.
func TestBootstrapCSRRules(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	boot := kubernetes.NewForConfigOrDie(&rest.Config{Host: c.cp.URL, BearerToken: readNodeToken(t, c).Token.String(),
		TLSClientConfig: rest.TLSClientConfig{CAData: c.cp.Bundle.CAPEM}})
	csrs := boot.CertificatesV1().CertificateSigningRequests()
	kubelet := certificatesv1.KubeAPIServerClientKubeletSignerName

	bad := map[string]pkix.Name{
		"admin":         {CommonName: "minik8s-admin", Organization: []string{"system:masters"}},
		"node-master":   {CommonName: "system:node:n1", Organization: []string{"system:nodes", "system:masters"}},
		"not-a-node":    {CommonName: "alice", Organization: []string{"system:nodes"}},
		"without-group": {CommonName: "system:node:n1"},
	}
	for name, subject := range bad {
		if _, err := csrs.Create(ctx, csrFor(t, name, kubelet, subject), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	// A client-set requester is overwritten with the real one.
	forged := csrFor(t, "good", kubelet, pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}})
	forged.Spec.Username, forged.Spec.Groups = "system:node:n1", []string{"system:nodes"}
	created, err := csrs.Create(ctx, forged, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(created.Spec.Username, "system:bootstrap:") || !slices.Contains(created.Spec.Groups, "system:bootstrappers") {
		t.Fatalf("requester recorded as %q %v", created.Spec.Username, created.Spec.Groups)
	}
	waitIssued(t, c, "good")
	time.Sleep(time.Second) // the approver had its chance with the others
	for name := range bad {
		got, err := c.client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Status.Conditions) != 0 || len(got.Status.Certificate) != 0 {
			t.Errorf("%s was decided: %+v", name, got.Status)
		}
	}

	// system:masters is never asked of the API's client signer.
	_, err = csrs.Create(ctx, csrFor(t, "masters", certificatesv1.KubeAPIServerClientSignerName,
		pkix.Name{CommonName: "x", Organization: []string{"system:masters"}}), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("system:masters from the client signer: %v, want 422", err)
	}
	// Garbage is no request.
	garbage := csrFor(t, "garbage", kubelet, pkix.Name{CommonName: "x"})
	garbage.Spec.Request = []byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n")
	if _, err := csrs.Create(ctx, garbage, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("a garbage request: %v, want 422", err)
	}

	// /status cannot approve; /approval can, and then the signer issues.
	admin := c.client.CertificatesV1().CertificateSigningRequests()
	alice, err := admin.Create(ctx, csrFor(t, "alice", certificatesv1.KubeAPIServerClientSignerName, pkix.Name{CommonName: "alice"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	approved := certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test"}
	alice.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approved}
	if _, err := admin.UpdateStatus(ctx, alice, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), `updates may not add a condition of type "Approved"`) {
		t.Fatalf("approval through /status: %v, want 422", err)
	}
	alice, _ = admin.Get(ctx, "alice", metav1.GetOptions{})
	alice.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approved}
	if _, err := admin.UpdateApproval(ctx, "alice", alice, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	issued := waitIssued(t, c, "alice")
	// Once approved, it stays approved.
	issued.Status.Conditions = nil
	if _, err := admin.UpdateApproval(ctx, "alice", issued, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("removing the approval: %v, want 422", err)
	}

	// kubectl shows CSRs as Kubernetes does.
	k := newKubectl(t, c)
	out := k.ok(t, "get", "csr")
	if got := strings.Join(tableHeader(out), " "); got != "NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION" {
		t.Fatalf("kubectl get csr header %q", got)
	}
	if !strings.Contains(out, "Approved,Issued") || !strings.Contains(out, "Pending") {
		t.Fatalf("kubectl get csr:\n%s", out)
	}
	if got := k.ok(t, "certificate", "deny", "admin"); !strings.Contains(got, "denied") {
		t.Fatalf("kubectl certificate deny printed %q", got)
	}
}
