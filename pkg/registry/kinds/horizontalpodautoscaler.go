package kinds

import (
	"fmt"
	"strconv"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// HorizontalPodAutoscalers (autoscaling/v2).
func horizontalPodAutoscalers() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers"), Kind: "HorizontalPodAutoscaler",
		Namespaced: true, ShortNames: []string{"hpa"}, Categories: []string{"all"}, Status: true,
		Default:  defaulter(defaultHPA),
		NameRule: validation.PathSegmentName,
		Validate: validator(validateHPA),
		Printer:  hpaPrinter,
	}
}

// Defaults.

// defaultHPACPUUtilization is the target used when an HPA names no metrics.
const defaultHPACPUUtilization int32 = 80

func defaultHPA(hpa *autoscalingv2.HorizontalPodAutoscaler) {
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

// Validation.

const (
	maxHPAStabilizationWindow = 3600
	maxHPAPolicyPeriodSeconds = 1800
)

var (
	supportedMetricSourceTypes = []autoscalingv2.MetricSourceType{
		autoscalingv2.ObjectMetricSourceType, autoscalingv2.PodsMetricSourceType, autoscalingv2.ResourceMetricSourceType,
		autoscalingv2.ContainerResourceMetricSourceType, autoscalingv2.ExternalMetricSourceType,
	}
	supportedMetricTargetTypes = []autoscalingv2.MetricTargetType{
		autoscalingv2.UtilizationMetricType, autoscalingv2.ValueMetricType, autoscalingv2.AverageValueMetricType,
	}
	supportedSelectPolicies = []autoscalingv2.ScalingPolicySelect{
		autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect,
	}
	supportedScalingPolicyTypes = []autoscalingv2.HPAScalingPolicyType{autoscalingv2.PodsScalingPolicy, autoscalingv2.PercentScalingPolicy}
)

func validateHPA(hpa *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	spec := &hpa.Spec
	specPath := field.NewPath("spec")
	refPath := specPath.Child("scaleTargetRef")
	allErrs := field.ErrorList{}
	if spec.ScaleTargetRef.Kind == "" {
		allErrs = append(allErrs, field.Required(refPath.Child("kind"), ""))
	} else {
		for _, msg := range validation.PathSegmentName(spec.ScaleTargetRef.Kind, false) {
			allErrs = append(allErrs, field.Invalid(refPath.Child("kind"), spec.ScaleTargetRef.Kind, msg))
		}
	}
	if spec.ScaleTargetRef.Name == "" {
		allErrs = append(allErrs, field.Required(refPath.Child("name"), ""))
	} else {
		for _, msg := range validation.PathSegmentName(spec.ScaleTargetRef.Name, false) {
			allErrs = append(allErrs, field.Invalid(refPath.Child("name"), spec.ScaleTargetRef.Name, msg))
		}
	}
	if spec.MinReplicas != nil && *spec.MinReplicas < 1 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("minReplicas"), *spec.MinReplicas, "must be greater than or equal to 1"))
	}
	if spec.MaxReplicas < 1 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("maxReplicas"), spec.MaxReplicas, "must be greater than 0"))
	}
	if spec.MinReplicas != nil && spec.MaxReplicas < *spec.MinReplicas {
		allErrs = append(allErrs, field.Invalid(specPath.Child("maxReplicas"), spec.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	for i := range spec.Metrics {
		allErrs = append(allErrs, validateMetricSpec(&spec.Metrics[i], specPath.Child("metrics").Index(i))...)
	}
	if b := spec.Behavior; b != nil {
		bPath := specPath.Child("behavior")
		allErrs = append(allErrs, validateScalingRules(b.ScaleUp, bPath.Child("scaleUp"))...)
		allErrs = append(allErrs, validateScalingRules(b.ScaleDown, bPath.Child("scaleDown"))...)
	}
	return allErrs
}

func validateMetricSpec(m *autoscalingv2.MetricSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validation.Enum(m.Type, supportedMetricSourceTypes, fldPath.Child("type"))
	if len(allErrs) > 0 {
		return allErrs
	}
	if validation.CountSetPointers(m) > 1 {
		allErrs = append(allErrs, field.Forbidden(fldPath, "must populate the given metric source only"))
	}
	missing := func(child string) field.ErrorList {
		return field.ErrorList{field.Required(fldPath.Child(child), "must populate information for the given metric source")}
	}
	switch m.Type {
	case autoscalingv2.ResourceMetricSourceType:
		if m.Resource == nil {
			return append(allErrs, missing("resource")...)
		}
		p := fldPath.Child("resource")
		if m.Resource.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), "must specify a resource name"))
		}
		allErrs = append(allErrs, validateMetricTarget(&m.Resource.Target, p.Child("target"), true)...)
	case autoscalingv2.ContainerResourceMetricSourceType:
		if m.ContainerResource == nil {
			return append(allErrs, missing("containerResource")...)
		}
		p := fldPath.Child("containerResource")
		if m.ContainerResource.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), "must specify a resource name"))
		}
		if m.ContainerResource.Container == "" {
			allErrs = append(allErrs, field.Required(p.Child("container"), "must specify a container"))
		} else {
			allErrs = append(allErrs, validation.DNS1123Label(m.ContainerResource.Container, p.Child("container"))...)
		}
		allErrs = append(allErrs, validateMetricTarget(&m.ContainerResource.Target, p.Child("target"), true)...)
	case autoscalingv2.PodsMetricSourceType:
		if m.Pods == nil {
			return append(allErrs, missing("pods")...)
		}
		p := fldPath.Child("pods")
		allErrs = append(allErrs, validateMetricName(m.Pods.Metric.Name, p.Child("metric", "name"))...)
		allErrs = append(allErrs, validateMetricTarget(&m.Pods.Target, p.Child("target"), false)...)
	case autoscalingv2.ObjectMetricSourceType:
		if m.Object == nil {
			return append(allErrs, missing("object")...)
		}
		p := fldPath.Child("object")
		if m.Object.DescribedObject.Kind == "" {
			allErrs = append(allErrs, field.Required(p.Child("describedObject", "kind"), ""))
		}
		if m.Object.DescribedObject.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("describedObject", "name"), ""))
		}
		allErrs = append(allErrs, validateMetricName(m.Object.Metric.Name, p.Child("metric", "name"))...)
		allErrs = append(allErrs, validateMetricTarget(&m.Object.Target, p.Child("target"), false)...)
	case autoscalingv2.ExternalMetricSourceType:
		if m.External == nil {
			return append(allErrs, missing("external")...)
		}
		p := fldPath.Child("external")
		allErrs = append(allErrs, validateMetricName(m.External.Metric.Name, p.Child("metric", "name"))...)
		allErrs = append(allErrs, validateMetricTarget(&m.External.Target, p.Child("target"), false)...)
	}
	return allErrs
}

func validateMetricName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "must specify a metric name")}
	}
	allErrs := field.ErrorList{}
	for _, msg := range validation.PathSegmentName(name, false) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

// validateMetricTarget checks a metric target; utilization targets only
// make sense for resource metrics.
func validateMetricTarget(t *autoscalingv2.MetricTarget, fldPath *field.Path, resourceMetric bool) field.ErrorList {
	allErrs := validation.Enum(t.Type, supportedMetricTargetTypes, fldPath.Child("type"))
	switch t.Type {
	case autoscalingv2.UtilizationMetricType:
		if !resourceMetric {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("type"), t.Type, "must be either Value or AverageValue"))
		}
		if t.AverageUtilization == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("averageUtilization"), "must set either a target raw value or a target utilization"))
		}
	case autoscalingv2.ValueMetricType:
		if t.Value == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("value"), "must set either a target value or averageValue"))
		}
	case autoscalingv2.AverageValueMetricType:
		if t.AverageValue == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("averageValue"), "must set either a target value or averageValue"))
		}
	}
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("averageUtilization"), *t.AverageUtilization, "must be greater than 0"))
	}
	if t.Value != nil && t.Value.Sign() <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("value"), t.Value.String(), "must be positive"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("averageValue"), t.AverageValue.String(), "must be positive"))
	}
	return allErrs
}

func validateScalingRules(r *autoscalingv2.HPAScalingRules, fldPath *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	allErrs := field.ErrorList{}
	if w := r.StabilizationWindowSeconds; w != nil {
		wp := fldPath.Child("stabilizationWindowSeconds")
		if *w < 0 {
			allErrs = append(allErrs, field.Invalid(wp, *w, "must be greater than or equal to zero"))
		} else if *w > maxHPAStabilizationWindow {
			allErrs = append(allErrs, field.Invalid(wp, *w, fmt.Sprintf("must be less than or equal to %d", maxHPAStabilizationWindow)))
		}
	}
	if r.SelectPolicy != nil {
		allErrs = append(allErrs, validation.Enum(*r.SelectPolicy, supportedSelectPolicies, fldPath.Child("selectPolicy"))...)
	}
	if len(r.Policies) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("policies"), "must specify at least one Policy"))
	}
	for i, p := range r.Policies {
		idxPath := fldPath.Child("policies").Index(i)
		allErrs = append(allErrs, validation.Enum(p.Type, supportedScalingPolicyTypes, idxPath.Child("type"))...)
		if p.Value <= 0 {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("value"), p.Value, "must be greater than zero"))
		}
		if p.PeriodSeconds <= 0 {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("periodSeconds"), p.PeriodSeconds, "must be greater than zero"))
		} else if p.PeriodSeconds > maxHPAPolicyPeriodSeconds {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("periodSeconds"), p.PeriodSeconds,
				fmt.Sprintf("must be less than or equal to %d", maxHPAPolicyPeriodSeconds)))
		}
	}
	return allErrs
}

// The table.

var hpaPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Reference", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["scaleTargetRef"]),
		printers.Column("Targets", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["metrics"]),
		printers.Column("MinPods", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["minReplicas"]),
		printers.Column("MaxPods", "string", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["maxReplicas"]),
		printers.Column("Replicas", "string", autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]),
		printers.AgeColumn(),
	},
	hpaCells,
)

func hpaCells(hpa *autoscalingv2.HorizontalPodAutoscaler, now time.Time) []interface{} {
	minPods := printers.Unset
	if hpa.Spec.MinReplicas != nil {
		minPods = strconv.Itoa(int(*hpa.Spec.MinReplicas))
	}
	ref := hpa.Spec.ScaleTargetRef
	return []interface{}{
		hpa.Name,
		ref.Kind + "/" + ref.Name,
		hpaTargets(hpa.Spec.Metrics, hpa.Status.CurrentMetrics),
		minPods,
		int64(hpa.Spec.MaxReplicas),
		int64(hpa.Status.CurrentReplicas),
		printers.Age(hpa.CreationTimestamp, now),
	}
}

// hpaTargets renders "current/target" per metric, e.g. "cpu: 40%/80%"; the
// status at the same index is the metric's current value.
func hpaTargets(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return printers.None
	}
	list := make([]string, len(specs))
	for i, spec := range specs {
		var status autoscalingv2.MetricStatus
		if i < len(statuses) {
			status = statuses[i]
		}
		list[i] = hpaMetric(spec, status)
	}
	return printers.TruncatedList(list, 2, ", ")
}

func hpaMetric(spec autoscalingv2.MetricSpec, status autoscalingv2.MetricStatus) string {
	switch {
	case spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil:
		var current *autoscalingv2.MetricValueStatus
		if status.External != nil {
			current = &status.External.Current
		}
		return valueTarget(spec.External.Target, current)
	case spec.Type == autoscalingv2.ObjectMetricSourceType && spec.Object != nil:
		var current *autoscalingv2.MetricValueStatus
		if status.Object != nil {
			current = &status.Object.Current
		}
		return valueTarget(spec.Object.Target, current)
	case spec.Type == autoscalingv2.PodsMetricSourceType && spec.Pods != nil:
		current := printers.Unknown
		if status.Pods != nil {
			current = quantity(status.Pods.Current.AverageValue)
		}
		return current + "/" + quantity(spec.Pods.Target.AverageValue)
	case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
		var current *autoscalingv2.MetricValueStatus
		if status.Resource != nil {
			current = &status.Resource.Current
		}
		return spec.Resource.Name.String() + ": " + resourceTarget(spec.Resource.Target, current)
	case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
		var current *autoscalingv2.MetricValueStatus
		if status.ContainerResource != nil {
			current = &status.ContainerResource.Current
		}
		return spec.ContainerResource.Name.String() + ": " + resourceTarget(spec.ContainerResource.Target, current)
	default:
		return "<unknown type>"
	}
}

// valueTarget renders an object or external metric: by average value with an
// " (avg)" suffix, else by value.
func valueTarget(target autoscalingv2.MetricTarget, current *autoscalingv2.MetricValueStatus) string {
	if target.AverageValue != nil {
		cur := printers.Unknown
		if current != nil && current.AverageValue != nil {
			cur = current.AverageValue.String()
		}
		return cur + "/" + target.AverageValue.String() + " (avg)"
	}
	cur := printers.Unknown
	if current != nil {
		cur = quantity(current.Value)
	}
	return cur + "/" + quantity(target.Value)
}

// resourceTarget renders a resource metric by average value, else by
// utilization percentage ("<auto>" without a target).
func resourceTarget(target autoscalingv2.MetricTarget, current *autoscalingv2.MetricValueStatus) string {
	if target.AverageValue != nil {
		cur := printers.Unknown
		if current != nil {
			cur = quantity(current.AverageValue)
		}
		return cur + "/" + target.AverageValue.String()
	}
	cur, want := printers.Unknown, "<auto>"
	if current != nil && current.AverageUtilization != nil {
		cur = fmt.Sprintf("%d%%", *current.AverageUtilization)
	}
	if target.AverageUtilization != nil {
		want = fmt.Sprintf("%d%%", *target.AverageUtilization)
	}
	return cur + "/" + want
}

func quantity(q *resource.Quantity) string {
	if q == nil {
		return printers.Unknown
	}
	return q.String()
}
