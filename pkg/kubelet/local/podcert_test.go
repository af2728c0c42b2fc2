package local

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet/podcert"
)

// testSigner issues PodCertificateRequests through the API, as a
// signer's controller does: a leaf for the request's key under its CA.
type testSigner struct {
	t      *testing.T
	client *fake.Clientset
	key    *ecdsa.PrivateKey
	ca     *x509.Certificate
	caPEM  []byte
	serial int64
}

func newTestSigner(t *testing.T, client *fake.Clientset) *testSigner {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test signer"},
		NotBefore: epoch.Add(-time.Hour), NotAfter: epoch.Add(1000 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	return &testSigner{t: t, client: client, key: key, ca: ca, serial: 1,
		caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// pending are the requests not yet answered.
func (s *testSigner) pending() []certificatesv1.PodCertificateRequest {
	s.t.Helper()
	list, err := s.client.CertificatesV1().PodCertificateRequests("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	var out []certificatesv1.PodCertificateRequest
	for _, r := range list.Items {
		if len(r.Status.Conditions) == 0 {
			out = append(out, r)
		}
	}
	return out
}

// issue answers every pending request: a certificate valid from now
// for maxExpirationSeconds, to be refreshed halfway; it returns the
// leaves by request name.
func (s *testSigner) issue(now time.Time) map[string]*x509.Certificate {
	s.t.Helper()
	leaves := map[string]*x509.Certificate{}
	for _, r := range s.pending() {
		csr, err := x509.ParseCertificateRequest(r.Spec.StubPKCS10Request)
		if err != nil || csr.CheckSignature() != nil {
			s.t.Fatalf("request %s: stub PKCS#10 request %v", r.Name, err)
		}
		life := time.Duration(ptr.Deref(r.Spec.MaxExpirationSeconds, 86400)) * time.Second
		s.serial++
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(s.serial), Subject: pkix.Name{CommonName: r.Spec.PodName},
			NotBefore: now, NotAfter: now.Add(life)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, s.ca, csr.PublicKey, s.key)
		if err != nil {
			s.t.Fatal(err)
		}
		leaf, _ := x509.ParseCertificate(der)
		leaves[r.Name] = leaf
		r.Status = certificatesv1.PodCertificateRequestStatus{
			Conditions: []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeIssued,
				Status: metav1.ConditionTrue, Reason: "Signed", LastTransitionTime: metav1.NewTime(now)}},
			// Text between the blocks is dropped by the kubelet.
			CertificateChain: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})) + "intermediate:\n" + string(s.caPEM),
			NotBefore:        ptr.To(metav1.NewTime(now)),
			BeginRefreshAt:   ptr.To(metav1.NewTime(now.Add(life / 2))),
			NotAfter:         ptr.To(metav1.NewTime(now.Add(life))),
		}
		if _, err := s.client.CertificatesV1().PodCertificateRequests(r.Namespace).UpdateStatus(context.Background(), &r, metav1.UpdateOptions{}); err != nil {
			s.t.Fatal(err)
		}
	}
	return leaves
}

// deny denies every pending request.
func (s *testSigner) deny(now time.Time) {
	s.t.Helper()
	for _, r := range s.pending() {
		r.Status.Conditions = []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeDenied,
			Status: metav1.ConditionTrue, Reason: "NotAllowed", Message: "no certificates for you", LastTransitionTime: metav1.NewTime(now)}}
		if _, err := s.client.CertificatesV1().PodCertificateRequests(r.Namespace).UpdateStatus(context.Background(), &r, metav1.UpdateOptions{}); err != nil {
			s.t.Fatal(err)
		}
	}
}

// podCertEnv is a provider whose fake API names created requests as the
// API server does with generateName.
func podCertEnv(t *testing.T) (*testEnv, *fake.Clientset, *recorder) {
	t.Helper()
	e := newTestEnv(t,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "sa-uid"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", UID: "node-uid"}})
	client := e.p.cfg.Client.(*fake.Clientset)
	var n atomic.Int32
	client.PrependReactor("create", "podcertificaterequests", func(a k8stesting.Action) (bool, apiruntime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.PodCertificateRequest)
		if r.Name == "" {
			r.Name = fmt.Sprintf("%s%d", r.GenerateName, n.Add(1))
		}
		r.CreationTimestamp = metav1.NewTime(e.clock.Now())
		return false, nil, nil
	})
	rec := &recorder{}
	certs, err := podcert.New(podcert.Config{Client: client, NodeName: "node1", Recorder: rec, Clock: e.clock,
		Jitter: func() time.Duration { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	e.p.certs = certs
	return e, client, rec
}

func podCertPod(name string, src corev1.PodCertificateProjection) *corev1.Pod {
	pod := testPod(name, "c")
	pod.Spec.ServiceAccountName = "web"
	pod.Spec.Volumes = []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o640),
		Sources:     []corev1.VolumeProjection{{PodCertificate: &src}},
	}}}}
	return pod
}

// readPEM reads a volume file and returns its private key (when it has
// one) and certificates.
func readPEM(t *testing.T, path string) (crypto.Signer, []*x509.Certificate, os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	var key crypto.Signer
	var certs []*x509.Certificate
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			if len(bytes.TrimSpace(rest)) != 0 {
				t.Fatalf("%s: text outside PEM blocks: %q", path, rest)
			}
			break
		}
		switch b.Type {
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			key = k.(crypto.Signer)
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			certs = append(certs, c)
		default:
			t.Fatalf("%s: unexpected %s block", path, b.Type)
		}
	}
	return key, certs, info.Mode().Perm()
}

type publicKey interface{ Equal(crypto.PublicKey) bool }

// A pod with a podCertificate source waits, without a sandbox, until its
// signer issues the request the kubelet made; then the key and chain are
// in its volume, and from beginRefreshAt on a new request replaces them.
func TestPodCertificateVolume(t *testing.T) {
	e, client, _ := podCertEnv(t)
	signer := newTestSigner(t, client)
	pod := podCertPod("web", corev1.PodCertificateProjection{
		SignerName: "example.com/pods", KeyType: "ECDSAP256", MaxExpirationSeconds: ptr.To[int32](3600),
		CredentialBundlePath: "bundle.pem", KeyPath: "tls/key.pem", CertificateChainPath: "tls/chain.pem",
		UserAnnotations: map[string]string{"example.com/path": "/custom"},
	})
	w := e.worker(pod)

	st := e.sync(w)
	if len(e.rt.all) != 0 || st.Phase != corev1.PodPending {
		t.Fatalf("pod started before its certificate: %s, %d containers", st.Phase, len(e.rt.all))
	}
	if !strings.Contains(w.volumeErr, `PodCertificateRequest default/req-1 for signer "example.com/pods" is not issued yet`) {
		t.Errorf("volume error %q", w.volumeErr)
	}
	e.sync(w)
	reqs := signer.pending()
	if len(reqs) != 1 {
		t.Fatalf("%d requests after two syncs, want 1", len(reqs))
	}
	r := reqs[0]
	want := certificatesv1.PodCertificateRequestSpec{SignerName: "example.com/pods", PodName: "web", PodUID: pod.UID,
		ServiceAccountName: "web", ServiceAccountUID: "sa-uid", NodeName: "node1", NodeUID: "node-uid",
		MaxExpirationSeconds: ptr.To[int32](3600), UnverifiedUserAnnotations: map[string]string{"example.com/path": "/custom"}}
	got := r.Spec
	got.StubPKCS10Request = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("request spec\n%+v\nwant\n%+v", got, want)
	}
	if len(r.OwnerReferences) != 1 || r.OwnerReferences[0].UID != pod.UID || r.OwnerReferences[0].Kind != "Pod" {
		t.Errorf("owner references %+v", r.OwnerReferences)
	}

	leaves := signer.issue(e.clock.Now())
	e.sync(w)
	if w.volumeErr != "" || len(e.rt.all) == 0 {
		t.Fatalf("pod not started once issued: %q", w.volumeErr)
	}
	dir := e.p.volumeDir(pod.UID, pluginProjected, "tls")
	check := func(leaf *x509.Certificate) crypto.Signer {
		t.Helper()
		key, certs, mode := readPEM(t, filepath.Join(dir, "bundle.pem"))
		if key == nil || len(certs) != 2 || !certs[0].Equal(leaf) || !certs[1].Equal(signer.ca) || mode != 0o640 {
			t.Fatalf("bundle: key %v, %d certificates, mode %v", key != nil, len(certs), mode)
		}
		if !key.Public().(publicKey).Equal(leaf.PublicKey) {
			t.Fatal("the bundle's key is not the certificate's")
		}
		onlyKey, none, _ := readPEM(t, filepath.Join(dir, "tls/key.pem"))
		noKey, chain, _ := readPEM(t, filepath.Join(dir, "tls/chain.pem"))
		if onlyKey == nil || len(none) != 0 || !onlyKey.Public().(publicKey).Equal(leaf.PublicKey) {
			t.Fatal("key.pem is not the certificate's key alone")
		}
		if noKey != nil || len(chain) != 2 || !chain[0].Equal(leaf) {
			t.Fatal("chain.pem is not the chain alone")
		}
		return key
	}
	firstKey := check(leaves[r.Name])

	// Before beginRefreshAt nothing is asked again; from it on, a new
	// key is asked for while the current files stay.
	e.clock.Step(29 * time.Minute)
	e.sync(w)
	if n := len(signer.pending()); n != 0 {
		t.Fatalf("%d requests before beginRefreshAt", n)
	}
	e.clock.Step(2 * time.Minute)
	e.sync(w)
	if n := len(signer.pending()); n != 1 {
		t.Fatalf("%d requests after beginRefreshAt, want 1", n)
	}
	check(leaves[r.Name])
	leaves = signer.issue(e.clock.Now())
	e.clock.Step(volumeResync)
	e.sync(w)
	var leaf *x509.Certificate
	for _, l := range leaves {
		leaf = l
	}
	if key := check(leaf); key.Public().(publicKey).Equal(firstKey.Public()) {
		t.Error("the refreshed certificate has the old key")
	}
}

// Denied (or failed) requests are final: the pod waits with the reason,
// and an event says so.
func TestPodCertificateDenied(t *testing.T) {
	e, client, rec := podCertEnv(t)
	signer := newTestSigner(t, client)
	pod := podCertPod("denied", corev1.PodCertificateProjection{SignerName: "example.com/pods", KeyType: "ED25519",
		CredentialBundlePath: "bundle.pem"})
	w := e.worker(pod)
	e.sync(w)
	signer.deny(e.clock.Now())
	e.sync(w)
	e.sync(w)
	if !strings.Contains(w.volumeErr, `was permanently denied: reason="NotAllowed" message="no certificates for you"`) || len(e.rt.all) != 0 {
		t.Fatalf("volume error %q, %d containers", w.volumeErr, len(e.rt.all))
	}
	list, _ := client.CertificatesV1().PodCertificateRequests("default").List(context.Background(), metav1.ListOptions{})
	if len(list.Items) != 1 {
		t.Errorf("%d requests after a denial, want 1", len(list.Items))
	}
	if len(rec.events) != 1 || !strings.HasPrefix(rec.events[0], "Warning Denied PodCertificateRequest default/req-1 was denied") {
		t.Errorf("events %q", rec.events)
	}
}
