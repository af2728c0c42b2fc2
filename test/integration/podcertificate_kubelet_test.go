package integration

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net/url"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet/podcert"
)

// runTestSigner issues every PodCertificateRequest of signer as the
// conformance suite's in-process signer does: a SPIFFE leaf for the
// request's key, valid from two minutes ago for maxExpirationSeconds (at
// most a day), refreshed 30 minutes before it ends, under a fresh CA.
func runTestSigner(ctx context.Context, t *testing.T, client kubernetes.Interface, signer string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	w, err := client.CertificatesV1().PodCertificateRequests("").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		serial := int64(1)
		for ev := range w.ResultChan() {
			r, ok := ev.Object.(*certificatesv1.PodCertificateRequest)
			if !ok || ev.Type != watch.Added || r.Spec.SignerName != signer || r.Status.CertificateChain != "" {
				continue
			}
			csr, err := x509.ParseCertificateRequest(r.Spec.StubPKCS10Request)
			if err != nil {
				t.Errorf("request %s: %v", r.Name, err)
				continue
			}
			life := min(time.Duration(*r.Spec.MaxExpirationSeconds)*time.Second, 24*time.Hour)
			notBefore := time.Now().Add(-2 * time.Minute).Truncate(time.Second)
			serial++
			tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), NotBefore: notBefore, NotAfter: notBefore.Add(life),
				URIs:        []*url.URL{{Scheme: "spiffe", Host: "cluster.local", Path: "/ns/" + r.Namespace + "/sa/" + r.Spec.ServiceAccountName}},
				KeyUsage:    x509.KeyUsageDigitalSignature,
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}
			der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, csr.PublicKey, caKey)
			if err != nil {
				t.Errorf("sign %s: %v", r.Name, err)
				continue
			}
			r.Status = certificatesv1.PodCertificateRequestStatus{
				Conditions: []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeIssued,
					Status: metav1.ConditionTrue, Reason: "Reason", Message: "Issued", LastTransitionTime: metav1.Now()}},
				CertificateChain: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
				NotBefore:        ptr.To(metav1.NewTime(notBefore)),
				BeginRefreshAt:   ptr.To(metav1.NewTime(notBefore.Add(life - 30*time.Minute))),
				NotAfter:         ptr.To(metav1.NewTime(notBefore.Add(life))),
			}
			if _, err := client.CertificatesV1().PodCertificateRequests(r.Namespace).UpdateStatus(ctx, r, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
				t.Errorf("issue %s: %v", r.Name, err)
			}
		}
	}()
}

// A kubelet gets its pod's certificate as itself, through the Node
// authorizer and NodeRestriction: the request it makes names the pod,
// the service account and the node as the API server checks them, a
// signer issues it, and the key the kubelet keeps is the certificate's.
// At beginRefreshAt it asks again, with a new key.
func TestKubeletGetsPodCertificates(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	const signer = "example.com/pods"
	runTestSigner(ctx, t, c.client, signer)
	if _, err := c.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	src := &corev1.PodCertificateProjection{SignerName: signer, KeyType: "ECDSAP256", CredentialBundlePath: "bundle.pem",
		MaxExpirationSeconds: ptr.To[int32](3600), UserAnnotations: map[string]string{"example.com/path": "/web"}}
	pod, err := c.client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{
		NodeName: "node-1", ServiceAccountName: "web", AutomountServiceAccountToken: ptr.To(false),
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		Volumes: []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{PodCertificate: src}}}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	clk := testclock.NewFakeClock(time.Now())
	certs, err := podcert.New(podcert.Config{Client: clientAs(t, c, "system:node:node-1", "system:nodes"), NodeName: "node-1",
		Clock: clk, Logger: slog.New(slog.DiscardHandler), Jitter: func() time.Duration { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	// get waits until the kubelet hands out credentials that done accepts.
	get := func(what string, done func(crypto.Signer) bool) (crypto.Signer, *x509.Certificate) {
		t.Helper()
		var key crypto.Signer
		var leaf *x509.Certificate
		waitFor(t, what, func(ctx context.Context) (bool, error) {
			keyPEM, chainPEM, err := certs.Credentials(ctx, pod, "tls", 0, src)
			if err != nil {
				return false, nil
			}
			kb, _ := pem.Decode(keyPEM)
			cb, _ := pem.Decode(chainPEM)
			if kb == nil || cb == nil {
				t.Fatalf("%s: key %q, chain %q", what, keyPEM, chainPEM)
			}
			k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if leaf, err = x509.ParseCertificate(cb.Bytes); err != nil {
				t.Fatal(err)
			}
			key = k.(crypto.Signer)
			if !key.Public().(*ecdsa.PublicKey).Equal(leaf.PublicKey) {
				t.Fatalf("%s: the key is not the certificate's", what)
			}
			return done(key), nil
		})
		return key, leaf
	}
	firstKey, leaf := get("the first certificate", func(crypto.Signer) bool { return true })
	if got := leaf.NotAfter.Sub(leaf.NotBefore); got != time.Hour {
		t.Errorf("lifetime %v, want the 1h asked for", got)
	}
	list, err := c.client.CertificatesV1().PodCertificateRequests("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("%v, %d requests", err, len(list.Items))
	}
	r := list.Items[0]
	if r.Spec.PodUID != pod.UID || r.Spec.ServiceAccountName != "web" || r.Spec.NodeName != "node-1" ||
		r.Spec.UnverifiedUserAnnotations["example.com/path"] != "/web" || len(r.OwnerReferences) != 1 || r.OwnerReferences[0].UID != pod.UID {
		t.Errorf("request %+v", r)
	}

	// Past beginRefreshAt the old credentials are handed out until the
	// new request is issued.
	clk.SetTime(leaf.NotAfter.Add(-29 * time.Minute))
	_, newLeaf := get("a new key", func(k crypto.Signer) bool { return !k.Public().(*ecdsa.PublicKey).Equal(firstKey.Public()) })
	if newLeaf.Equal(leaf) {
		t.Error("the refresh kept the old certificate")
	}

	// A node reads its own requests and its pods' service accounts only.
	_, err = clientAs(t, c, "system:node:node-2", "system:nodes").CertificatesV1().PodCertificateRequests("default").Get(ctx, r.Name, metav1.GetOptions{})
	wantForbidden(t, "node-2 reads node-1's request", err, "no relationship found between node 'node-2' and this object")
	_, err = clientAs(t, c, "system:node:node-1", "system:nodes").CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
	wantForbidden(t, "node-1 reads a service account none of its pods has", err)
}
