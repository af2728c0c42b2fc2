package printers

import (
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// CertificateSigningRequests (certificates.k8s.io/v1), as kubectl shows them.

var CertificateSigningRequest = Typed(
	[]metav1.TableColumnDefinition{
		NameColumn(),
		AgeColumn(),
		Column("SignerName", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["signerName"]),
		Column("Requestor", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["username"]),
		Column("RequestedDuration", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["expirationSeconds"]),
		Column("Condition", "string", certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]),
	},
	func(csr *certificatesv1.CertificateSigningRequest, now time.Time) []interface{} {
		requested := None
		if csr.Spec.ExpirationSeconds != nil {
			requested = duration.HumanDuration(time.Duration(*csr.Spec.ExpirationSeconds) * time.Second)
		}
		return []interface{}{csr.Name, Age(csr.CreationTimestamp, now), csr.Spec.SignerName, csr.Spec.Username, requested, csrCondition(&csr.Status)}
	},
)

// csrCondition is Pending, Approved or Denied, then Failed and Issued.
func csrCondition(st *certificatesv1.CertificateSigningRequestStatus) string {
	var approved, denied, failed bool
	for _, c := range st.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		case certificatesv1.CertificateFailed:
			failed = true
		}
	}
	out := "Pending"
	switch {
	case denied:
		out = "Denied"
	case approved:
		out = "Approved"
	}
	if failed {
		out += ",Failed"
	}
	if len(st.Certificate) > 0 {
		out += ",Issued"
	}
	return out
}
