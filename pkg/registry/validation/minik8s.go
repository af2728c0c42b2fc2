package validation

import (
	"regexp"
	"strings"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

// dnsRecordPathChars is what a DNSRecord path may hold. The path goes
// into the gateway's nginx configuration, so nothing that could end or
// extend a directive there (spaces, quotes, ';', '{', '}', '$', '#',
// escapes) is allowed: only unreserved URL characters and '/'.
var dnsRecordPathChars = regexp.MustCompile(`^[A-Za-z0-9._~/-]*$`)

const dnsRecordPathCharsMsg = "must contain only letters, digits and '.', '_', '~', '/', '-'"

func validateDNSRecord(r *minik8sv1.DNSRecord) field.ErrorList {
	spec := field.NewPath("spec")
	allErrs := validateDNSRecordHost(r.Spec.Host, spec.Child("host"))
	pathsPath := spec.Child("paths")
	if len(r.Spec.Paths) == 0 {
		allErrs = append(allErrs, field.Required(pathsPath, "at least one path is required"))
	}
	// The gateway routes whole segments: "/a" and "/a/" are one route.
	seen := map[string]bool{}
	for i := range r.Spec.Paths {
		p := &r.Spec.Paths[i]
		fldPath := pathsPath.Index(i)
		allErrs = append(allErrs, validateDNSRecordPath(p, fldPath)...)
		key := strings.TrimSuffix(p.Path, "/")
		if p.Path != "" && seen[key] {
			allErrs = append(allErrs, field.Duplicate(fldPath.Child("path"), p.Path))
		}
		seen[key] = true
	}
	return append(allErrs, validateDNSRecordStatus(&r.Status, field.NewPath("status"))...)
}

// validateDNSRecordHost: a lowercase DNS-1123 subdomain the cluster DNS
// can answer for; no wildcard, no IP address.
func validateDNSRecordHost(host string, fldPath *field.Path) field.ErrorList {
	switch {
	case host == "":
		return field.ErrorList{field.Required(fldPath, "")}
	case strings.Contains(host, "*"):
		return field.ErrorList{field.Invalid(fldPath, host, "must not be a wildcard")}
	case len(utilvalidation.IsValidIP(fldPath, host)) == 0:
		return field.ErrorList{field.Invalid(fldPath, host, "must be a DNS name, not an IP address")}
	}
	return validateDNS1123Subdomain(host, fldPath)
}

func validateDNSRecordPath(p *minik8sv1.DNSRecordPath, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	pathPath := fldPath.Child("path")
	switch {
	case p.Path == "":
		allErrs = append(allErrs, field.Required(pathPath, ""))
	case !strings.HasPrefix(p.Path, "/"):
		allErrs = append(allErrs, field.Invalid(pathPath, p.Path, "must start with '/'"))
	case !dnsRecordPathChars.MatchString(p.Path):
		allErrs = append(allErrs, field.Invalid(pathPath, p.Path, dnsRecordPathCharsMsg))
	default:
		// nginx matches normalized URIs: these would never match.
		if strings.Contains(p.Path, "//") {
			allErrs = append(allErrs, field.Invalid(pathPath, p.Path, "must not contain '//'"))
		}
		for _, seg := range strings.Split(p.Path, "/") {
			if seg == "." || seg == ".." {
				allErrs = append(allErrs, field.Invalid(pathPath, p.Path, "must not contain '.' or '..' segments"))
				break
			}
		}
	}
	svcPath := fldPath.Child("service")
	if p.Service == "" {
		allErrs = append(allErrs, field.Required(svcPath, ""))
	} else {
		for _, msg := range utilvalidation.IsDNS1035Label(p.Service) {
			allErrs = append(allErrs, field.Invalid(svcPath, p.Service, msg))
		}
	}
	portPath := fldPath.Child("port")
	if (p.Port.Type == intstr.Int && p.Port.IntVal == 0) || (p.Port.Type == intstr.String && p.Port.StrVal == "") {
		allErrs = append(allErrs, field.Required(portPath, "a port number (1-65535) or name is required"))
	} else {
		allErrs = append(allErrs, validatePortNumOrName(p.Port, portPath)...)
	}
	return allErrs
}

func validateDNSRecordStatus(st *minik8sv1.DNSRecordStatus, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if st.Address != "" {
		allErrs = append(allErrs, utilvalidation.IsValidIP(fldPath.Child("address"), st.Address)...)
	}
	allErrs = append(allErrs, validateNonnegative(st.ObservedGeneration, fldPath.Child("observedGeneration"))...)
	return append(allErrs, metav1validation.ValidateConditions(st.Conditions, fldPath.Child("conditions"))...)
}
