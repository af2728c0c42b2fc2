package kinds

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/mail"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// PodCertificateRequests (certificates.k8s.io/v1): a kubelet asks a
// signer for a pod's certificate. The spec never changes; the status is
// written once, through /status, by whoever may "sign" for the request's
// signer, to one of the terminal conditions Issued, Denied or Failed, and
// never changes after. minik8s runs no signer of its own (see
// docs/design/0036-pod-certificates.md).
func podCertificateRequests() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: certificatesv1.SchemeGroupVersion.WithResource("podcertificaterequests"),
		Kind:                 "PodCertificateRequest", Namespaced: true, Status: true, NoGeneration: true,
		Default:  defaulter(defaultPodCertificateRequest),
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validatePodCertificateRequest),
		ValidateUpdate: updateValidator(func(r, old *certificatesv1.PodCertificateRequest) field.ErrorList {
			return validation.Immutable(r.Spec, old.Spec, field.NewPath("spec"))
		}),
		ValidateStatusUpdate: updateValidator(func(r, old *certificatesv1.PodCertificateRequest) field.ErrorList {
			return validatePodCertificateRequestStatus(r, old, time.Now())
		}),
		StatusSigner: func(obj, old runtime.Object) string {
			r, prev := obj.(*certificatesv1.PodCertificateRequest), old.(*certificatesv1.PodCertificateRequest)
			if apiequality.Semantic.DeepEqual(r.Status, prev.Status) {
				return ""
			}
			return prev.Spec.SignerName
		},
		Printer: podCertificateRequestPrinter,
		FieldLabels: func(obj runtime.Object) fields.Set {
			r := obj.(*certificatesv1.PodCertificateRequest)
			return fields.Set{"spec.signerName": r.Spec.SignerName, "spec.podName": r.Spec.PodName, "spec.nodeName": string(r.Spec.NodeName)}
		},
	}
}

// defaultPodCertificateRequestExpiration is maxExpirationSeconds when
// unset: 24 hours.
const defaultPodCertificateRequestExpiration = 86400

func defaultPodCertificateRequest(r *certificatesv1.PodCertificateRequest) {
	if r.Spec.MaxExpirationSeconds == nil {
		v := int32(defaultPodCertificateRequestExpiration)
		r.Spec.MaxExpirationSeconds = &v
	}
}

// Sizes kube-apiserver allows a request and its issued chain.
const (
	maxStubPKCS10RequestSize = 10 * 1024
	maxCertificateChainSize  = 100 * 1024
)

var (
	pcrSpec          = field.NewPath("spec")
	pkcs10ReqPath    = pcrSpec.Child("stubPKCS10Request")
	certChainPath    = field.NewPath("status", "certificateChain")
	notBeforePath    = field.NewPath("status", "notBefore")
	notAfterPath     = field.NewPath("status", "notAfter")
	beginRefreshPath = field.NewPath("status", "beginRefreshAt")
)

func validatePodCertificateRequest(r *certificatesv1.PodCertificateRequest) field.ErrorList {
	s := &r.Spec
	allErrs := validation.SignerName(s.SignerName, pcrSpec.Child("signerName"))
	if s.UnverifiedUserAnnotations != nil {
		allErrs = append(allErrs, validation.UserAnnotations(s.UnverifiedUserAnnotations, pcrSpec.Child("unverifiedUserAnnotations"))...)
	}
	names := []struct {
		path, value string
	}{{"podName", s.PodName}, {"serviceAccountName", s.ServiceAccountName}, {"nodeName", string(s.NodeName)}}
	for _, n := range names {
		for _, msg := range apivalidation.NameIsDNSSubdomain(n.value, false) {
			allErrs = append(allErrs, field.Invalid(pcrSpec.Child(n.path), n.value, msg))
		}
	}
	uids := []struct {
		path, value string
	}{{"podUID", string(s.PodUID)}, {"serviceAccountUID", string(s.ServiceAccountUID)}, {"nodeUID", string(s.NodeUID)}}
	for _, u := range uids {
		switch {
		case u.value == "":
			allErrs = append(allErrs, field.Invalid(pcrSpec.Child(u.path), u.value, "must not be empty"))
		case len(u.value) > 128:
			allErrs = append(allErrs, field.TooLong(pcrSpec.Child(u.path), u.value, 128))
		}
	}
	if s.MaxExpirationSeconds == nil {
		return append(allErrs, field.Required(pcrSpec.Child("maxExpirationSeconds"), "must be set"))
	}
	most := int32(validation.MaxMaxExpirationSeconds)
	if validation.IsKubernetesSignerName(s.SignerName) {
		most = validation.KubernetesMaxMaxExpirationSeconds
	}
	if e := *s.MaxExpirationSeconds; e < validation.MinMaxExpirationSeconds || e > most {
		allErrs = append(allErrs, field.Invalid(pcrSpec.Child("maxExpirationSeconds"), e,
			fmt.Sprintf("must be in the range [%d, %d]", validation.MinMaxExpirationSeconds, most)))
	}
	if len(s.StubPKCS10Request) == 0 {
		return append(allErrs, field.Invalid(pcrSpec, field.OmitValueType{}, "exactly one of (stubPKCS10Request) or (pkixPublicKey, proofOfPossession) must be set"))
	}
	return append(allErrs, validateStubPKCS10Request(s.StubPKCS10Request)...)
}

// validateStubPKCS10Request: a DER PKCS#10 request, signed by its key, the
// key one the kubelet may make (Ed25519, ECDSA P-256/384/521, RSA 3072 or
// 4096). What the request asks for is the signer's business.
func validateStubPKCS10Request(der []byte) field.ErrorList {
	if len(der) > maxStubPKCS10RequestSize {
		return field.ErrorList{field.TooLong(pkcs10ReqPath, "", maxStubPKCS10RequestSize)}
	}
	req, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return field.ErrorList{field.Invalid(pkcs10ReqPath, field.OmitValueType{}, "must be a valid PKCS#10 CSR")}
	}
	switch pub := req.PublicKey.(type) {
	case ed25519.PublicKey:
	case *ecdsa.PublicKey:
		if pub.Curve != elliptic.P256() && pub.Curve != elliptic.P384() && pub.Curve != elliptic.P521() {
			return field.ErrorList{field.Invalid(pkcs10ReqPath, "curve "+pub.Curve.Params().Name, "elliptic public keys must use curve P256, P384, or P521")}
		}
	case *rsa.PublicKey:
		if bits := pub.Size() * 8; bits != 3072 && bits != 4096 {
			return field.ErrorList{field.Invalid(pkcs10ReqPath, fmt.Sprintf("%d-bit modulus", bits), "RSA keys must have modulus size 3072 or 4096")}
		}
	default:
		return field.ErrorList{field.Invalid(pkcs10ReqPath, field.OmitValueType{}, "unknown public key type; supported types are Ed25519, ECDSA, and RSA")}
	}
	if err := req.CheckSignature(); err != nil {
		return field.ErrorList{field.Invalid(pkcs10ReqPath, field.OmitValueType{}, "invalid signature")}
	}
	return nil
}

// The terminal conditions of a PodCertificateRequest.
var pcrTerminal = []string{
	certificatesv1.PodCertificateRequestConditionTypeIssued,
	certificatesv1.PodCertificateRequestConditionTypeDenied,
	certificatesv1.PodCertificateRequestConditionTypeFailed,
}

// pcrState is the request's terminal condition type, or "" while pending.
func pcrState(r *certificatesv1.PodCertificateRequest) string {
	for _, c := range r.Status.Conditions {
		for _, t := range pcrTerminal {
			if c.Type == t && c.Status == metav1.ConditionTrue {
				return t
			}
		}
	}
	return ""
}

// validatePodCertificateRequestStatus is Kubernetes' check of a /status
// write: at most one condition, Issued, Denied or Failed, status True; a
// request that already has one never changes; Denied and Failed carry
// nothing else; Issued carries the chain issued to the request's key, its
// leaf valid now (within 5 minutes), for 1 hour to maxExpirationSeconds,
// with notBefore, notAfter and beginRefreshAt consistent with it.
func validatePodCertificateRequestStatus(r, old *certificatesv1.PodCertificateRequest, now time.Time) field.ErrorList {
	var allErrs field.ErrorList
	conds := field.NewPath("status", "conditions")
	known := 0
	for i, c := range r.Status.Conditions {
		p := conds.Index(i)
		switch c.Type {
		case certificatesv1.PodCertificateRequestConditionTypeIssued, certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed:
			if known++; known > 1 {
				allErrs = append(allErrs, field.Invalid(p.Child("type"), c.Type, `There may be at most one condition with type "Issued", "Denied", or "Failed"`))
			}
			if c.Status != metav1.ConditionTrue {
				allErrs = append(allErrs, field.NotSupported(p.Child("status"), c.Status, []metav1.ConditionStatus{metav1.ConditionTrue}))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(p.Child("type"), c.Type, pcrTerminal))
		}
	}
	allErrs = append(allErrs, metav1validation.ValidateConditions(r.Status.Conditions, conds)...)
	if len(allErrs) > 0 {
		return allErrs
	}
	unchanged := func(detail string) field.ErrorList {
		if apiequality.Semantic.DeepEqual(r.Status, old.Status) {
			return nil
		}
		return field.ErrorList{field.Invalid(field.NewPath("status"), field.OmitValueType{}, detail)}
	}
	if pcrState(old) != "" {
		return unchanged("immutable after PodCertificateRequest is issued, denied, or failed")
	}
	switch pcrState(r) {
	case certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed:
		if !apiequality.Semantic.DeepEqual(r.Status, certificatesv1.PodCertificateRequestStatus{Conditions: r.Status.Conditions}) {
			return field.ErrorList{field.Invalid(field.NewPath("status"), field.OmitValueType{}, "non-condition status fields must be empty when denying or failing the PodCertificateRequest")}
		}
		return nil
	case certificatesv1.PodCertificateRequestConditionTypeIssued:
		return validateIssuedChain(r, now)
	}
	return unchanged(`status is immutable unless transitioning to "Issued", "Denied", or "Failed"`)
}

func validateIssuedChain(r *certificatesv1.PodCertificateRequest, now time.Time) field.ErrorList {
	st := &r.Status
	if len(st.CertificateChain) > maxCertificateChainSize {
		return field.ErrorList{field.TooLong(certChainPath, "", maxCertificateChainSize)}
	}
	invalid := func(p *field.Path, v any, detail string) field.ErrorList {
		return field.ErrorList{field.Invalid(p, v, detail)}
	}
	leafBlock, rest := pem.Decode([]byte(st.CertificateChain))
	if leafBlock == nil {
		return invalid(certChainPath, field.OmitValueType{}, "issued certificate chain must contain at least one certificate")
	}
	if leafBlock.Type != "CERTIFICATE" {
		return invalid(certChainPath, field.OmitValueType{}, "issued certificate chain must consist entirely of CERTIFICATE PEM blocks")
	}
	leaf, err := x509.ParseCertificate(leafBlock.Bytes)
	if err != nil {
		return invalid(certChainPath, field.OmitValueType{}, "leaf certificate does not parse as valid X.509")
	}
	var allErrs field.ErrorList
	for _, name := range leaf.DNSNames {
		switch {
		case name == "":
			allErrs = append(allErrs, field.Invalid(certChainPath, name, "leaf certificate should not contain empty DNSName"))
		case strings.Contains(name, ".."):
			allErrs = append(allErrs, field.Invalid(certChainPath, name, "leaf certificate's DNSName should not contain '..'"))
		case strings.HasPrefix(name, ".") || strings.HasSuffix(name, "."):
			allErrs = append(allErrs, field.Invalid(certChainPath, name, "leaf certificate's DNSName should not start or end with '.'"))
		}
	}
	for _, addr := range leaf.EmailAddresses {
		if _, err := mail.ParseAddress(addr); err != nil {
			allErrs = append(allErrs, field.Invalid(certChainPath, addr, "leaf certificate should not contain invalid EmailAddress"))
		}
	}
	req, err := x509.ParseCertificateRequest(r.Spec.StubPKCS10Request)
	if err != nil {
		return append(allErrs, field.Invalid(pkcs10ReqPath, field.OmitValueType{}, "must be a valid PKCS#10 CSR"))
	}
	if pub, ok := req.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(leaf.PublicKey) {
		return append(allErrs, field.Invalid(certChainPath, field.OmitValueType{}, "leaf certificate was not issued to the requested public key"))
	}
	if st.NotBefore == nil {
		allErrs = append(allErrs, field.Required(notBeforePath, "must be present and consistent with the issued certificate"))
	}
	if st.NotAfter == nil {
		allErrs = append(allErrs, field.Required(notAfterPath, "must be present and consistent with the issued certificate"))
	}
	if st.BeginRefreshAt == nil {
		allErrs = append(allErrs, field.Required(beginRefreshPath, "must be present and in the range [notbefore+10min, notafter-10min]"))
	}
	if len(allErrs) > 0 {
		return allErrs
	}
	switch lifetime := leaf.NotAfter.Sub(leaf.NotBefore); {
	case !st.NotBefore.Time.Equal(leaf.NotBefore):
		return invalid(notBeforePath, st.NotBefore.Time, "must be set to the NotBefore time encoded in the leaf certificate")
	case !st.NotBefore.Time.After(now.Add(-5*time.Minute)) || !st.NotBefore.Time.Before(now.Add(5*time.Minute)):
		return invalid(notBeforePath, st.NotBefore.Time, "must be set to within 5 minutes of kube-apiserver's current time")
	case !st.NotAfter.Time.Equal(leaf.NotAfter):
		return invalid(notAfterPath, st.NotAfter.Time, "must be set to the NotAfter time encoded in the leaf certificate")
	case lifetime < time.Hour:
		return invalid(certChainPath, lifetime, "leaf certificate lifetime must be >= 1 hour")
	case r.Spec.MaxExpirationSeconds != nil && lifetime > time.Duration(*r.Spec.MaxExpirationSeconds)*time.Second:
		return invalid(certChainPath, lifetime, fmt.Sprintf("leaf certificate lifetime must be <= spec.maxExpirationSeconds (%v)", *r.Spec.MaxExpirationSeconds))
	case st.BeginRefreshAt.Time.Before(st.NotBefore.Time.Add(10 * time.Minute)):
		return invalid(beginRefreshPath, st.BeginRefreshAt.Time, "must be at least 10 minutes after status.notBefore")
	case st.BeginRefreshAt.Time.After(st.NotAfter.Time.Add(-10 * time.Minute)):
		return invalid(beginRefreshPath, st.BeginRefreshAt.Time, "must be at least 10 minutes before status.notAfter")
	}
	// The rest of the chain: certificates, though not verifiable as a
	// partial chain.
	for {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return nil
		}
		if block.Type != "CERTIFICATE" {
			return invalid(certChainPath, field.OmitValueType{}, "issued certificate chain must consist entirely of CERTIFICATE PEM blocks")
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return invalid(certChainPath, field.OmitValueType{}, "intermediate certificate does not parse as valid X.509")
		}
	}
}

// PodCertificateRequests (certificates.k8s.io/v1), as kubectl shows them.
var podCertificateRequestPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("PodName", "string", certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["podName"]),
		printers.Column("ServiceAccountName", "string", certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["serviceAccountName"]),
		printers.Column("NodeName", "string", certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["nodeName"]),
		printers.Column("SignerName", "string", certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["signerName"]),
		printers.Column("State", "string", "Is the request Pending, Issued, Denied, or Failed?"),
		printers.Wide(printers.Column("UnverifiedUserAnnotations", "string", certificatesv1.PodCertificateRequestSpec{}.SwaggerDoc()["unverifiedUserAnnotations"])),
	},
	func(r *certificatesv1.PodCertificateRequest, _ time.Time) []interface{} {
		state := "Pending"
		for _, c := range r.Status.Conditions {
			switch c.Type {
			case certificatesv1.PodCertificateRequestConditionTypeIssued, certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed:
				state = c.Type
			}
		}
		return []interface{}{r.Name, r.Spec.PodName, r.Spec.ServiceAccountName, string(r.Spec.NodeName), r.Spec.SignerName, state,
			labels.FormatLabels(r.Spec.UnverifiedUserAnnotations)}
	},
)
