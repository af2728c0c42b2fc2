package kinds

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
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
	for _, msg := range validation.ClusterTrustBundleName(b.Spec.SignerName)(b.Name, false) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "name"), b.Name, msg))
	}
	if b.Spec.SignerName != "" {
		allErrs = append(allErrs, validation.SignerName(b.Spec.SignerName, field.NewPath("spec", "signerName"))...)
	}
	return append(allErrs, validateTrustBundle(b.Spec.TrustBundle, field.NewPath("spec", "trustBundle"))...)
}

// maxTrustBundleSize is the most one spec.trustBundle may hold.
const maxTrustBundleSize = 1 << 20

// validateTrustBundle: one or more PEM CERTIFICATE blocks, without
// headers, each an X.509 CA certificate with valid basic constraints, none
// twice. A malformed block is all that is said about a bundle that has one.
func validateTrustBundle(bundle string, p *field.Path) field.ErrorList {
	if len(bundle) > maxTrustBundleSize {
		return field.ErrorList{field.TooLong(p, "", maxTrustBundleSize)}
	}
	var allErrs field.ErrorList
	seen := map[string][]int{}
	var order []string
	rest := []byte(bundle)
	for i := 0; ; i++ {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		bad := func(msg string) {
			allErrs = append(allErrs, field.Invalid(p, "<value omitted>", fmt.Sprintf("entry %d %s", i, msg)))
		}
		if block.Type != "CERTIFICATE" {
			bad("has bad block type: " + block.Type)
			continue
		}
		if len(block.Headers) != 0 {
			bad("has PEM block headers")
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		switch {
		case err != nil:
			bad("does not parse as X.509")
			continue
		case !cert.IsCA:
			bad("does not have the CA bit set")
			continue
		case !cert.BasicConstraintsValid:
			bad("has invalid basic constraints")
			continue
		}
		if _, ok := seen[string(block.Bytes)]; !ok {
			order = append(order, string(block.Bytes))
		}
		seen[string(block.Bytes)] = append(seen[string(block.Bytes)], i)
	}
	if len(allErrs) > 0 {
		return allErrs
	}
	if len(seen) == 0 {
		return field.ErrorList{field.Invalid(p, "<value omitted>", "at least one trust anchor must be provided")}
	}
	for _, der := range order {
		if at := seen[der]; len(at) > 1 {
			allErrs = append(allErrs, field.Invalid(p, "<value omitted>", fmt.Sprintf("duplicate trust anchor (indices %v)", at)))
		}
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
