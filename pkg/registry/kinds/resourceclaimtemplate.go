package kinds

import (
	resourcev1 "k8s.io/api/resource/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// ResourceClaimTemplates (resource.k8s.io/v1): what a pod's claims are
// made from; the spec never changes.
func resourceClaimTemplates() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: resourcev1.SchemeGroupVersion.WithResource("resourceclaimtemplates"), Kind: "ResourceClaimTemplate",
		Namespaced: true, NameRule: apivalidation.NameIsDNSSubdomain,
		Printer: printers.Default, // as Kubernetes' default table: the name and when it was created
		Validate: validator(func(t *resourcev1.ResourceClaimTemplate) field.ErrorList {
			return validateClaimSpec(&t.Spec.Spec, field.NewPath("spec", "spec"))
		}),
		ValidateUpdate: updateValidator(func(t, old *resourcev1.ResourceClaimTemplate) field.ErrorList {
			return validation.Immutable(t.Spec, old.Spec, field.NewPath("spec"))
		}),
	}
}
