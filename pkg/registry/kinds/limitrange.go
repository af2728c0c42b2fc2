package kinds

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// LimitRanges: the bounds and defaults of the resources of a
// namespace's containers, pods and claims, which the LimitRanger
// admission applies.
func limitRanges() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("limitranges"), Kind: "LimitRange",
		Namespaced: true, ShortNames: []string{"limits"}, NoGeneration: true,
		NameRule: apivalidation.NameIsDNSSubdomain,
		Default:  defaulter(defaultLimitRange),
		Validate: validator(validateLimitRange),
		Printer:  limitRangePrinter,
	}
}

// defaultLimitRange fills a container item's defaults as Kubernetes'
// v1 defaulting: the default limit from max, the default request from
// the default limit, else from min.
func defaultLimitRange(lr *corev1.LimitRange) {
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		for _, l := range []corev1.ResourceList{item.Max, item.Min, item.Default, item.DefaultRequest, item.MaxLimitRequestRatio} {
			defaults.ResourceList(l)
		}
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		item.Default = withMissing(item.Default, item.Max)
		item.DefaultRequest = withMissing(item.DefaultRequest, item.Default)
		item.DefaultRequest = withMissing(item.DefaultRequest, item.Min)
	}
}

// withMissing is list with the resources of from it lacks.
func withMissing(list, from corev1.ResourceList) corev1.ResourceList {
	if list == nil {
		list = corev1.ResourceList{}
	}
	for name, q := range from {
		if _, ok := list[name]; !ok {
			list[name] = q.DeepCopy()
		}
	}
	return list
}

var limitTypes = []corev1.LimitType{corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim}

func validateLimitRange(lr *corev1.LimitRange) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[corev1.LimitType]bool{}
	for i, item := range lr.Spec.Limits {
		p := field.NewPath("spec", "limits").Index(i)
		allErrs = append(allErrs, validation.Enum(item.Type, limitTypes, p.Child("type"))...)
		if seen[item.Type] {
			allErrs = append(allErrs, field.Duplicate(p.Child("type"), item.Type))
		}
		seen[item.Type] = true
		for _, l := range []struct {
			name string
			list corev1.ResourceList
		}{{"max", item.Max}, {"min", item.Min}, {"default", item.Default}, {"defaultRequest", item.DefaultRequest}, {"maxLimitRequestRatio", item.MaxLimitRequestRatio}} {
			allErrs = append(allErrs, validation.ResourceList(l.list, p.Child(l.name))...)
		}
		if item.Type == corev1.LimitTypePod {
			if len(item.Default) > 0 {
				allErrs = append(allErrs, field.Forbidden(p.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(item.DefaultRequest) > 0 {
				allErrs = append(allErrs, field.Forbidden(p.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		}
		allErrs = append(allErrs, validateLimitOrder(item, p)...)
	}
	return allErrs
}

// validateLimitOrder checks min <= defaultRequest <= default <= max and
// that a maxLimitRequestRatio is at least 1 and at most max/min.
func validateLimitOrder(item corev1.LimitRangeItem, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	order := []struct {
		lower, upper corev1.ResourceList
		path, what   string
	}{
		{item.Min, item.Max, "min", "min value %s is greater than max value %s"},
		{item.Min, item.Default, "default", "min value %s is greater than default value %s"},
		{item.Default, item.Max, "default", "default value %s is greater than max value %s"},
		{item.Min, item.DefaultRequest, "defaultRequest", "min value %s is greater than default request value %s"},
		{item.DefaultRequest, item.Max, "defaultRequest", "default request value %s is greater than max value %s"},
		{item.DefaultRequest, item.Default, "defaultRequest", "default request value %s is greater than default limit value %s"},
	}
	for _, o := range order {
		for _, name := range validation.SortedKeys(o.lower) {
			low := o.lower[name]
			if up, ok := o.upper[name]; ok && low.Cmp(up) > 0 {
				allErrs = append(allErrs, field.Invalid(p.Child(o.path).Key(string(name)), low.String(), fmt.Sprintf(o.what, low.String(), up.String())))
			}
		}
	}
	for _, name := range validation.SortedKeys(item.MaxLimitRequestRatio) {
		ratio := item.MaxLimitRequestRatio[name]
		rp := p.Child("maxLimitRequestRatio").Key(string(name))
		if ratio.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) < 0 {
			allErrs = append(allErrs, field.Invalid(rp, ratio.String(), fmt.Sprintf("ratio %s is less than 1", ratio.String())))
		}
		min, hasMin := item.Min[name]
		max, hasMax := item.Max[name]
		if hasMin && hasMax && min.Sign() > 0 {
			if bound := float64(max.MilliValue()) / float64(min.MilliValue()); float64(ratio.MilliValue())/1000 > bound {
				allErrs = append(allErrs, field.Invalid(rp, ratio.String(), fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), bound)))
			}
		}
	}
	return allErrs
}

var limitRangePrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Created At", "date", metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]),
	},
	func(lr *corev1.LimitRange, _ time.Time) []interface{} {
		return []interface{}{lr.Name, lr.CreationTimestamp.UTC().Format(time.RFC3339)}
	},
)
