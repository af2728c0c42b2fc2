package validation

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	IsNegativeErrorMsg    = apimachineryvalidation.IsNegativeErrorMsg
	IsNotPositiveErrorMsg = "must be greater than zero"
	FieldImmutableMsg     = apimachineryvalidation.FieldImmutableErrorMsg
)

// PathSegmentName is the name rule for kinds whose names only have to be
// usable as a URL path segment.
func PathSegmentName(name string, prefix bool) []string {
	if prefix {
		return content.IsPathSegmentPrefix(name)
	}
	return content.IsPathSegmentName(name)
}

// DNS1123Label checks value is a DNS label (RFC 1123).
func DNS1123Label(value string, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for _, msg := range utilvalidation.IsDNS1123Label(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

// DNS1123Subdomain checks value is a DNS subdomain (RFC 1123).
func DNS1123Subdomain(value string, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for _, msg := range utilvalidation.IsDNS1123Subdomain(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

// QualifiedName checks value is a qualified name ([prefix/]name), as label keys are.
func QualifiedName(value string, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for _, msg := range utilvalidation.IsQualifiedName(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

// Nonnegative checks value is not negative.
func Nonnegative(value int64, fldPath *field.Path) field.ErrorList {
	if value < 0 {
		return field.ErrorList{field.Invalid(fldPath, value, IsNegativeErrorMsg)}
	}
	return nil
}

// NonnegativePtr32 checks an optional value is not negative.
func NonnegativePtr32(value *int32, fldPath *field.Path) field.ErrorList {
	if value == nil {
		return nil
	}
	return Nonnegative(int64(*value), fldPath)
}

func Positive(value int64, fldPath *field.Path) field.ErrorList {
	if value <= 0 {
		return field.ErrorList{field.Invalid(fldPath, value, IsNotPositiveErrorMsg)}
	}
	return nil
}

// PortNumber checks 1..65535.
func PortNumber(port int32, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for _, msg := range utilvalidation.IsValidPortNum(int(port)) {
		allErrs = append(allErrs, field.Invalid(fldPath, port, msg))
	}
	return allErrs
}

// PortName checks an IANA_SVC_NAME (container/target port names).
func PortName(name string, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for _, msg := range utilvalidation.IsValidPortName(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

// PortNumOrName checks a port given by number or by name.
func PortNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	switch port.Type {
	case intstr.Int:
		return PortNumber(port.IntVal, fldPath)
	case intstr.String:
		return PortName(port.StrVal, fldPath)
	}
	return field.ErrorList{field.InternalError(fldPath, fmt.Errorf("unknown type: %v", port.Type))}
}

var supportedPortProtocols = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}

// Protocol checks p is TCP, UDP or SCTP.
func Protocol(p corev1.Protocol, fldPath *field.Path) field.ErrorList {
	if p == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if !sets.New(supportedPortProtocols...).Has(p) {
		return field.ErrorList{field.NotSupported(fldPath, p, supportedPortProtocols)}
	}
	return nil
}

// Enum reports an empty value as Required and any value outside
// valid as NotSupported.
func Enum[T ~string](value T, valid []T, fldPath *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	for _, v := range valid {
		if v == value {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(fldPath, value, valid)}
}

// validateOptionalEnum is validateEnum for optional fields.
func OptionalEnum[T ~string](value T, valid []T, fldPath *field.Path) field.ErrorList {
	if value == "" {
		return nil
	}
	return Enum(value, valid, fldPath)
}

func Labels(l map[string]string, fldPath *field.Path) field.ErrorList {
	return metav1validation.ValidateLabels(l, fldPath)
}

func LabelSelector(sel *metav1.LabelSelector, fldPath *field.Path) field.ErrorList {
	return metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, fldPath)
}

// selectorMatchesLabels reports whether a (valid) selector matches labels.
func selectorMatchesLabels(sel *metav1.LabelSelector, l map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	return s.Matches(labels.Set(l))
}

// Immutable reports a change of an immutable field.
func Immutable(newVal, oldVal any, fldPath *field.Path) field.ErrorList {
	return apimachineryvalidation.ValidateImmutableField(newVal, oldVal, fldPath)
}

// SelectorUpdate enforces that a workload selector never changes.
func SelectorUpdate(newSel, oldSel *metav1.LabelSelector, fldPath *field.Path) field.ErrorList {
	return Immutable(newSel, oldSel, fldPath)
}

// standardResourceNames are the unprefixed resource names users may request.
var standardResourceNames = sets.New[corev1.ResourceName](
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourceStorage, corev1.ResourcePods,
)

// validateResourceName checks a compute resource name: a standard name,
// hugepages-<size>, or a domain-prefixed extended resource.
func validateResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	allErrs := QualifiedName(string(name), fldPath)
	if len(allErrs) != 0 {
		return allErrs
	}
	s := string(name)
	if standardResourceNames.Has(name) || strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) || strings.Contains(s, "/") {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, s, "must be a standard resource type or fully qualified")}
}

// validateResourceList checks names and that quantities are not negative.
func ResourceList(list corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for _, name := range SortedKeys(list) {
		q := list[name]
		p := fldPath.Key(string(name))
		allErrs = append(allErrs, validateResourceName(name, p)...)
		if q.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(p, q.String(), IsNegativeErrorMsg))
		}
	}
	return allErrs
}

// validateResourceRequirements checks limits and requests and that no
// request exceeds its limit.
func validateResourceRequirements(r *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	limPath, reqPath := fldPath.Child("limits"), fldPath.Child("requests")
	allErrs := ResourceList(r.Limits, limPath)
	allErrs = append(allErrs, ResourceList(r.Requests, reqPath)...)
	for _, name := range SortedKeys(r.Requests) {
		req := r.Requests[name]
		lim, ok := r.Limits[name]
		if !ok {
			continue
		}
		if req.Cmp(lim) > 0 {
			allErrs = append(allErrs, field.Invalid(reqPath, req.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
		}
	}
	return allErrs
}

func SortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// positiveQuantity reports whether q > 0.
func PositiveQuantity(q resource.Quantity) bool { return q.Sign() > 0 }

// CountSetPointers counts the non-nil pointer fields of a struct where at
// most one member is expected to be set (volume sources, handlers, ...).
func CountSetPointers(structPtr any) int {
	v := reflect.ValueOf(structPtr).Elem()
	n := 0
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}
