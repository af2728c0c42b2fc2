package kinds

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Endpoints: the addresses behind a Service, written by the endpoints controller.
func endpoints() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("endpoints"), Kind: "Endpoints",
		Namespaced: true, ShortNames: []string{"ep"}, NoGeneration: true,
		Default:  defaulter(defaults.Endpoints),
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validation.Endpoints),
		Printer:  printers.Endpoints,
	}
}
