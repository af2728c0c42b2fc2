package kinds

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Namespaces: deleting one marks it Terminating, and it goes once the
// namespace controller has emptied it and removed spec.finalizers through
// PUT .../finalize.
func namespaces() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("namespaces"), Kind: "Namespace",
		ShortNames: []string{"ns"}, Status: true, Finalize: true, NoGeneration: true,
		Default:  defaulter(defaults.Namespace),
		NameRule: apivalidation.NameIsDNSLabel,
		Validate: validator(validation.Namespace),
		Printer:  printers.Namespace,
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
