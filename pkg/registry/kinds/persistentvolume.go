package kinds

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// PersistentVolumes: cluster-scoped storage; the source never changes.
func persistentVolumes() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("persistentvolumes"), Kind: "PersistentVolume",
		ShortNames: []string{"pv"}, Status: true, NoGeneration: true,
		Default:        defaulter(defaults.PersistentVolume),
		NameRule:       validation.PathSegmentName,
		Validate:       validator(validation.PersistentVolume),
		ValidateUpdate: updateValidator(validation.PersistentVolumeUpdate),
		Printer:        printers.PersistentVolume,
	}
}
