package kinds

import (
	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Deployments: scalable through /scale; the selector never changes.
func deployments() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: appsv1.SchemeGroupVersion.WithResource("deployments"), Kind: "Deployment",
		Namespaced: true, ShortNames: []string{"deploy"}, Categories: []string{"all"}, Status: true,
		Scale: &registry.ScaleAccessor{
			Get: func(obj runtime.Object) (int32, int32, *metav1.LabelSelector) {
				d := obj.(*appsv1.Deployment)
				return replicas(d.Spec.Replicas), d.Status.Replicas, d.Spec.Selector
			},
			Set: func(obj runtime.Object, n int32) { obj.(*appsv1.Deployment).Spec.Replicas = &n },
		},
		Default:  defaulter(defaults.Deployment),
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validation.Deployment),
		ValidateUpdate: updateValidator(func(d, old *appsv1.Deployment) field.ErrorList {
			return validation.SelectorUpdate(d.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))
		}),
		Printer: printers.Deployment,
	}
}
