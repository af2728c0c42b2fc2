package kinds

import (
	"slices"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/registry"
)

func cond(t certificatesv1.RequestConditionType) certificatesv1.CertificateSigningRequestCondition {
	return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue}
}

func types(csr *certificatesv1.CertificateSigningRequest) []certificatesv1.RequestConditionType {
	var out []certificatesv1.RequestConditionType
	for _, c := range csr.Status.Conditions {
		out = append(out, c.Type)
	}
	return out
}

func TestCSRSubresources(t *testing.T) {
	stored := &certificatesv1.CertificateSigningRequest{
		Spec:   certificatesv1.CertificateSigningRequestSpec{Username: "system:bootstrap:abcdef", SignerName: "example.com/x"},
		Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved)}},
	}
	// /status: the approval stays as stored, the rest is the request's.
	st := stored.DeepCopy()
	st.Status = certificatesv1.CertificateSigningRequestStatus{
		Conditions:  []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateDenied), cond(certificatesv1.CertificateFailed)},
		Certificate: []byte("cert"),
	}
	csrKeepApproval(st, stored)
	if got := types(st); !slices.Equal(got, []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateFailed}) || string(st.Status.Certificate) != "cert" {
		t.Fatalf("/status kept %v %q", got, st.Status.Certificate)
	}
	// /approval: only the approval is the request's.
	issued := st.DeepCopy()
	ap := issued.DeepCopy()
	ap.Status = certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateDenied)}}
	csrKeepAllButApproval(ap, issued)
	if got := types(ap); !slices.Equal(got, []certificatesv1.RequestConditionType{certificatesv1.CertificateDenied, certificatesv1.CertificateFailed}) || string(ap.Status.Certificate) != "cert" {
		t.Fatalf("/approval kept %v %q", got, ap.Status.Certificate)
	}
	// The main resource keeps the spec; create records the requester.
	main := stored.DeepCopy()
	main.Spec.Username = "system:node:n1"
	csrKeepSpec(main, stored)
	if main.Spec.Username != stored.Spec.Username {
		t.Fatalf("spec changed to %+v", main.Spec)
	}
	csrCreatedBy(main, registry.Requester{Name: "alice", UID: "u1", Groups: []string{"dev"}})
	if main.Spec.Username != "alice" || main.Spec.UID != "u1" || !slices.Equal(main.Spec.Groups, []string{"dev"}) {
		t.Fatalf("requester %+v", main.Spec)
	}
}
