package kinds

import (
	"encoding/json"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// HorizontalPodAutoscalers of autoscaling/v1: the autoscaling/v2 objects,
// stored as those (as in Kubernetes), seen through the older API, which
// has only a CPU utilization target. What v1 cannot say (other metrics,
// conditions, behavior) rides in the annotations Kubernetes uses for it,
// so an HPA written through either version reads the same through both.
func horizontalPodAutoscalersV1() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: autoscalingv1.SchemeGroupVersion.WithResource("horizontalpodautoscalers"), Kind: "HorizontalPodAutoscaler",
		Namespaced: true, ShortNames: []string{"hpa"}, Categories: []string{"all"}, Status: true,
		NameRule:      validation.PathSegmentName,
		StoragePrefix: "/registry/horizontalpodautoscalers/",
		StoredAs: &registry.StorageConversion{New: func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
			ToStored: hpaV1ToV2, FromStored: hpaV2ToV1},
		Default: defaulter(func(h *autoscalingv1.HorizontalPodAutoscaler) {
			if h.Spec.MinReplicas == nil {
				h.Spec.MinReplicas = ptr.To[int32](1)
			}
		}),
		Validate: validator(func(h *autoscalingv1.HorizontalPodAutoscaler) field.ErrorList {
			var errs field.ErrorList
			if t := h.Spec.TargetCPUUtilizationPercentage; t != nil && *t < 1 {
				errs = append(errs, field.Invalid(field.NewPath("spec", "targetCPUUtilizationPercentage"), *t, "must be greater than or equal to 1"))
			}
			v2, err := hpaV1ToV2(h)
			if err != nil {
				return append(errs, field.Invalid(field.NewPath("metadata", "annotations"), "", err.Error()))
			}
			return append(errs, validateHPA(v2.(*autoscalingv2.HorizontalPodAutoscaler))...)
		}),
		Printer: printers.Printer{Columns: hpaPrinter.Columns, Cells: func(obj runtime.Object, now time.Time) []interface{} {
			v2, _ := hpaV1ToV2(obj)
			return hpaPrinter.Cells(v2, now)
		}},
	}
}

// The annotations that carry what autoscaling/v1 has no field for.
const (
	hpaAnnMetrics        = "autoscaling.alpha.kubernetes.io/metrics"
	hpaAnnCurrentMetrics = "autoscaling.alpha.kubernetes.io/current-metrics"
	hpaAnnConditions     = "autoscaling.alpha.kubernetes.io/conditions"
	hpaAnnBehavior       = "autoscaling.alpha.kubernetes.io/behavior"
)

func isCPUUtilization(m autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU &&
		m.Resource.Target.Type == autoscalingv2.UtilizationMetricType && m.Resource.Target.AverageUtilization != nil
}

// hpaV1ToV2 converts a v1 HPA to the stored v2 one.
func hpaV1ToV2(obj runtime.Object) (runtime.Object, error) {
	h := obj.(*autoscalingv1.HorizontalPodAutoscaler)
	out := &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: autoscalingv2.SchemeGroupVersion.String(), Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: *h.ObjectMeta.DeepCopy(),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(h.Spec.ScaleTargetRef),
			MinReplicas:    h.Spec.MinReplicas, MaxReplicas: h.Spec.MaxReplicas,
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			ObservedGeneration: h.Status.ObservedGeneration, LastScaleTime: h.Status.LastScaleTime,
			CurrentReplicas: h.Status.CurrentReplicas, DesiredReplicas: h.Status.DesiredReplicas,
		},
	}
	ann := out.Annotations
	take := func(key string, into any) error {
		data, ok := ann[key]
		if !ok {
			return nil
		}
		delete(ann, key)
		return json.Unmarshal([]byte(data), into)
	}
	if err := take(hpaAnnMetrics, &out.Spec.Metrics); err != nil {
		return nil, err
	}
	if err := take(hpaAnnCurrentMetrics, &out.Status.CurrentMetrics); err != nil {
		return nil, err
	}
	if err := take(hpaAnnConditions, &out.Status.Conditions); err != nil {
		return nil, err
	}
	if err := take(hpaAnnBehavior, &out.Spec.Behavior); err != nil {
		return nil, err
	}
	if len(ann) == 0 {
		out.Annotations = nil
	}
	if t := h.Spec.TargetCPUUtilizationPercentage; t != nil {
		out.Spec.Metrics = append([]autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(*t)}}}}, out.Spec.Metrics...)
	}
	if c := h.Status.CurrentCPUUtilizationPercentage; c != nil {
		out.Status.CurrentMetrics = append([]autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU,
				Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To(*c)}}}}, out.Status.CurrentMetrics...)
	}
	defaultHPA(out)
	return out, nil
}

// hpaV2ToV1 shows a stored v2 HPA as a v1 one.
func hpaV2ToV1(stored runtime.Object) (runtime.Object, error) {
	h := stored.(*autoscalingv2.HorizontalPodAutoscaler)
	out := &autoscalingv1.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: autoscalingv1.SchemeGroupVersion.String(), Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: *h.ObjectMeta.DeepCopy(),
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference(h.Spec.ScaleTargetRef),
			MinReplicas:    h.Spec.MinReplicas, MaxReplicas: h.Spec.MaxReplicas,
		},
		Status: autoscalingv1.HorizontalPodAutoscalerStatus{
			ObservedGeneration: h.Status.ObservedGeneration, LastScaleTime: h.Status.LastScaleTime,
			CurrentReplicas: h.Status.CurrentReplicas, DesiredReplicas: h.Status.DesiredReplicas,
		},
	}
	put := func(key string, v any) error {
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[key] = string(data)
		return nil
	}
	var others []autoscalingv2.MetricSpec
	for _, m := range h.Spec.Metrics {
		if out.Spec.TargetCPUUtilizationPercentage == nil && isCPUUtilization(m) {
			out.Spec.TargetCPUUtilizationPercentage = ptr.To(*m.Resource.Target.AverageUtilization)
			continue
		}
		others = append(others, m)
	}
	var otherStatus []autoscalingv2.MetricStatus
	for _, m := range h.Status.CurrentMetrics {
		if out.Status.CurrentCPUUtilizationPercentage == nil && m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil &&
			m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil {
			out.Status.CurrentCPUUtilizationPercentage = ptr.To(*m.Resource.Current.AverageUtilization)
			continue
		}
		otherStatus = append(otherStatus, m)
	}
	for key, v := range map[string]any{hpaAnnMetrics: others, hpaAnnCurrentMetrics: otherStatus, hpaAnnConditions: h.Status.Conditions} {
		if v := v; !isEmptySlice(v) {
			if err := put(key, v); err != nil {
				return nil, err
			}
		}
	}
	if h.Spec.Behavior != nil {
		if err := put(hpaAnnBehavior, h.Spec.Behavior); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func isEmptySlice(v any) bool {
	switch s := v.(type) {
	case []autoscalingv2.MetricSpec:
		return len(s) == 0
	case []autoscalingv2.MetricStatus:
		return len(s) == 0
	case []autoscalingv2.HorizontalPodAutoscalerCondition:
		return len(s) == 0
	}
	return false
}
