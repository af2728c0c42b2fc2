// Package quota measures what objects use of a namespace's
// ResourceQuotas, as Kubernetes' quota evaluators do
// (pkg/quota/v1/evaluator/core): the usage of one object by its group
// and resource, whether a quota's scopes match it, and the arithmetic
// over resource lists. The ResourceQuota admission plugin charges a new
// object's usage with it; the resourcequota controller recounts a
// namespace with it.
package quota

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Add returns a + b; a resource in only one of them keeps its quantity.
func Add(a, b corev1.ResourceList) corev1.ResourceList {
	return combine(a, b, (*resource.Quantity).Add)
}

// Subtract returns a - b over the resources of either.
func Subtract(a, b corev1.ResourceList) corev1.ResourceList {
	return combine(a, b, (*resource.Quantity).Sub)
}

// combine is a copy of a with op applied, resource by resource, to b's.
func combine(a, b corev1.ResourceList, op func(*resource.Quantity, resource.Quantity)) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range a {
		out[name] = q.DeepCopy()
	}
	for name, q := range b {
		v := out[name]
		op(&v, q)
		out[name] = v
	}
	return out
}

// Parse is the list of the name, quantity pairs kv, the quantities as
// resource.MustParse reads them (which panics on a bad one): for lists
// written as literals.
func Parse(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// Mask keeps the resources of list that names has.
func Mask(list corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, name := range names {
		if q, ok := list[name]; ok {
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// RemoveZeros drops the resources whose quantity is zero.
func RemoveZeros(list corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range list {
		if !q.IsZero() {
			out[name] = q
		}
	}
	return out
}

// Exceeded lists, sorted, the resources of used above their limit in
// hard; a resource hard does not name is not limited.
func Exceeded(used, hard corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, name := range ResourceNames(used) {
		if limit, ok := hard[name]; ok {
			if q := used[name]; q.Cmp(limit) <= 0 {
				continue
			}
			out = append(out, name)
		}
	}
	return out
}

// Equals says whether a and b hold the same resources in equal quantities.
func Equals(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		other, ok := b[name]
		if !ok || q.Cmp(other) != 0 {
			return false
		}
	}
	return true
}

// ResourceNames lists list's resources, sorted.
func ResourceNames(list corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(list))
	for name := range list {
		out = append(out, name)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// PrettyPrint writes list as Kubernetes' quota messages do:
// name=quantity, sorted by name, comma separated.
func PrettyPrint(list corev1.ResourceList) string {
	parts := make([]string, 0, len(list))
	for _, name := range ResourceNames(list) {
		q := list[name]
		parts = append(parts, string(name)+"="+q.String())
	}
	return strings.Join(parts, ",")
}

// one is the quantity 1 of an object count.
func one() resource.Quantity { return *resource.NewQuantity(1, resource.DecimalSI) }

// Zero is the zero quantity a tracked resource nothing uses shows.
func Zero() resource.Quantity { return *resource.NewQuantity(0, resource.DecimalSI) }
