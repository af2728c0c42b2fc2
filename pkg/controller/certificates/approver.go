package certificates

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Approver approves node client certificate requests from bootstrap tokens
// and from the nodes themselves.
type Approver struct{ *base }

// NewApprover wires the approver to kc's CSR informer. Nothing runs
// until Start (kit.Run starts the informers).
func NewApprover(kc *kit.Context, cfg Config) (*Approver, error) {
	b, err := newBase("csrapproving", kc, cfg)
	a := &Approver{b}
	b.Loop.Reconcile = a.Reconcile
	return a, err
}

// Reconcile approves CSR name if it is pending and the rules allow it.
func (a *Approver) Reconcile(ctx context.Context, name string) error {
	csr, err := a.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if decided(csr) {
		return nil
	}
	req, err := validation.ParseCSR(csr.Spec.Request)
	if err != nil {
		return nil // the apiserver validated it: nothing sensible to do
	}
	ok, why := approval(csr, req)
	if !ok {
		a.Log.Debug("leaving the request to an administrator", "csr", name, "why", why)
		return nil
	}
	now := metav1.NewTime(a.now())
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
		Reason: "AutoApproved", Message: why, LastUpdateTime: now, LastTransitionTime: now,
	})
	if _, err := a.Client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, name, csr, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("approve %s: %w", name, err)
	}
	a.Log.Info("approved", "csr", name, "requester", csr.Spec.Username, "subject", req.Subject.String())
	return nil
}

// decided: approved, denied or failed already.
func decided(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return true
		}
	}
	return false
}
