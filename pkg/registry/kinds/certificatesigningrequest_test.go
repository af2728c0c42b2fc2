package kinds

import (
	"slices"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	stampConditions(stored, stored, metav1.Now()) // as /approval stored it
	// /status: a stored approval the request still carries stays as
	// stored, in the request's place; the rest is the request's.
	st := stored.DeepCopy()
	changed := cond(certificatesv1.CertificateApproved)
	changed.Reason = "rewritten"
	st.Status = certificatesv1.CertificateSigningRequestStatus{
		Conditions:  []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateFailed), changed},
		Certificate: []byte("cert"),
	}
	csrKeepApproval(st, stored)
	if got := types(st); !slices.Equal(got, []certificatesv1.RequestConditionType{certificatesv1.CertificateFailed, certificatesv1.CertificateApproved}) ||
		st.Status.Conditions[1].Reason != "" || string(st.Status.Certificate) != "cert" {
		t.Fatalf("/status kept %+v", st.Status)
	}
	if st.Status.Conditions[0].LastUpdateTime.IsZero() || st.Status.Conditions[0].LastTransitionTime.IsZero() {
		t.Errorf("/status left a new condition without timestamps: %+v", st.Status.Conditions[0])
	}
	if errs := validateCSRStatusUpdate(st, stored); len(errs) != 0 {
		t.Errorf("keeping the approval through /status: %v", errs)
	}
	// /status may not add an approval or denial.
	added := st.DeepCopy()
	added.Status.Conditions = append(added.Status.Conditions, cond(certificatesv1.CertificateDenied))
	csrKeepApproval(added, st)
	if errs := validateCSRStatusUpdate(added, st); len(errs) != 1 {
		t.Errorf("adding Denied through /status: %v, want one error", errs)
	}
	// /approval: every condition is the request's, the certificate stays.
	issued := st.DeepCopy()
	ap := issued.DeepCopy()
	ap.Status = certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{cond("ApprovalPatch"), cond(certificatesv1.CertificateApproved)}}
	csrKeepAllButApproval(ap, issued)
	if got := types(ap); !slices.Equal(got, []certificatesv1.RequestConditionType{"ApprovalPatch", certificatesv1.CertificateApproved}) || string(ap.Status.Certificate) != "cert" {
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
