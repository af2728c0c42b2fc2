package certificates

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minik8s/minik8s/pkg/controller/kit"
)

// Finished CSRs go an hour after they finished, pending ones after a
// day, PodCertificateRequests after 15 minutes; the rest are looked at
// again when they are due.
func TestCleanerDeletesFinishedRequests(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	csr := func(name string, created time.Duration, conds ...certificatesv1.CertificateSigningRequestCondition) *certificatesv1.CertificateSigningRequest {
		c := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), CreationTimestamp: ago(created)}}
		c.Status.Conditions = conds
		return c
	}
	cond := func(t certificatesv1.RequestConditionType, since time.Duration) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: "True", LastUpdateTime: ago(since)}
	}
	issued := csr("issued-2h", 3*time.Hour, cond(certificatesv1.CertificateApproved, 2*time.Hour))
	issued.Status.Certificate = []byte("not parsed")
	approvedNotIssued := csr("approved-unissued", 3*time.Hour, cond(certificatesv1.CertificateApproved, 2*time.Hour))
	pcr := func(name string, created time.Duration) *certificatesv1.PodCertificateRequest {
		return &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: ago(created)}}
	}
	objs := []runtime.Object{
		issued, approvedNotIssued,
		csr("denied-2h", 3*time.Hour, cond(certificatesv1.CertificateDenied, 2*time.Hour)),
		csr("failed-10m", time.Hour, cond(certificatesv1.CertificateFailed, 10*time.Minute)),
		csr("pending-2d", 48*time.Hour),
		csr("pending-1h", time.Hour),
		pcr("old", 20*time.Minute), pcr("new", 5*time.Minute),
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	kc := &kit.Context{Client: client, Factory: factory, Clock: clocktesting.NewFakeClock(now), Logger: slog.New(slog.DiscardHandler)}
	c, err := NewCleaner(kc, Config{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *certificatesv1.CertificateSigningRequest:
			_ = factory.Certificates().V1().CertificateSigningRequests().Informer().GetIndexer().Add(o)
		case *certificatesv1.PodCertificateRequest:
			_ = factory.Certificates().V1().PodCertificateRequests().Informer().GetIndexer().Add(o)
		}
	}
	wantLeft := map[string]time.Duration{
		"issued-2h": 0, "approved-unissued": 21 * time.Hour, "denied-2h": 0, "failed-10m": 50 * time.Minute,
		"pending-2d": 0, "pending-1h": 23 * time.Hour, "pcr/ns/old": 0, "pcr/ns/new": 10 * time.Minute,
	}
	for key, want := range wantLeft {
		left, err := c.Reconcile(t.Context(), key)
		if err != nil || left != want {
			t.Errorf("%s: %s %v, want %s left", key, left, err, want)
		}
	}
	var deleted []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "delete" {
			deleted = append(deleted, a.GetResource().Resource+"/"+a.(interface{ GetName() string }).GetName())
		}
	}
	slices.Sort(deleted)
	want := []string{"certificatesigningrequests/denied-2h", "certificatesigningrequests/issued-2h",
		"certificatesigningrequests/pending-2d", "podcertificaterequests/old"}
	if !slices.Equal(deleted, want) {
		t.Errorf("deleted %v, want %v", deleted, want)
	}
}
