package kinds

import (
	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// StorageClasses: their provisioner and parameters never change.
func storageClasses() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: storagev1.SchemeGroupVersion.WithResource("storageclasses"), Kind: "StorageClass",
		ShortNames: []string{"sc"}, NoGeneration: true,
		Default:        defaulter(defaults.StorageClass),
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validation.StorageClass),
		ValidateUpdate: updateValidator(validation.StorageClassUpdate),
		Printer:        printers.StorageClass,
	}
}
