package kinds

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// PersistentVolumeClaims: a claim's spec is fixed but for storage growth and its first binding.
func persistentVolumeClaims() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), Kind: "PersistentVolumeClaim",
		Namespaced: true, ShortNames: []string{"pvc"}, Status: true, NoGeneration: true,
		Default:        defaulter(defaults.PersistentVolumeClaim),
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validation.PersistentVolumeClaim),
		ValidateUpdate: updateValidator(validation.PersistentVolumeClaimUpdate),
		Printer:        printers.PersistentVolumeClaim,
	}
}
