package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// wantInvalid fails unless err is a 422 whose message has each of want.
func wantInvalid(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Errorf("%s: want 422 Invalid, got %v", what, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: the 422 says %q, want it to say %q", what, err, w)
		}
	}
}

// The CSR subresources as the conformance spec "should support CSR API
// operations" drives them: /approval writes the conditions it is given,
// whatever their type, and /status the rest of the status, keeping the
// approval.
func TestCSRApprovalAndStatusSubresources(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	csrs := c.client.CertificatesV1().CertificateSigningRequests()
	csr := csrWithKey(t, "e2e-like", "example.com/e2e", pkix.Name{CommonName: "e2e.example.com"})
	created, err := csrs.Create(ctx, csr.obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	patched, err := csrs.Patch(ctx, created.Name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"patchedapproval":"true"}},"status":{"conditions":[{"type":"ApprovalPatch","status":"True","reason":"e2e"}]}}`),
		metav1.PatchOptions{}, "approval")
	if err != nil {
		t.Fatalf("patch /approval: %v", err)
	}
	if len(patched.Status.Conditions) != 1 || patched.Status.Conditions[0].Type != "ApprovalPatch" || patched.Annotations["patchedapproval"] != "true" {
		t.Fatalf("patch /approval kept conditions %+v, annotations %v", patched.Status.Conditions, patched.Annotations)
	}
	if patched.Status.Conditions[0].LastUpdateTime.IsZero() || patched.Status.Conditions[0].LastTransitionTime.IsZero() {
		t.Errorf("/approval left the condition's times unset: %+v", patched.Status.Conditions[0])
	}

	patched.Status.Conditions = append(patched.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "E2E"})
	approved, err := csrs.UpdateApproval(ctx, patched.Name, patched, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update /approval: %v", err)
	}
	if n := len(approved.Status.Conditions); n != 2 || approved.Status.Conditions[1].Type != certificatesv1.CertificateApproved {
		t.Fatalf("update /approval: conditions %+v", approved.Status.Conditions)
	}

	cert := []byte(selfSignedPEM(t))
	certJSON, err := json.Marshal(cert)
	if err != nil {
		t.Fatal(err)
	}
	withCert, err := csrs.Patch(ctx, created.Name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"patchedstatus":"true"}},"status":{"certificate":`+string(certJSON)+`}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("patch /status: %v", err)
	}
	if string(withCert.Status.Certificate) != string(cert) || withCert.Annotations["patchedstatus"] != "true" || len(withCert.Status.Conditions) != 2 {
		t.Fatalf("patch /status: %+v, annotations %v", withCert.Status, withCert.Annotations)
	}

	withCert.Status.Conditions = append(withCert.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: "StatusUpdate", Status: corev1.ConditionTrue, Reason: "E2E"})
	updated, err := csrs.UpdateStatus(ctx, withCert, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update /status: %v", err)
	}
	got := updated.Status.Conditions
	if len(got) != 3 || got[1].Type != certificatesv1.CertificateApproved || got[2].Type != "StatusUpdate" {
		t.Fatalf("update /status: conditions %+v", got)
	}

	// /status neither adds an approval nor takes one away.
	deny := updated.DeepCopy()
	deny.Status.Conditions = append(deny.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue})
	_, err = csrs.UpdateStatus(ctx, deny, metav1.UpdateOptions{})
	wantInvalid(t, "adding Denied through /status", err, `updates may not add a condition of type "Denied"`)
	unapprove := updated.DeepCopy()
	unapprove.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{updated.Status.Conditions[2]}
	_, err = csrs.UpdateStatus(ctx, unapprove, metav1.UpdateOptions{})
	wantInvalid(t, "removing Approved through /status", err, `updates may not remove a condition of type "Approved"`)
}

// stubRequest is a kubelet's empty PKCS#10 request for a new P-256 key.
func stubRequest(t *testing.T) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	return key, der
}

// leafFor is a certificate for key, valid from a minute ago for life.
func leafFor(t *testing.T, key *ecdsa.PrivateKey, life time.Duration) (string, time.Time, time.Time) {
	t.Helper()
	notBefore := time.Now().Add(-time.Minute).Truncate(time.Second)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "pod"},
		NotBefore: notBefore, NotAfter: notBefore.Add(life), BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), tmpl.NotBefore, tmpl.NotAfter
}

func newPCR(name, signer string, stub []byte) *certificatesv1.PodCertificateRequest {
	return &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName: signer, PodName: "web", PodUID: "pod-uid-1", ServiceAccountName: "default", ServiceAccountUID: "sa-uid-1",
			NodeName: "node-1", NodeUID: "node-uid-1", StubPKCS10Request: stub,
		},
	}
}

// PodCertificateRequests: served in certificates.k8s.io/v1, validated as
// kube-apiserver does, the spec fixed, the status written once through
// /status by whoever may sign for the signer.
func TestPodCertificateRequests(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	pcrs := c.client.CertificatesV1().PodCertificateRequests("default")
	const signer = "example.com/pods"
	key, stub := stubRequest(t)

	created, err := pcrs.Create(ctx, func() *certificatesv1.PodCertificateRequest {
		r := newPCR("web-cert", signer, stub)
		r.Status.Conditions = []metav1.Condition{{Type: "Issued", Status: metav1.ConditionTrue, Reason: "Sneaky", LastTransitionTime: metav1.Now()}}
		return r
	}(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if got := ptr.Deref(created.Spec.MaxExpirationSeconds, 0); got != 86400 {
		t.Errorf("maxExpirationSeconds defaulted to %d, want 86400", got)
	}
	if len(created.Status.Conditions) != 0 {
		t.Errorf("a request was created with a status: %+v", created.Status)
	}

	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaStub, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*certificatesv1.PodCertificateRequest)
		want string
	}{
		{"too long for any signer", func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.MaxExpirationSeconds = ptr.To[int32](91*86400 + 1)
		},
			"spec.maxExpirationSeconds: Invalid value: 7862401: must be in the range [3600, 7862400]"},
		{"too long for a kubernetes.io signer", func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.SignerName = "kubernetes.io/kube-apiserver-client-pod"
			r.Spec.MaxExpirationSeconds = ptr.To[int32](2 * 86400)
		}, "must be in the range [3600, 86400]"},
		{"too short", func(r *certificatesv1.PodCertificateRequest) { r.Spec.MaxExpirationSeconds = ptr.To[int32](3599) }, "must be in the range [3600, 7862400]"},
		{"a signer without a domain", func(r *certificatesv1.PodCertificateRequest) { r.Spec.SignerName = "pods" },
			"must be a fully qualified domain and path of the form 'example.com/signer-name'"},
		{"a one-label domain", func(r *certificatesv1.PodCertificateRequest) { r.Spec.SignerName = "example/pods" },
			"should be a domain with at least two segments separated by dots"},
		{"no request", func(r *certificatesv1.PodCertificateRequest) { r.Spec.StubPKCS10Request = nil },
			"exactly one of (stubPKCS10Request) or (pkixPublicKey, proofOfPossession) must be set"},
		{"an RSA-2048 key", func(r *certificatesv1.PodCertificateRequest) { r.Spec.StubPKCS10Request = rsaStub },
			"RSA keys must have modulus size 3072 or 4096"},
		{"no pod UID", func(r *certificatesv1.PodCertificateRequest) { r.Spec.PodUID = "" }, "spec.podUID: Invalid value: \"\": must not be empty"},
		{"an annotation key without a domain", func(r *certificatesv1.PodCertificateRequest) {
			r.Spec.UnverifiedUserAnnotations = map[string]string{"path": "/x"}
		}, "spec.unverifiedUserAnnotations"},
	} {
		r := newPCR("bad", signer, stub)
		tc.edit(r)
		_, err := pcrs.Create(ctx, r, metav1.CreateOptions{})
		wantInvalid(t, tc.name, err, tc.want)
	}

	// The spec never changes; labels do.
	moved := created.DeepCopy()
	moved.Spec.NodeName = "node-2"
	_, err = pcrs.Update(ctx, moved, metav1.UpdateOptions{})
	wantInvalid(t, "moving the request to another node", err, "spec: Invalid value")
	if _, err := pcrs.Patch(ctx, created.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"web"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("labelling: %v", err)
	}
	if l, err := pcrs.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-1"}); err != nil || len(l.Items) != 1 {
		t.Errorf("list by spec.nodeName: %v, %d items", err, len(l.Items))
	}

	// Issuing takes "sign" on the signer, not only update on /status.
	grantClusterRole(t, c, "pcr-status-writer", "signer-bot", rbacv1.PolicyRule{
		Verbs: []string{"get", "update", "patch"}, APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"podcertificaterequests/status"}})
	bot := clientAs(t, c, "signer-bot").CertificatesV1().PodCertificateRequests("default")
	chain, notBefore, notAfter := leafFor(t, key, time.Hour)
	issue := func(r *certificatesv1.PodCertificateRequest) *certificatesv1.PodCertificateRequest {
		r = r.DeepCopy()
		r.Status = certificatesv1.PodCertificateRequestStatus{
			CertificateChain: chain, NotBefore: &metav1.Time{Time: notBefore}, NotAfter: &metav1.Time{Time: notAfter},
			BeginRefreshAt: &metav1.Time{Time: notBefore.Add(30 * time.Minute)},
			Conditions:     []metav1.Condition{{Type: "Issued", Status: metav1.ConditionTrue, Reason: "Signed", LastTransitionTime: metav1.Now()}},
		}
		return r
	}
	current, err := pcrs.Get(ctx, created.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bot.UpdateStatus(ctx, issue(current), metav1.UpdateOptions{})
	wantInvalid(t, "issuing without sign", err, `User "signer-bot" is not permitted to "sign" for signer "example.com/pods"`)
	grantClusterRole(t, c, "pcr-signer", "signer-bot", rbacv1.PolicyRule{
		Verbs: []string{"sign"}, APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"}, ResourceNames: []string{"example.com/*"}})

	// What an issuance must be consistent with.
	wrongKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	wrongChain, _, _ := leafFor(t, wrongKey, time.Hour)
	short, sb, sa := leafFor(t, key, 30*time.Minute)
	for _, tc := range []struct {
		name string
		edit func(*certificatesv1.PodCertificateRequest)
		want string
	}{
		{"a chain for another key", func(r *certificatesv1.PodCertificateRequest) { r.Status.CertificateChain = wrongChain },
			"leaf certificate was not issued to the requested public key"},
		{"a notAfter other than the leaf's", func(r *certificatesv1.PodCertificateRequest) {
			r.Status.NotAfter = &metav1.Time{Time: notAfter.Add(time.Hour)}
		},
			"must be set to the NotAfter time encoded in the leaf certificate"},
		{"a refresh too late", func(r *certificatesv1.PodCertificateRequest) {
			r.Status.BeginRefreshAt = &metav1.Time{Time: notAfter.Add(-time.Minute)}
		},
			"must be at least 10 minutes before status.notAfter"},
		{"a leaf shorter than an hour", func(r *certificatesv1.PodCertificateRequest) {
			r.Status.CertificateChain, r.Status.NotBefore, r.Status.NotAfter = short, &metav1.Time{Time: sb}, &metav1.Time{Time: sa}
			r.Status.BeginRefreshAt = &metav1.Time{Time: sb.Add(15 * time.Minute)}
		}, "leaf certificate lifetime must be >= 1 hour"},
		{"Issued and Denied", func(r *certificatesv1.PodCertificateRequest) {
			r.Status.Conditions = append(r.Status.Conditions, metav1.Condition{Type: "Denied", Status: metav1.ConditionTrue, Reason: "No", LastTransitionTime: metav1.Now()})
		}, `There may be at most one condition with type "Issued", "Denied", or "Failed"`},
		{"Denied with a chain", func(r *certificatesv1.PodCertificateRequest) { r.Status.Conditions[0].Type = "Denied" },
			"non-condition status fields must be empty when denying or failing the PodCertificateRequest"},
		{"a chain while pending", func(r *certificatesv1.PodCertificateRequest) { r.Status.Conditions = nil },
			`status is immutable unless transitioning to "Issued", "Denied", or "Failed"`},
	} {
		r := issue(current)
		tc.edit(r)
		_, err := bot.UpdateStatus(ctx, r, metav1.UpdateOptions{})
		wantInvalid(t, tc.name, err, tc.want)
	}

	issued, err := bot.UpdateStatus(ctx, issue(current), metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("issuing with sign: %v", err)
	}
	if issued.Status.CertificateChain != chain || len(issued.Status.Conditions) != 1 {
		t.Fatalf("issued status %+v", issued.Status)
	}
	// Once issued, the status is final; a main-resource update keeps it.
	again := issued.DeepCopy()
	again.Status.Conditions[0].Message = "changed"
	_, err = pcrs.UpdateStatus(ctx, again, metav1.UpdateOptions{})
	wantInvalid(t, "changing an issued status", err, "immutable after PodCertificateRequest is issued, denied, or failed")
	cleared := issued.DeepCopy()
	cleared.Status = certificatesv1.PodCertificateRequestStatus{}
	if got, err := pcrs.Update(ctx, cleared, metav1.UpdateOptions{}); err != nil || got.Status.CertificateChain != chain {
		t.Errorf("an update of the resource changed the status: %v", err)
	}

	// A denial carries nothing but its condition.
	_, stub2 := stubRequest(t)
	denied, err := pcrs.Create(ctx, newPCR("denied", signer, stub2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	denied.Status.Conditions = []metav1.Condition{{Type: "Denied", Status: metav1.ConditionTrue, Reason: "UnsupportedKeyType", LastTransitionTime: metav1.Now()}}
	if _, err := bot.UpdateStatus(ctx, denied, metav1.UpdateOptions{}); err != nil {
		t.Errorf("denying: %v", err)
	}
}

// grantClusterRole binds user to a new ClusterRole of rules.
func grantClusterRole(t *testing.T, c *cluster, name, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := ctxT(t)
	if _, err := c.client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// ClusterTrustBundles hold CA certificates only, once each, named after
// their signer.
func TestClusterTrustBundleValidation(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	ctbs := c.client.CertificatesV1().ClusterTrustBundles()
	ca := selfSignedPEM(t)
	key, _ := stubRequest(t)
	leaf, _, _ := leafFor(t, key, time.Hour)
	bundle := func(name, signer, pem string) *certificatesv1.ClusterTrustBundle {
		return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: pem}}
	}
	for _, tc := range []struct {
		name string
		b    *certificatesv1.ClusterTrustBundle
		want string
	}{
		{"a leaf certificate", bundle("leaf", "", leaf), "entry 0 does not have the CA bit set"},
		{"the same CA twice", bundle("twice", "", ca+ca), "duplicate trust anchor (indices [0 1])"},
		{"a key", bundle("key", "", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), "entry 0 has bad block type: PRIVATE KEY"},
		{"nothing", bundle("empty", "", "hello"), "at least one trust anchor must be provided"},
		{"a one-label signer domain", bundle("example:roots:x", "example/roots", ca), "should be a domain with at least two segments separated by dots"},
		{"a name without the signer", bundle("roots", "example.com/roots", ca), "ClusterTrustBundle for signerName example.com/roots must be named with prefix example.com:roots:"},
		{"a ':' without a signer", bundle("a:b", "", ca), `ClusterTrustBundle without signer name must not have ":" in its name`},
	} {
		_, err := ctbs.Create(ctx, tc.b, metav1.CreateOptions{})
		wantInvalid(t, tc.name, err, tc.want)
	}
	if _, err := ctbs.Create(ctx, bundle("example.com:roots:v1", "example.com/roots", ca), metav1.CreateOptions{}); err != nil {
		t.Errorf("a signer's bundle: %v", err)
	}
}

// A pod's projected podCertificate and clusterTrustBundle sources are
// checked as kube-apiserver checks them, with its messages (the
// conformance specs match them).
func TestPodCertificateProjectionValidation(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	pods := c.client.CoreV1().Pods("default")
	pod := func(name string, sources ...corev1.VolumeProjection) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "busybox", VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/tls"}}}},
			Volumes:    []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}}},
		}}
	}
	podCert := func(edit func(*corev1.PodCertificateProjection)) corev1.VolumeProjection {
		p := &corev1.PodCertificateProjection{SignerName: "example.com/pods", KeyType: "ECDSAP256", CredentialBundlePath: "bundle.pem"}
		if edit != nil {
			edit(p)
		}
		return corev1.VolumeProjection{PodCertificate: p}
	}
	for _, tc := range []struct {
		name string
		src  []corev1.VolumeProjection
		want string
	}{
		{"over 91 days", []corev1.VolumeProjection{podCert(func(p *corev1.PodCertificateProjection) { p.MaxExpirationSeconds = ptr.To[int32](91*86400 + 1) })},
			"if provided, maxExpirationSeconds must be <= 7862400"},
		{"under an hour", []corev1.VolumeProjection{podCert(func(p *corev1.PodCertificateProjection) { p.MaxExpirationSeconds = ptr.To[int32](3599) })},
			"spec.volumes[0].projected.sources[0].podCertificate.maxExpirationSeconds: Invalid value: 3599: if provided, maxExpirationSeconds must be >= 3600"},
		{"over a day from a kubernetes.io signer", []corev1.VolumeProjection{podCert(func(p *corev1.PodCertificateProjection) {
			p.SignerName = "kubernetes.io/kube-apiserver-client-pod"
			p.MaxExpirationSeconds = ptr.To[int32](2 * 86400)
		})}, "if provided, maxExpirationSeconds must be <= 86400"},
		{"an unknown key type", []corev1.VolumeProjection{podCert(func(p *corev1.PodCertificateProjection) { p.KeyType = "DSA" })},
			`podCertificate.keyType: Unsupported value: "DSA"`},
		{"no path", []corev1.VolumeProjection{podCert(func(p *corev1.PodCertificateProjection) { p.CredentialBundlePath = "" })},
			"specify at least one of credentialBundlePath, keyPath, and certificateChainPath"},
		{"a path out of the volume", []corev1.VolumeProjection{podCert(func(p *corev1.PodCertificateProjection) { p.KeyPath = "../key.pem" })},
			"podCertificate.keyPath: Invalid value: \"../key.pem\": must not contain '..'"},
		{"a bad signer", []corev1.VolumeProjection{podCert(func(p *corev1.PodCertificateProjection) { p.SignerName = "pods" })},
			"podCertificate.signerName: Invalid value: \"pods\""},
		{"two files at one path", []corev1.VolumeProjection{podCert(nil), {ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{
			SignerName: ptr.To("example.com/pods"), LabelSelector: &metav1.LabelSelector{}, Path: "bundle.pem"}}},
			"conflicting duplicate paths"},
		{"a bundle by name and signer", []corev1.VolumeProjection{{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{
			Name: ptr.To("roots"), SignerName: ptr.To("example.com/pods"), Path: "ca.pem"}}}, "only one of name and signerName may be used"},
		{"a bundle by neither", []corev1.VolumeProjection{{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Path: "ca.pem"}}},
			"either name or signerName must be specified"},
		{"a signer's bundle misnamed", []corev1.VolumeProjection{{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{
			Name: ptr.To("example.com:pods:Roots"), Path: "ca.pem"}}}, "not a valid clustertrustbundlename"},
		{"two kinds in one source", []corev1.VolumeProjection{{PodCertificate: podCert(nil).PodCertificate,
			ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: ptr.To("roots"), Path: "ca.pem"}}},
			"may not specify more than 1 volume type per source"},
	} {
		_, err := pods.Create(ctx, pod("bad", tc.src...), metav1.CreateOptions{})
		wantInvalid(t, tc.name, err, tc.want)
	}

	ok := pod("good", podCert(func(p *corev1.PodCertificateProjection) {
		p.MaxExpirationSeconds = ptr.To[int32](91 * 86400)
		p.UserAnnotations = map[string]string{"example.com/spiffe-path": "/web"}
	}), corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{
		SignerName: ptr.To("example.com/pods"), LabelSelector: &metav1.LabelSelector{}, Path: "ca.pem"}},
		corev1.VolumeProjection{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Name: ptr.To("example.com:pods:v1"), Path: "ca-v1.pem"}})
	if _, err := pods.Create(ctx, ok, metav1.CreateOptions{}); err != nil {
		t.Errorf("a pod with valid podCertificate and clusterTrustBundle sources: %v", err)
	}
}

// A node asks for certificates of the pods bound to it only, as itself:
// the Node authorizer lets it create PodCertificateRequests, and
// NodeRestriction admission checks what they name.
func TestPodCertificateRequestNodeRestriction(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	node, err := c.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := c.client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := c.client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{
		NodeName: "node-1", ServiceAccountName: "web", AutomountServiceAccountToken: ptr.To(false),
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, stub := stubRequest(t)
	request := func(name string) *certificatesv1.PodCertificateRequest {
		return &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName: "example.com/pods", PodName: pod.Name, PodUID: pod.UID, ServiceAccountName: sa.Name, ServiceAccountUID: sa.UID,
			NodeName: "node-1", NodeUID: node.UID, StubPKCS10Request: stub}}
	}
	node1 := clientAs(t, c, "system:node:node-1", "system:nodes").CertificatesV1().PodCertificateRequests("default")
	node2 := clientAs(t, c, "system:node:node-2", "system:nodes").CertificatesV1().PodCertificateRequests("default")

	created, err := node1.Create(ctx, request("mine"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("node-1 asks for its pod's certificate: %v", err)
	}
	_, err = node2.Create(ctx, request("theirs"), metav1.CreateOptions{})
	wantForbidden(t, "node-2 asks in node-1's name", err, `PodCertificateRequest.Spec.NodeName="node-1", which is not the requesting node "node-2"`)
	wrongPod := request("wrong-pod")
	wrongPod.Spec.PodUID = "not-the-pod"
	_, err = node1.Create(ctx, wrongPod, metav1.CreateOptions{})
	wantForbidden(t, "node-1 names another pod UID", err, `contains pod UID ("not-the-pod") which differs from running pod`)
	wrongSA := request("wrong-sa")
	wrongSA.Spec.ServiceAccountName = "default"
	_, err = node1.Create(ctx, wrongSA, metav1.CreateOptions{})
	wantForbidden(t, "node-1 names another service account", err, `contains serviceAccountName ("default") that differs from running pod ("web")`)

	created.Status.Conditions = []metav1.Condition{{Type: "Denied", Status: metav1.ConditionTrue, Reason: "Self", LastTransitionTime: metav1.Now()}}
	_, err = node1.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	wantForbidden(t, "node-1 writes the status", err)
}
