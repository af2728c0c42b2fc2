package certificates

import (
	"context"
	"crypto/x509"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// DefaultDuration is the longest certificate the signer issues, as
// kube-controller-manager's --cluster-signing-duration.
const DefaultDuration = 365 * 24 * time.Hour

// CA signs certificate requests (pki.Bundle).
type CA interface {
	SignCertificateRequest(req *x509.CertificateRequest, ku x509.KeyUsage, eku []x509.ExtKeyUsage, validity time.Duration) ([]byte, error)
}

// SignerConfig configures the signer.
type SignerConfig struct {
	Config
	// Duration caps the certificates' lifetime (default DefaultDuration); a
	// CSR's spec.expirationSeconds may only shorten it.
	Duration time.Duration
}

// Signer issues the certificates of approved client CSRs.
type Signer struct {
	*base
	ca       CA
	duration time.Duration
}

// NewSigner wires the signer to kc's CSR informer. Nothing runs until
// Start (kit.Run starts the informers).
func NewSigner(kc *kit.Context, ca CA, cfg SignerConfig) (*Signer, error) {
	if ca == nil {
		return nil, fmt.Errorf("csrsigning: a CA is required")
	}
	if cfg.Duration <= 0 {
		cfg.Duration = DefaultDuration
	}
	b, err := newBase("csrsigning", kc, cfg.Config)
	s := &Signer{base: b, ca: ca, duration: cfg.Duration}
	b.Loop.Reconcile = s.Reconcile
	return s, err
}

// Reconcile issues CSR name's certificate once it is approved, or marks it
// Failed when its request does not fit its signer.
func (s *Signer) Reconcile(ctx context.Context, name string) error {
	csr, err := s.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(csr.Status.Certificate) > 0 || !approved(csr) || !signs(csr.Spec.SignerName) {
		return nil
	}
	req, err := validation.ParseCSR(csr.Spec.Request)
	if err != nil {
		return s.fail(ctx, csr, err)
	}
	ku, eku, err := signing(csr, req)
	if err != nil {
		return s.fail(ctx, csr, err)
	}
	validity := s.duration
	if e := csr.Spec.ExpirationSeconds; e != nil && time.Duration(*e)*time.Second < validity {
		validity = time.Duration(*e) * time.Second
	}
	certPEM, err := s.ca.SignCertificateRequest(req, ku, eku, validity)
	if err != nil {
		return fmt.Errorf("sign %s: %w", name, err)
	}
	csr = csr.DeepCopy()
	csr.Status.Certificate = certPEM
	if _, err := s.Client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("issue %s: %w", name, err)
	}
	s.Log.Info("issued", "csr", name, "subject", req.Subject.String(), "validity", validity)
	return nil
}

// fail records why the signer will not sign csr.
func (s *Signer) fail(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, why error) error {
	now := metav1.NewTime(s.now())
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue,
		Reason: "SignerValidationFailure", Message: why.Error(), LastUpdateTime: now, LastTransitionTime: now,
	})
	if _, err := s.Client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("mark %s failed: %w", csr.Name, err)
	}
	s.Log.Info("not signing", "csr", csr.Name, "why", why)
	return nil
}

// approved: approved, and neither denied nor failed.
func approved(csr *certificatesv1.CertificateSigningRequest) bool {
	ok := false
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			ok = true
		case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return false
		}
	}
	return ok
}
