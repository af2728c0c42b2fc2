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

// Secrets are stored encrypted when the apiserver has a key.
func secrets() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("secrets"), Kind: "Secret",
		Namespaced: true, Encrypted: true, NoGeneration: true,
		Default:        defaulter(defaults.Secret),
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validation.Secret),
		ValidateUpdate: updateValidator(validation.SecretUpdate),
		Printer:        printers.Secret,
		FieldLabels: func(obj runtime.Object) fields.Set {
			return fields.Set{"type": string(obj.(*corev1.Secret).Type)}
		},
	}
}
