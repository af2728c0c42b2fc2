package kinds

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// HorizontalPodAutoscalers (autoscaling/v2).
func horizontalPodAutoscalers() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers"), Kind: "HorizontalPodAutoscaler",
		Namespaced: true, ShortNames: []string{"hpa"}, Categories: []string{"all"}, Status: true,
		Default:  defaulter(defaults.HorizontalPodAutoscaler),
		NameRule: validation.PathSegmentName,
		Validate: validator(validation.HorizontalPodAutoscaler),
		Printer:  printers.HorizontalPodAutoscaler,
	}
}
