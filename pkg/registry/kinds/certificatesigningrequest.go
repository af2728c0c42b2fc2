package kinds

import (
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// CertificateSigningRequests follow Kubernetes' strategies: the apiserver
// writes who asked (spec.username, uid, groups) and nobody changes the
// spec afterwards; /approval alone adds or changes the Approved and Denied
// conditions, /status the rest of the status (the certificate, Failed).
func certificateSigningRequests() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"),
		Kind:                 "CertificateSigningRequest", ShortNames: []string{"csr"}, Status: true, NoGeneration: true,
		Default:        defaulter(defaults.CertificateSigningRequest),
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validation.CertificateSigningRequest),
		ValidateUpdate: updateValidator(validation.CertificateSigningRequestUpdate),
		Printer:        printers.CertificateSigningRequest,
		FieldLabels: func(obj runtime.Object) fields.Set {
			return fields.Set{"spec.signerName": obj.(*certificatesv1.CertificateSigningRequest).Spec.SignerName}
		},
		CreatedBy: csrCreatedBy, PrepareForUpdate: csrKeepSpec, PrepareForStatusUpdate: csrKeepApproval, Approval: csrKeepAllButApproval,
	}
}

func csrCreatedBy(obj runtime.Object, by registry.Requester) {
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	csr.Spec.Username, csr.Spec.UID = by.Name, by.UID
	csr.Spec.Groups = slices.Clone(by.Groups)
	csr.Spec.Extra = nil
}

func csrKeepSpec(obj, old runtime.Object) {
	obj.(*certificatesv1.CertificateSigningRequest).Spec = *old.(*certificatesv1.CertificateSigningRequest).Spec.DeepCopy()
}

// isApproval says whether a condition is the approver's to write.
func isApproval(c certificatesv1.CertificateSigningRequestCondition) bool {
	return c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied
}

// csrKeepApproval: /status keeps the stored Approved and Denied conditions
// and drops any the request brings.
func csrKeepApproval(obj, old runtime.Object) {
	csr, prev := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	conds := slices.DeleteFunc(slices.Clone(csr.Status.Conditions), isApproval)
	csr.Status.Conditions = append(keepMatching(prev.Status.Conditions, isApproval), conds...)
}

// csrKeepAllButApproval: /approval takes the request's Approved and Denied
// conditions and keeps the rest of the stored status.
func csrKeepAllButApproval(obj, old runtime.Object) {
	csr, prev := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	approval := keepMatching(csr.Status.Conditions, isApproval)
	status := *prev.Status.DeepCopy()
	status.Conditions = append(approval, slices.DeleteFunc(status.Conditions, isApproval)...)
	csr.Status = status
}

func keepMatching(conds []certificatesv1.CertificateSigningRequestCondition, keep func(certificatesv1.CertificateSigningRequestCondition) bool) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, c := range conds {
		if keep(c) {
			out = append(out, *c.DeepCopy())
		}
	}
	return out
}
