package kinds

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Leases: node heartbeats and leader election.
func leases() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: coordinationv1.SchemeGroupVersion.WithResource("leases"), Kind: "Lease",
		Namespaced: true, NoGeneration: true,
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validation.Lease),
		Printer:  printers.Lease,
	}
}
