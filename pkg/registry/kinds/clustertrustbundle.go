package kinds

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// ClusterTrustBundles: X.509 trust anchors published cluster-wide
// (certificates.k8s.io/v1). A bundle with a signerName is named after
// it; the signerName never changes.
func clusterTrustBundles() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: certificatesv1.SchemeGroupVersion.WithResource("clustertrustbundles"), Kind: "ClusterTrustBundle",
		NoGeneration: true,
		// The name rule depends on spec.signerName: Validate checks it.
		Validate: validator(validateClusterTrustBundle),
		ValidateUpdate: updateValidator(func(b, old *certificatesv1.ClusterTrustBundle) field.ErrorList {
			return validation.Immutable(b.Spec.SignerName, old.Spec.SignerName, field.NewPath("spec", "signerName"))
		}),
		Printer: clusterTrustBundlePrinter,
	}
}

func validateClusterTrustBundle(b *certificatesv1.ClusterTrustBundle) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range clusterTrustBundleName(b.Name, b.Spec.SignerName) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "name"), b.Name, msg))
	}
	if b.Spec.SignerName != "" {
		allErrs = append(allErrs, signerNameFormat(b.Spec.SignerName, field.NewPath("spec", "signerName"))...)
	}
	return append(allErrs, validateTrustBundle(b.Spec.TrustBundle, field.NewPath("spec", "trustBundle"))...)
}

// clusterTrustBundleName: a bundle without a signer has a DNS subdomain
// name without ':'; one with a signer is named "<signer with / as :>:"
// followed by a DNS subdomain.
func clusterTrustBundleName(name, signer string) []string {
	if signer == "" {
		if strings.Contains(name, ":") {
			return []string{`ClusterTrustBundle without signer name must not have ":" in its name`}
		}
		return apivalidation.NameIsDNSSubdomain(name, false)
	}
	prefix := strings.ReplaceAll(signer, "/", ":") + ":"
	if !strings.HasPrefix(name, prefix) {
		return []string{fmt.Sprintf("ClusterTrustBundle for signerName %s must be named with prefix %s", signer, prefix)}
	}
	return apivalidation.NameIsDNSSubdomain(strings.TrimPrefix(name, prefix), false)
}

// validateTrustBundle: one or more PEM CERTIFICATE blocks, without
// headers, each an X.509 certificate, none twice.
func validateTrustBundle(bundle string, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	var seen [][]byte
	rest := []byte(bundle)
	for i := 0; ; i++ {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			allErrs = append(allErrs, field.Invalid(p, "<value omitted>", fmt.Sprintf("entry %d has bad block type: %v", i, block.Type)))
			continue
		}
		if len(block.Headers) != 0 {
			allErrs = append(allErrs, field.Invalid(p, "<value omitted>", fmt.Sprintf("entry %d has PEM block headers", i)))
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			allErrs = append(allErrs, field.Invalid(p, "<value omitted>", fmt.Sprintf("entry %d does not parse as X.509", i)))
			continue
		}
		for j, s := range seen {
			if bytes.Equal(s, block.Bytes) {
				allErrs = append(allErrs, field.Invalid(p, "<value omitted>", fmt.Sprintf("duplicate trust anchor (indices [%d %d])", j, i)))
			}
		}
		seen = append(seen, block.Bytes)
	}
	if len(seen) == 0 && len(allErrs) == 0 {
		allErrs = append(allErrs, field.Invalid(p, "<value omitted>", "at least one trust anchor must be provided"))
	}
	return allErrs
}

var clusterTrustBundlePrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("SignerName", "string", certificatesv1.ClusterTrustBundleSpec{}.SwaggerDoc()["signerName"]),
	},
	func(b *certificatesv1.ClusterTrustBundle, _ time.Time) []interface{} {
		return []interface{}{b.Name, printers.OrDefault(b.Spec.SignerName, "<none>")}
	},
)
