package validation

import (
	"strings"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func DataKey(key string, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for _, msg := range utilvalidation.IsConfigMapKey(key) {
		allErrs = append(allErrs, field.Invalid(fldPath, key, msg))
	}
	return allErrs
}

// immutableDataMsg is upstream's message for changing immutable data.
const immutableDataMsg = "field is immutable when `immutable` is set"

// validateImmutableData applies the `immutable: true` rules shared by
// ConfigMaps and Secrets; unchanged maps each data field to whether it is
// unchanged.
func ImmutableData(oldImmutable, newImmutable *bool, unchanged map[string]bool) field.ErrorList {
	if oldImmutable == nil || !*oldImmutable {
		return nil
	}
	allErrs := field.ErrorList{}
	if newImmutable == nil || !*newImmutable {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("immutable"), immutableDataMsg))
	}
	for _, name := range SortedKeys(unchanged) {
		if !unchanged[name] {
			allErrs = append(allErrs, field.Forbidden(field.NewPath(name), immutableDataMsg))
		}
	}
	return allErrs
}

func EqualMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func EqualBytesMaps(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || string(w) != string(v) {
			return false
		}
	}
	return true
}

// Host checks a DNS host name that may start with a "*." wildcard
// and must not be an IP address.
func Host(host string, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if len(utilvalidation.IsValidIP(fldPath, host)) == 0 {
		return append(allErrs, field.Invalid(fldPath, host, "must be a DNS name, not an IP address"))
	}
	var msgs []string
	if strings.Contains(host, "*") {
		msgs = utilvalidation.IsWildcardDNS1123Subdomain(host)
	} else {
		msgs = utilvalidation.IsDNS1123Subdomain(host)
	}
	for _, msg := range msgs {
		allErrs = append(allErrs, field.Invalid(fldPath, host, msg))
	}
	return allErrs
}
