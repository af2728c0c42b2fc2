package kinds

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// ConfigMaps: no defaults; immutable ones keep their data.
func configMaps() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap",
		Namespaced: true, ShortNames: []string{"cm"}, NoGeneration: true,
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validation.ConfigMap),
		ValidateUpdate: updateValidator(validation.ConfigMapUpdate),
		Printer:        printers.ConfigMap,
	}
}
