package kinds

import (
	"regexp"
	"strings"
	"time"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// DNSRecords (minik8s.io/v1) give a host name to Services, path by path,
// through the gateway: the DNS controller serves the host, the gateway
// routes each path. This file is the whole of the kind's server side.
func dnsRecords() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: minik8sv1.SchemeGroupVersion.WithResource("dnsrecords"), Kind: "DNSRecord",
		Namespaced: true, ShortNames: []string{"dnsr"}, Status: true,
		Default:  defaulter(defaultDNSRecord),
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validateDNSRecord),
		Printer:  dnsRecordPrinter,
		// A client finds the records of a host with
		// --field-selector spec.host=minik8s.com.
		FieldLabels: func(obj runtime.Object) fields.Set {
			return fields.Set{"spec.host": obj.(*minik8sv1.DNSRecord).Spec.Host}
		},
	}
}

// defaultDNSRecord: a path written without its leading "/" ("path1") gets
// one. An empty path stays empty, for validation to refuse.
func defaultDNSRecord(r *minik8sv1.DNSRecord) {
	for i := range r.Spec.Paths {
		p := &r.Spec.Paths[i]
		if p.Path != "" && !strings.HasPrefix(p.Path, "/") {
			p.Path = "/" + p.Path
		}
	}
}

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
	return validation.DNS1123Subdomain(host, fldPath)
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
		allErrs = append(allErrs, validation.PortNumOrName(p.Port, portPath)...)
	}
	return allErrs
}

func validateDNSRecordStatus(st *minik8sv1.DNSRecordStatus, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if st.Address != "" {
		allErrs = append(allErrs, utilvalidation.IsValidIP(fldPath.Child("address"), st.Address)...)
	}
	allErrs = append(allErrs, validation.Nonnegative(st.ObservedGeneration, fldPath.Child("observedGeneration"))...)
	return append(allErrs, metav1validation.ValidateConditions(st.Conditions, fldPath.Child("conditions"))...)
}

// The table: the host, where each path goes, and the gateway address
// the host resolves to.

// maxDNSRecordPaths is how many paths the Paths cell spells out.
const maxDNSRecordPaths = 3

var dnsRecordPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Host", "string", minik8sv1.DNSRecordSpec{}.SwaggerDoc()["host"]),
		printers.Column("Paths", "string", "Each path and the Service port it goes to, as path->service:port."),
		printers.Column("Address", "string", minik8sv1.DNSRecordStatus{}.SwaggerDoc()["address"]),
		printers.AgeColumn(),
	},
	func(r *minik8sv1.DNSRecord, now time.Time) []interface{} {
		routes := make([]string, len(r.Spec.Paths))
		for i, p := range r.Spec.Paths {
			routes[i] = p.Path + "->" + p.Service + ":" + p.Port.String()
		}
		return []interface{}{r.Name, r.Spec.Host, printers.TruncatedList(routes, maxDNSRecordPaths, ","), r.Status.Address, printers.Age(r.CreationTimestamp, now)}
	},
)
