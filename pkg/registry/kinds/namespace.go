package kinds

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
)

// Namespaces: deleting one marks it Terminating, and it goes once the
// namespace controller has emptied it and removed spec.finalizers through
// PUT .../finalize.
func namespaces() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("namespaces"), Kind: "Namespace",
		ShortNames: []string{"ns"}, Status: true, Finalize: true, NoGeneration: true,
		Default:  defaulter(defaultNamespace),
		NameRule: apivalidation.NameIsDNSLabel,
		Validate: validator(validateNamespace),
		Printer:  namespacePrinter,
		FieldLabels: func(obj runtime.Object) fields.Set {
			return fields.Set{"status.phase": string(obj.(*corev1.Namespace).Status.Phase)}
		},
		MarkDeleting:  markNamespaceTerminating,
		HoldsDeletion: func(obj runtime.Object) bool { return len(obj.(*corev1.Namespace).Spec.Finalizers) > 0 },
	}
}

func markNamespaceTerminating(obj runtime.Object) bool {
	ns := obj.(*corev1.Namespace)
	if ns.Status.Phase == corev1.NamespaceTerminating {
		return false
	}
	ns.Status.Phase = corev1.NamespaceTerminating
	return true
}

// Defaults.

func defaultNamespace(ns *corev1.Namespace) {
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
	// A namespace being deleted may have had its finalizers removed by the
	// namespace controller; never put them back.
	if ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return
	}
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			return
		}
	}
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
}

// Validation.

func validateNamespace(ns *corev1.Namespace) field.ErrorList {
	allErrs := field.ErrorList{}
	fldPath := field.NewPath("spec", "finalizers")
	for i, f := range ns.Spec.Finalizers {
		allErrs = append(allErrs, apivalidation.ValidateFinalizerName(string(f), fldPath.Index(i))...)
	}
	return allErrs
}

// The table.

var namespacePrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Status", "string", "The status of the namespace"),
		printers.AgeColumn(),
	},
	func(ns *corev1.Namespace, now time.Time) []interface{} {
		return []interface{}{ns.Name, string(ns.Status.Phase), printers.Age(ns.CreationTimestamp, now)}
	},
)
