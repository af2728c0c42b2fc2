package kinds

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// ReplicaSets: scalable through /scale; the selector never changes.
func replicaSets() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: appsv1.SchemeGroupVersion.WithResource("replicasets"), Kind: "ReplicaSet",
		Namespaced: true, ShortNames: []string{"rs"}, Categories: []string{"all"}, Status: true,
		Scale: &registry.ScaleAccessor{
			Get: func(obj runtime.Object) (int32, int32, *metav1.LabelSelector) {
				rs := obj.(*appsv1.ReplicaSet)
				return replicas(rs.Spec.Replicas), rs.Status.Replicas, rs.Spec.Selector
			},
			Set: func(obj runtime.Object, n int32) { obj.(*appsv1.ReplicaSet).Spec.Replicas = &n },
		},
		Default:  defaulter(defaults.ReplicaSet),
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validation.ReplicaSet),
		ValidateUpdate: updateValidator(func(rs, old *appsv1.ReplicaSet) field.ErrorList {
			return validation.SelectorUpdate(rs.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))
		}),
		Printer: printers.ReplicaSet,
		FieldLabels: func(obj runtime.Object) fields.Set {
			return fields.Set{"status.replicas": strconv.Itoa(int(obj.(*appsv1.ReplicaSet).Status.Replicas))}
		},
	}
}
