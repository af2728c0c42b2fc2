package kinds

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Nodes register with the status their kubelet reports.
func nodes() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("nodes"), Kind: "Node",
		ShortNames: []string{"no"}, Status: true, KeepStatusOnCreate: true, NoGeneration: true,
		Default:        defaulter(defaults.Node),
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validation.Node),
		ValidateUpdate: updateValidator(validation.NodeUpdate),
		Printer:        printers.Node,
		FieldLabels: func(obj runtime.Object) fields.Set {
			return fields.Set{"spec.unschedulable": strconv.FormatBool(obj.(*corev1.Node).Spec.Unschedulable)}
		},
	}
}
