package kinds

import (
	discoveryv1 "k8s.io/api/discovery/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// EndpointSlices: a slice's addressType never changes.
func endpointSlices() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), Kind: "EndpointSlice",
		Namespaced: true, NoGeneration: true,
		Default:        defaulter(defaults.EndpointSlice),
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validation.EndpointSlice),
		ValidateUpdate: updateValidator(validation.EndpointSliceUpdate),
		Printer:        printers.EndpointSlice,
	}
}
