package validation

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

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

// ParseCSR reads the one PEM "CERTIFICATE REQUEST" block of a CSR's
// spec.request and checks its signature.
func ParseCSR(data []byte) (*x509.CertificateRequest, error) {
	block, rest := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("PEM block type must be CERTIFICATE REQUEST")
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("extra data after the CERTIFICATE REQUEST PEM block")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, err
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("invalid signature: %w", err)
	}
	return req, nil
}

func CertificateSigningRequest(csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	allErrs := field.ErrorList{}
	spec := field.NewPath("spec")
	var req *x509.CertificateRequest
	if len(csr.Spec.Request) == 0 {
		allErrs = append(allErrs, field.Required(spec.Child("request"), ""))
	} else if r, err := ParseCSR(csr.Spec.Request); err != nil {
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

// validateSignerName: "<domain>/<path>", the domain a DNS subdomain.
func validateSignerName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if name == legacyUnknownSignerName {
		return field.ErrorList{field.Invalid(p, name, "the legacy signerName is not allowed via this API version")}
	}
	domain, path, ok := strings.Cut(name, "/")
	if !ok || path == "" {
		return field.ErrorList{field.Invalid(p, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	allErrs := field.ErrorList{}
	for _, e := range DNS1123Subdomain(domain, p) {
		e.Detail = "the domain part: " + e.Detail
		allErrs = append(allErrs, e)
	}
	if len(name) > 571 {
		allErrs = append(allErrs, field.TooLong(p, "", 571))
	}
	return allErrs
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
			allErrs = append(allErrs, Enum(c.Status, []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown}, cp.Child("status"))...)
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

func CertificateSigningRequestUpdate(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	allErrs := Immutable(csr.Spec, old.Spec, field.NewPath("spec"))
	if len(old.Status.Certificate) > 0 && !bytes.Equal(old.Status.Certificate, csr.Status.Certificate) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not modify existing certificate content"))
	}
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
		if hasCondition(old.Status.Conditions, t) && !hasCondition(csr.Status.Conditions, t) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("status", "conditions"), fmt.Sprintf("updates may not remove a condition of type %q", t)))
		}
	}
	return allErrs
}

func hasCondition(conds []certificatesv1.CertificateSigningRequestCondition, t certificatesv1.RequestConditionType) bool {
	return slices.ContainsFunc(conds, func(c certificatesv1.CertificateSigningRequestCondition) bool { return c.Type == t })
}
