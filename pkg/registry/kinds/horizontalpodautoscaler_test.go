package kinds

import (
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func TestHPACells(t *testing.T) {
	gkHPA := schema.GroupKind{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}
	cpu := func(target int32) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target}}}
	}
	memValue := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("500Mi"))}}}
	pods := autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "qps"}, Target: autoscalingv2.MetricTarget{AverageValue: ptr.To(resource.MustParse("10"))}}}
	ext := autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Target: autoscalingv2.MetricTarget{AverageValue: ptr.To(resource.MustParse("30"))}}}

	runCellCases(t, []cellCase{
		{
			name: "hpa cpu",
			gk:   gkHPA,
			obj: &autoscalingv2.HorizontalPodAutoscaler{
				ObjectMeta: objMeta("web"),
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
					ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
					MinReplicas:    ptr.To(int32(1)), MaxReplicas: 10, Metrics: []autoscalingv2.MetricSpec{cpu(80)},
				},
				Status: autoscalingv2.HorizontalPodAutoscalerStatus{
					CurrentReplicas: 2,
					CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
						Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To(int32(40))}}}},
				},
			},
			want: map[string]interface{}{
				"Name": "web", "Reference": "Deployment/web", "Targets": "cpu: 40%/80%", "MinPods": "1",
				"MaxPods": int64(10), "Replicas": int64(2), "Age": "10m",
			},
		},
		{
			name: "hpa no metrics yet",
			gk:   gkHPA,
			obj: &autoscalingv2.HorizontalPodAutoscaler{
				ObjectMeta: objMeta("web"),
				Spec:       autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 3, Metrics: []autoscalingv2.MetricSpec{memValue, pods}},
			},
			want: map[string]interface{}{"Targets": "memory: <unknown>/500Mi, <unknown>/10", "MinPods": "<unset>"},
		},
		{
			name: "hpa many metrics",
			gk:   gkHPA,
			obj: &autoscalingv2.HorizontalPodAutoscaler{
				ObjectMeta: objMeta("web"),
				Spec:       autoscalingv2.HorizontalPodAutoscalerSpec{Metrics: []autoscalingv2.MetricSpec{ext, cpu(50), pods}},
			},
			want: map[string]interface{}{"Targets": "<unknown>/30 (avg), cpu: <unknown>/50% + 1 more..."},
		},
		{
			name: "hpa without metrics",
			gk:   gkHPA,
			obj:  &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: objMeta("web")},
			want: map[string]interface{}{"Targets": "<none>"},
		},
	})
}
