package kinds

import (
	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Ingresses (networking.k8s.io/v1): no defaults.
func ingresses() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: networkingv1.SchemeGroupVersion.WithResource("ingresses"), Kind: "Ingress",
		Namespaced: true, ShortNames: []string{"ing"}, Status: true,
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validation.Ingress),
		Printer:  printers.Ingress,
	}
}
