package certificates

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// How long finished requests are kept, as kube-controller-manager's
// cleaners keep them: a CSR an hour after it was issued, denied or
// failed, a day while pending; a PodCertificateRequest 15 minutes,
// which every kubelet and signer flow takes less than.
const (
	csrPendingExpiration  = 24 * time.Hour
	csrFinishedExpiration = time.Hour
	pcrExpiration         = 15 * time.Minute
)

// Cleaner deletes CertificateSigningRequests and PodCertificateRequests
// that no one needs any more, so that they do not pile up (a kubelet
// makes a PodCertificateRequest per pod and refresh). It looks at each
// request when it changes and again when it is due.
type Cleaner struct {
	kit.Base
	csrs certlisters.CertificateSigningRequestLister
	pcrs certlisters.PodCertificateRequestLister
	now  func() time.Time
}

// pcrPrefix marks the queue keys of PodCertificateRequests, which are
// namespaced, apart from the CSRs', which are not.
const pcrPrefix = "pcr/"

// NewCleaner wires the cleaner to kc's CSR and PodCertificateRequest
// informers.
func NewCleaner(kc *kit.Context, cfg Config) (*Cleaner, error) {
	csrs := kc.Factory.Certificates().V1().CertificateSigningRequests()
	pcrs := kc.Factory.Certificates().V1().PodCertificateRequests()
	c := &Cleaner{Base: kc.NewBase("csrcleaner", "request", 1, ""), csrs: csrs.Lister(), pcrs: pcrs.Lister(), now: cfg.Now}
	if c.now == nil {
		c.now = kc.Clock.Now
	}
	c.Loop.ReconcileAfter = c.Reconcile
	if err := c.Loop.Watch(csrs.Informer(), loop.KeyHandler(c.Queue)); err != nil {
		return nil, err
	}
	enqueuePCR := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			c.Queue.Add(pcrPrefix + key)
		}
	}
	return c, c.Loop.Watch(pcrs.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: enqueuePCR, UpdateFunc: func(_, obj any) { enqueuePCR(obj) },
	})
}

// Reconcile deletes the request if it is due, or says how long until it is.
func (c *Cleaner) Reconcile(ctx context.Context, key string) (time.Duration, error) {
	if key, ok := strings.CutPrefix(key, pcrPrefix); ok {
		return c.reconcilePCR(ctx, key)
	}
	csr, err := c.csrs.Get(key)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	left := csrExpiresAt(csr).Sub(c.now())
	if left > 0 {
		return left, nil
	}
	err = c.Client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, uidPrecondition(csr.UID))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return 0, fmt.Errorf("delete csr %s: %w", csr.Name, err)
	}
	c.Log.Info("deleted finished certificate signing request", "csr", csr.Name)
	return 0, nil
}

func (c *Cleaner) reconcilePCR(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	pcr, err := c.pcrs.PodCertificateRequests(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if left := pcr.CreationTimestamp.Add(pcrExpiration).Sub(c.now()); left > 0 {
		return left, nil
	}
	err = c.Client.CertificatesV1().PodCertificateRequests(ns).Delete(ctx, name, uidPrecondition(pcr.UID))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return 0, fmt.Errorf("delete podcertificaterequest %s: %w", key, err)
	}
	return 0, nil
}

// csrExpiresAt is when a CSR may go: an hour after it was approved and
// issued, denied or failed, or once its certificate expired; a day
// after it was made while it is pending.
func csrExpiresAt(csr *certificatesv1.CertificateSigningRequest) time.Time {
	at := csr.CreationTimestamp.Add(csrPendingExpiration)
	for _, cond := range csr.Status.Conditions {
		finished := cond.Type == certificatesv1.CertificateDenied || cond.Type == certificatesv1.CertificateFailed ||
			cond.Type == certificatesv1.CertificateApproved && len(csr.Status.Certificate) > 0
		if finished && cond.Status != "False" {
			since := cond.LastUpdateTime.Time
			if since.IsZero() {
				since = cond.LastTransitionTime.Time
			}
			at = earliest(at, since.Add(csrFinishedExpiration))
		}
	}
	if notAfter, ok := certificateNotAfter(csr.Status.Certificate); ok {
		at = earliest(at, notAfter)
	}
	return at
}

// certificateNotAfter is when the first certificate of an issued chain
// expires.
func certificateNotAfter(chain []byte) (time.Time, bool) {
	block, _ := pem.Decode(chain)
	if block == nil {
		return time.Time{}, false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return time.Time{}, false
	}
	return cert.NotAfter, true
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func uidPrecondition(uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
}
