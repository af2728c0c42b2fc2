package defaults

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"
)

// defaultHPACPUUtilization is the target used when an HPA names no metrics.
const defaultHPACPUUtilization int32 = 80

func HorizontalPodAutoscaler(hpa *autoscalingv2.HorizontalPodAutoscaler) {
	spec := &hpa.Spec
	if spec.MinReplicas == nil {
		spec.MinReplicas = ptr.To[int32](1)
	}
	if len(spec.Metrics) == 0 {
		spec.Metrics = []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{
					Type:               autoscalingv2.UtilizationMetricType,
					AverageUtilization: ptr.To(defaultHPACPUUtilization),
				},
			},
		}}
	}
	// Behavior is only completed when the user gave one.
	if spec.Behavior != nil {
		spec.Behavior.ScaleUp = mergeScalingRules(spec.Behavior.ScaleUp, defaultScaleUpRules())
		spec.Behavior.ScaleDown = mergeScalingRules(spec.Behavior.ScaleDown, defaultScaleDownRules())
	}
}

func defaultScaleUpRules() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr.To[int32](0),
		SelectPolicy:               ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
}

// defaultScaleDownRules leaves the stabilization window unset: the
// controller's command-line default applies then.
func defaultScaleDownRules() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{
		SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
}

// mergeScalingRules overlays the fields the user set onto the defaults.
func mergeScalingRules(user, defaults *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if user == nil {
		return defaults
	}
	out := user.DeepCopy()
	if out.SelectPolicy == nil {
		out.SelectPolicy = defaults.SelectPolicy
	}
	if out.StabilizationWindowSeconds == nil {
		out.StabilizationWindowSeconds = defaults.StabilizationWindowSeconds
	}
	if out.Policies == nil {
		out.Policies = defaults.Policies
	}
	return out
}

func EndpointSlice(es *discoveryv1.EndpointSlice) {
	for i := range es.Ports {
		p := &es.Ports[i]
		if p.Name == nil {
			p.Name = ptr.To("")
		}
		if p.Protocol == nil {
			p.Protocol = ptr.To(corev1.ProtocolTCP)
		}
	}
}

func StorageClass(sc *storagev1.StorageClass) {
	if sc.ReclaimPolicy == nil {
		sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimDelete)
	}
	if sc.VolumeBindingMode == nil {
		sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingImmediate)
	}
}

// CertificateSigningRequest: a condition without a status is "True" (v1 defaulting).
func CertificateSigningRequest(csr *certificatesv1.CertificateSigningRequest) {
	for i := range csr.Status.Conditions {
		if csr.Status.Conditions[i].Status == "" {
			csr.Status.Conditions[i].Status = corev1.ConditionTrue
		}
	}
}
