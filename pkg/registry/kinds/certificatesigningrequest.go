package kinds

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
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
		Default:        defaulter(defaultCSR),
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validateCSR),
		ValidateUpdate: updateValidator(validateCSRUpdate),
		Printer:        csrPrinter,
		FieldLabels: func(obj runtime.Object) fields.Set {
			return fields.Set{"spec.signerName": obj.(*certificatesv1.CertificateSigningRequest).Spec.SignerName}
		},
		CreatedBy: csrCreatedBy, PrepareForUpdate: csrKeepSpec, PrepareForStatusUpdate: csrKeepApproval, Approval: csrKeepAllButApproval,
		ValidateStatusUpdate: updateValidator(validateCSRStatusUpdate),
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

// csrKeepApproval: /status keeps the stored Approved and Denied
// conditions where the request has as many of them, in the request's
// places, as Kubernetes' status strategy does; a request that adds or
// drops one is left for ValidateStatusUpdate to refuse.
func csrKeepApproval(obj, old runtime.Object) {
	csr, prev := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
		oldAt, newAt := conditionIndices(prev.Status.Conditions, t), conditionIndices(csr.Status.Conditions, t)
		if len(oldAt) != len(newAt) {
			continue
		}
		for i, j := range oldAt {
			csr.Status.Conditions[newAt[i]] = *prev.Status.Conditions[j].DeepCopy()
		}
	}
	stampConditions(csr, prev, metav1.Now())
}

// csrKeepAllButApproval: /approval takes the request's conditions, all
// of them, and keeps the rest of the stored status (the certificate).
func csrKeepAllButApproval(obj, old runtime.Object) {
	csr, prev := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	status := *prev.Status.DeepCopy()
	status.Conditions = csr.Status.Conditions
	csr.Status = status
	stampConditions(csr, prev, metav1.Now())
}

func conditionIndices(conds []certificatesv1.CertificateSigningRequestCondition, t certificatesv1.RequestConditionType) []int {
	var at []int
	for i, c := range conds {
		if c.Type == t {
			at = append(at, i)
		}
	}
	return at
}

// stampConditions fills a condition's lastUpdateTime with now and its
// lastTransitionTime with that of a stored condition of the same type and
// status, or now, where the request left them out.
func stampConditions(csr, prev *certificatesv1.CertificateSigningRequest, now metav1.Time) {
	for i := range csr.Status.Conditions {
		c := &csr.Status.Conditions[i]
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = now
		}
		if !c.LastTransitionTime.IsZero() {
			continue
		}
		c.LastTransitionTime = now
		for _, p := range prev.Status.Conditions {
			if p.Type == c.Type && p.Status == c.Status && !p.LastTransitionTime.IsZero() {
				c.LastTransitionTime = p.LastTransitionTime
				break
			}
		}
	}
}

// validateCSRStatusUpdate: /status neither adds nor changes an Approved or
// Denied condition; that is /approval's.
func validateCSRStatusUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	var allErrs field.ErrorList
	p := field.NewPath("status", "conditions")
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
		was, is := keepMatching(old.Status.Conditions, ofType(t)), keepMatching(csr.Status.Conditions, ofType(t))
		switch {
		case len(is) < len(was):
			// validateCSRUpdate refuses removals.
		case len(is) > len(was):
			allErrs = append(allErrs, field.Forbidden(p, fmt.Sprintf("updates may not add a condition of type %q", t)))
		case !apiequality.Semantic.DeepEqual(was, is):
			allErrs = append(allErrs, field.Forbidden(p, fmt.Sprintf("updates may not modify a condition of type %q", t)))
		}
	}
	return allErrs
}

func ofType(t certificatesv1.RequestConditionType) func(certificatesv1.CertificateSigningRequestCondition) bool {
	return func(c certificatesv1.CertificateSigningRequestCondition) bool { return c.Type == t }
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

// Defaults.

// defaultCSR: a condition without a status is "True" (v1 defaulting).
func defaultCSR(csr *certificatesv1.CertificateSigningRequest) {
	for i := range csr.Status.Conditions {
		if csr.Status.Conditions[i].Status == "" {
			csr.Status.Conditions[i].Status = corev1.ConditionTrue
		}
	}
}

// Validation.

// legacyUnknownSignerName is certificates.k8s.io/v1beta1's default signer,
// not allowed in v1.
const legacyUnknownSignerName = "kubernetes.io/legacy-unknown"

// minCSRExpirationSeconds is the shortest certificate lifetime a CSR may ask for.
const minCSRExpirationSeconds = 600

var validKeyUsages = []certificatesv1.KeyUsage{
	certificatesv1.UsageSigning, certificatesv1.UsageDigitalSignature, certificatesv1.UsageContentCommitment,
	certificatesv1.UsageKeyEncipherment, certificatesv1.UsageKeyAgreement, certificatesv1.UsageDataEncipherment,
	certificatesv1.UsageCertSign, certificatesv1.UsageCRLSign, certificatesv1.UsageEncipherOnly,
	certificatesv1.UsageDecipherOnly, certificatesv1.UsageAny, certificatesv1.UsageServerAuth,
	certificatesv1.UsageClientAuth, certificatesv1.UsageCodeSigning, certificatesv1.UsageEmailProtection,
	certificatesv1.UsageSMIME, certificatesv1.UsageIPsecEndSystem, certificatesv1.UsageIPsecTunnel,
	certificatesv1.UsageIPsecUser, certificatesv1.UsageTimestamping, certificatesv1.UsageOCSPSigning,
	certificatesv1.UsageMicrosoftSGC, certificatesv1.UsageNetscapeSGC,
}

func validateCSR(csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	allErrs := field.ErrorList{}
	spec := field.NewPath("spec")
	var req *x509.CertificateRequest
	if len(csr.Spec.Request) == 0 {
		allErrs = append(allErrs, field.Required(spec.Child("request"), ""))
	} else if r, err := validation.ParseCSR(csr.Spec.Request); err != nil {
		allErrs = append(allErrs, field.Invalid(spec.Child("request"), "<certificate request>", err.Error()))
	} else {
		req = r
	}
	allErrs = append(allErrs, validateSignerName(csr.Spec.SignerName, spec.Child("signerName"))...)
	if len(csr.Spec.Usages) == 0 {
		allErrs = append(allErrs, field.Required(spec.Child("usages"), "usages must be provided"))
	}
	seen := map[certificatesv1.KeyUsage]bool{}
	for i, u := range csr.Spec.Usages {
		p := spec.Child("usages").Index(i)
		if !slices.Contains(validKeyUsages, u) {
			allErrs = append(allErrs, field.NotSupported(p, u, validKeyUsages))
		}
		if seen[u] {
			allErrs = append(allErrs, field.Duplicate(p, u))
		}
		seen[u] = true
	}
	if e := csr.Spec.ExpirationSeconds; e != nil && *e < minCSRExpirationSeconds {
		allErrs = append(allErrs, field.Invalid(spec.Child("expirationSeconds"), *e,
			fmt.Sprintf("may not specify a duration less than %d seconds (10 minutes)", minCSRExpirationSeconds)))
	}
	// Kubernetes' CertificateSubjectRestriction admission: no system:masters
	// client certificates from the API.
	if req != nil && csr.Spec.SignerName == certificatesv1.KubeAPIServerClientSignerName && slices.Contains(req.Subject.Organization, "system:masters") {
		allErrs = append(allErrs, field.Forbidden(spec.Child("request"),
			`use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed`))
	}
	return append(allErrs, validateCSRStatus(&csr.Status)...)
}

// validateSignerName: a signer name, not v1beta1's legacy default.
func validateSignerName(name string, p *field.Path) field.ErrorList {
	if name == legacyUnknownSignerName {
		return field.ErrorList{field.Invalid(p, name, "the legacy signerName is not allowed via this API version")}
	}
	return validation.SignerName(name, p)
}

func validateCSRStatus(st *certificatesv1.CertificateSigningRequestStatus) field.ErrorList {
	allErrs := field.ErrorList{}
	p := field.NewPath("status", "conditions")
	seen := map[certificatesv1.RequestConditionType]bool{}
	approved, denied := false, false
	for i, c := range st.Conditions {
		cp := p.Index(i)
		if c.Type == "" {
			allErrs = append(allErrs, field.Required(cp.Child("type"), ""))
		}
		switch c.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			if seen[c.Type] {
				allErrs = append(allErrs, field.Duplicate(cp.Child("type"), c.Type))
			}
			seen[c.Type] = true
		}
		switch c.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied:
			if c.Status != corev1.ConditionTrue {
				allErrs = append(allErrs, field.NotSupported(cp.Child("status"), c.Status, []corev1.ConditionStatus{corev1.ConditionTrue}))
			}
			approved = approved || c.Type == certificatesv1.CertificateApproved
			denied = denied || c.Type == certificatesv1.CertificateDenied
		default:
			allErrs = append(allErrs, validation.Enum(c.Status, []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown}, cp.Child("status"))...)
		}
	}
	if approved && denied {
		allErrs = append(allErrs, field.Invalid(p, st.Conditions, "Approved and Denied conditions are mutually exclusive"))
	}
	if len(st.Certificate) > 0 {
		cp := field.NewPath("status", "certificate")
		if !approved || denied {
			allErrs = append(allErrs, field.Forbidden(cp, "may only be set once the request is approved"))
		}
		if err := validateCertificatePEM(st.Certificate); err != nil {
			allErrs = append(allErrs, field.Invalid(cp, "<certificate data>", err.Error()))
		}
	}
	return allErrs
}

// validateCertificatePEM: one or more CERTIFICATE blocks and nothing else.
func validateCertificatePEM(data []byte) error {
	n := 0
	for rest := data; len(bytes.TrimSpace(rest)) > 0; n++ {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return fmt.Errorf("extra data after PEM block %d", n)
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) > 0 {
			return fmt.Errorf("no PEM block headers are permitted")
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return err
		}
	}
	if n == 0 {
		return fmt.Errorf("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

func validateCSRUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	allErrs := validation.Immutable(csr.Spec, old.Spec, field.NewPath("spec"))
	if len(old.Status.Certificate) > 0 && !bytes.Equal(old.Status.Certificate, csr.Status.Certificate) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not modify existing certificate content"))
	}
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		if len(keepMatching(csr.Status.Conditions, ofType(t))) < len(keepMatching(old.Status.Conditions, ofType(t))) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("status", "conditions"), fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	return allErrs
}

// The table.

// CertificateSigningRequests (certificates.k8s.io/v1), as kubectl shows them.

var csrPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.AgeColumn(),
		printers.Column("SignerName", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["signerName"]),
		printers.Column("Requestor", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["username"]),
		printers.Column("RequestedDuration", "string", certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["expirationSeconds"]),
		printers.Column("Condition", "string", certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]),
	},
	func(csr *certificatesv1.CertificateSigningRequest, now time.Time) []interface{} {
		requested := printers.None
		if csr.Spec.ExpirationSeconds != nil {
			requested = duration.HumanDuration(time.Duration(*csr.Spec.ExpirationSeconds) * time.Second)
		}
		return []interface{}{csr.Name, printers.Age(csr.CreationTimestamp, now), csr.Spec.SignerName, csr.Spec.Username, requested, csrCondition(&csr.Status)}
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
