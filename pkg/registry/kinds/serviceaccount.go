package kinds

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// ServiceAccounts: names pods run as.
func serviceAccounts() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("serviceaccounts"), Kind: "ServiceAccount",
		Namespaced: true, ShortNames: []string{"sa"}, NoGeneration: true,
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validation.ServiceAccount),
		Printer:  printers.ServiceAccount,
	}
}
