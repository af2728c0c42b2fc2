package validation

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

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

// Certificate lifetimes a PodCertificateRequest (and a pod's podCertificate
// projection) may ask for, as certificates.k8s.io defines them.
const (
	// MinMaxExpirationSeconds is the shortest maxExpirationSeconds: 1 hour.
	MinMaxExpirationSeconds = 60 * 60
	// MaxMaxExpirationSeconds is the longest for other signers: 91 days.
	MaxMaxExpirationSeconds = 91 * 24 * 60 * 60
	// KubernetesMaxMaxExpirationSeconds is the longest for kubernetes.io
	// signers: 24 hours.
	KubernetesMaxMaxExpirationSeconds = 24 * 60 * 60
)

// PodCertificateKeyTypes are the key types a podCertificate projection
// may ask the kubelet for.
var PodCertificateKeyTypes = []string{"RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"}

// IsKubernetesSignerName says whether signerName's domain is reserved to
// the Kubernetes project (kubernetes.io and its subdomains).
func IsKubernetesSignerName(signerName string) bool {
	host, _, _ := strings.Cut(signerName, "/")
	return host == "kubernetes.io" || strings.HasSuffix(host, ".kubernetes.io")
}

// SignerName checks a certificates.k8s.io signer name: "<domain>/<path>",
// the domain DNS labels with at least one dot, the path dot-separated DNS
// subdomains (room for "<namespace>.<name>"), 571 characters at most.
func SignerName(signerName string, fldPath *field.Path) field.ErrorList {
	if signerName == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	domain, path, ok := strings.Cut(signerName, "/")
	if !ok || strings.Contains(path, "/") {
		return field.ErrorList{field.Invalid(fldPath, signerName, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var allErrs field.ErrorList
	if len(domain) > utilvalidation.DNS1123SubdomainMaxLength {
		allErrs = append(allErrs, field.TooLong(fldPath, "", utilvalidation.DNS1123SubdomainMaxLength))
	}
	labels := strings.Split(domain, ".")
	for _, l := range labels {
		if msgs := utilvalidation.IsDNS1123Label(l); len(msgs) > 0 {
			for _, msg := range msgs {
				allErrs = append(allErrs, field.Invalid(fldPath, domain, fmt.Sprintf("validating label %q: %s", l, msg)))
			}
			break // the same error for every later label says nothing more
		}
	}
	if len(labels) < 2 {
		allErrs = append(allErrs, field.Invalid(fldPath, domain, "should be a domain with at least two segments separated by dots"))
	}
	for _, l := range strings.Split(path, ".") {
		if msgs := utilvalidation.IsDNS1123Subdomain(l); len(msgs) > 0 {
			for _, msg := range msgs {
				allErrs = append(allErrs, field.Invalid(fldPath, path, fmt.Sprintf("validating label %q: %s", l, msg)))
			}
			break
		}
	}
	maxLen := utilvalidation.DNS1123SubdomainMaxLength + (utilvalidation.DNS1123SubdomainMaxLength + utilvalidation.DNS1123LabelMaxLength + 1) + 1
	if len(signerName) > maxLen {
		allErrs = append(allErrs, field.TooLong(fldPath, "", maxLen))
	}
	return allErrs
}

// ClusterTrustBundleName checks a ClusterTrustBundle's name against its
// signer: without one, a DNS subdomain with no ':'; with one, the signer
// with '/' as ':', then ':', then a DNS subdomain.
func ClusterTrustBundleName(signerName string) apimachineryvalidation.ValidateNameFunc {
	return func(name string, prefix bool) []string {
		if signerName == "" {
			if strings.Contains(name, ":") {
				return []string{`ClusterTrustBundle without signer name must not have ":" in its name`}
			}
			return apimachineryvalidation.NameIsDNSSubdomain(name, prefix)
		}
		want := strings.ReplaceAll(signerName, "/", ":") + ":"
		if !strings.HasPrefix(name, want) {
			return []string{fmt.Sprintf("ClusterTrustBundle for signerName %s must be named with prefix %s", signerName, want)}
		}
		return apimachineryvalidation.NameIsDNSSubdomain(strings.TrimPrefix(name, want), prefix)
	}
}

// UserAnnotations checks the annotations a pod passes to a signer: keys
// domain-prefixed (any case), annotations' size limit.
func UserAnnotations(annotations map[string]string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for k := range annotations {
		allErrs = append(allErrs, utilvalidation.IsDomainPrefixedKey(fldPath, strings.ToLower(k))...)
	}
	if err := apimachineryvalidation.ValidateAnnotationsSize(annotations); err != nil {
		allErrs = append(allErrs, field.TooLong(fldPath, "", apimachineryvalidation.TotalAnnotationSizeLimitB))
	}
	return allErrs
}
