package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// projectedSources checks a projected volume's sources as Kubernetes'
// pod validation does: one kind per source, no two files at one path,
// and each kind's own rules (a service account token's lifetime, a
// ClusterTrustBundle's name or signer, a pod certificate's signer, key
// type and lifetime).
func projectedSources(p *corev1.ProjectedVolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	paths := sets.New[string]()
	claim := func(path string, what any) {
		if paths.Has(path) {
			allErrs = append(allErrs, field.Invalid(fldPath, what, "conflicting duplicate paths"))
		}
		paths.Insert(path)
	}
	for i := range p.Sources {
		src := &p.Sources[i]
		srcPath := fldPath.Child("sources").Index(i)
		if n := CountSetPointers(src); n > 1 {
			allErrs = append(allErrs, field.Forbidden(srcPath, "may not specify more than 1 volume type per source"))
		}
		if s := src.Secret; s != nil {
			if s.Name == "" {
				allErrs = append(allErrs, field.Required(srcPath.Child("secret", "name"), ""))
			}
			allErrs = append(allErrs, validateKeyToPaths(s.Items, srcPath.Child("secret", "items"))...)
			for _, kp := range s.Items {
				if kp.Path != "" {
					claim(kp.Path, s.Name)
				}
			}
		}
		if s := src.ConfigMap; s != nil {
			if s.Name == "" {
				allErrs = append(allErrs, field.Required(srcPath.Child("configMap", "name"), ""))
			}
			allErrs = append(allErrs, validateKeyToPaths(s.Items, srcPath.Child("configMap", "items"))...)
			for _, kp := range s.Items {
				if kp.Path != "" {
					claim(kp.Path, s.Name)
				}
			}
		}
		if s := src.DownwardAPI; s != nil {
			for _, f := range s.Items {
				if f.Path != "" {
					claim(f.Path, f.Path)
				}
			}
		}
		if s := src.ServiceAccountToken; s != nil {
			allErrs = append(allErrs, serviceAccountTokenProjection(s, srcPath.Child("serviceAccountToken"), fldPath)...)
		}
		if s := src.ClusterTrustBundle; s != nil {
			allErrs = append(allErrs, clusterTrustBundleProjection(s, srcPath.Child("clusterTrustBundle"))...)
			claim(s.Path, s.Path)
		}
		if s := src.PodCertificate; s != nil {
			pp := srcPath.Child("podCertificate")
			allErrs = append(allErrs, podCertificateProjection(s, pp)...)
			for _, f := range []struct {
				name, path string
			}{{"credentialBundlePath", s.CredentialBundlePath}, {"keyPath", s.KeyPath}, {"certificateChainPath", s.CertificateChainPath}} {
				if f.path != "" {
					allErrs = append(allErrs, localNonReservedPath(f.path, pp.Child(f.name))...)
					claim(f.path, f.path)
				}
			}
		}
	}
	return allErrs
}

func serviceAccountTokenProjection(s *corev1.ServiceAccountTokenProjection, p, volPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch exp := s.ExpirationSeconds; {
	case exp == nil:
		allErrs = append(allErrs, field.Required(p.Child("expirationSeconds"), ""))
	case *exp < 10*60:
		allErrs = append(allErrs, field.Invalid(p.Child("expirationSeconds"), *exp, "may not specify a duration less than 10 minutes"))
	case *exp > 1<<32:
		allErrs = append(allErrs, field.Invalid(p.Child("expirationSeconds"), *exp, "may not specify a duration larger than 2^32 seconds"))
	}
	// Kubernetes reports the token's path at the volume's level.
	if s.Path == "" {
		allErrs = append(allErrs, field.Required(volPath.Child("path"), ""))
	} else {
		allErrs = append(allErrs, localNonReservedPath(s.Path, volPath.Child("path"))...)
	}
	return append(allErrs, userID(s.User, p.Child("user"))...)
}

func clusterTrustBundleProjection(s *corev1.ClusterTrustBundleProjection, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case s.Name != nil && s.SignerName != nil:
		allErrs = append(allErrs, field.Invalid(p, s, "only one of name and signerName may be used"))
	case s.Name != nil:
		name := *s.Name
		if name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), "must be a valid object name"))
		}
		// "<signer with / as :>:<name>" names a signer's bundle.
		signer := ""
		if at := strings.LastIndex(name, ":"); at >= 0 {
			signer = strings.ReplaceAll(name[:at], ":", "/")
		}
		for _, msg := range ClusterTrustBundleName(signer)(name, false) {
			allErrs = append(allErrs, field.Invalid(p.Child("name"), name, "not a valid clustertrustbundlename: "+msg))
		}
		if s.LabelSelector != nil {
			allErrs = append(allErrs, field.Invalid(p.Child("labelSelector"), s.LabelSelector, "labelSelector must be unset if name is specified"))
		}
	case s.SignerName != nil:
		if *s.SignerName == "" {
			allErrs = append(allErrs, field.Required(p.Child("signerName"), "must be a valid signer name"))
		}
		allErrs = append(allErrs, SignerName(*s.SignerName, p.Child("signerName"))...)
		allErrs = append(allErrs, LabelSelector(s.LabelSelector, p.Child("labelSelector"))...)
	default:
		allErrs = append(allErrs, field.Required(p, "either name or signerName must be specified"))
	}
	if s.Path == "" {
		allErrs = append(allErrs, field.Required(p.Child("path"), ""))
	}
	allErrs = append(allErrs, userID(s.User, p.Child("user"))...)
	return append(allErrs, localNonReservedPath(s.Path, p.Child("path"))...)
}

func podCertificateProjection(s *corev1.PodCertificateProjection, p *field.Path) field.ErrorList {
	allErrs := SignerName(s.SignerName, p.Child("signerName"))
	if s.UserAnnotations != nil {
		allErrs = append(allErrs, UserAnnotations(s.UserAnnotations, p.Child("userAnnotations"))...)
	}
	allErrs = append(allErrs, userID(s.User, p.Child("user"))...)
	if !sets.New(PodCertificateKeyTypes...).Has(s.KeyType) {
		allErrs = append(allErrs, field.NotSupported(p.Child("keyType"), s.KeyType, PodCertificateKeyTypes))
	}
	if e := s.MaxExpirationSeconds; e != nil {
		if *e < MinMaxExpirationSeconds {
			allErrs = append(allErrs, field.Invalid(p.Child("maxExpirationSeconds"), *e, fmt.Sprintf("if provided, maxExpirationSeconds must be >= %d", MinMaxExpirationSeconds)))
		}
		most := MaxMaxExpirationSeconds
		if IsKubernetesSignerName(s.SignerName) {
			most = KubernetesMaxMaxExpirationSeconds
		}
		if *e > int32(most) {
			allErrs = append(allErrs, field.Invalid(p.Child("maxExpirationSeconds"), *e, fmt.Sprintf("if provided, maxExpirationSeconds must be <= %d", most)))
		}
	}
	if s.CredentialBundlePath == "" && s.KeyPath == "" && s.CertificateChainPath == "" {
		allErrs = append(allErrs, field.Required(p, "specify at least one of credentialBundlePath, keyPath, and certificateChainPath"))
	}
	return allErrs
}

// localNonReservedPath: relative, without ".." elements, not starting
// with ".." (the kubelet's own "..data" links).
func localNonReservedPath(path string, p *field.Path) field.ErrorList {
	allErrs := validateLocalRelativePath(path, p)
	if strings.HasPrefix(path, "..") && !strings.HasPrefix(path, "../") {
		allErrs = append(allErrs, field.Invalid(p, path, "must not start with '..'"))
	}
	return allErrs
}

func userID(user *int64, p *field.Path) field.ErrorList {
	if user == nil {
		return nil
	}
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsValidUserID(*user) {
		allErrs = append(allErrs, field.Invalid(p, *user, msg))
	}
	return allErrs
}
