package integration

import (
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// HorizontalPodAutoscalers are served in autoscaling/v1 too, as the
// same objects: the CPU target of one is a metric of the other, and what
// v1 cannot say survives a v1 round trip.
func TestHorizontalPodAutoscalerV1(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	v1hpas := c.client.AutoscalingV1().HorizontalPodAutoscalers("default")
	v2hpas := c.client.AutoscalingV2().HorizontalPodAutoscalers("default")
	target := autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}

	if _, err := v1hpas.Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "cpu"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: target, MaxReplicas: 5, TargetCPUUtilizationPercentage: ptr.To[int32](50)}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := v2hpas.Get(ctx, "cpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Metrics) != 1 || got.Spec.Metrics[0].Resource == nil || ptr.Deref(got.Spec.Metrics[0].Resource.Target.AverageUtilization, 0) != 50 ||
		ptr.Deref(got.Spec.MinReplicas, 0) != 1 {
		t.Errorf("v1 HPA read as v2: %+v", got.Spec)
	}

	mem := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("100Mi"))}}}
	cpu := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](70)}}}
	if _, err := v2hpas.Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "two"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(target), MaxReplicas: 4,
			Metrics: []autoscalingv2.MetricSpec{cpu, mem}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	old, err := v1hpas.Get(ctx, "two", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(old.Spec.TargetCPUUtilizationPercentage, 0) != 70 || old.Annotations["autoscaling.alpha.kubernetes.io/metrics"] == "" {
		t.Errorf("v2 HPA read as v1: %+v, annotations %v", old.Spec, old.Annotations)
	}
	// A v1 update of the CPU target keeps the memory metric.
	old.Spec.TargetCPUUtilizationPercentage = ptr.To[int32](60)
	if _, err := v1hpas.Update(ctx, old, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err = v2hpas.Get(ctx, "two", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Metrics) != 2 || ptr.Deref(got.Spec.Metrics[0].Resource.Target.AverageUtilization, 0) != 60 || got.Spec.Metrics[1].Resource.Name != corev1.ResourceMemory {
		t.Errorf("after a v1 update: %+v", got.Spec.Metrics)
	}
	if _, ok := got.Annotations["autoscaling.alpha.kubernetes.io/metrics"]; ok {
		t.Errorf("the v1 annotation leaked into the stored object: %v", got.Annotations)
	}
	if _, err := v1hpas.Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: target, MaxReplicas: 5, TargetCPUUtilizationPercentage: ptr.To[int32](0)}},
		metav1.CreateOptions{}); err == nil {
		t.Error("a v1 HPA with a 0% CPU target was accepted")
	}
	groups, err := c.client.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		if g.Name == "autoscaling" && (g.PreferredVersion.Version != "v2" || len(g.Versions) != 2) {
			t.Errorf("autoscaling in discovery: %+v, want v2 preferred over v1", g)
		}
	}
	list, err := v1hpas.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Errorf("v1 list: %v %d", err, len(list.Items))
	}
}

// A path that names no served group, version or resource is a 404 worded
// as kube-apiserver's, not a NotFound of a nameless object.
func TestUnknownPathNotFound(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	for _, path := range []string{"/apis/nothing.example.com/v1", "/apis/autoscaling/v9", "/api/v1/nothings"} {
		err := c.client.Discovery().RESTClient().Get().AbsPath(path).Do(ctx).Error()
		st, ok := err.(apierrors.APIStatus)
		if !ok || st.Status().Code != 404 || st.Status().Message != "the server could not find the requested resource" {
			t.Errorf("GET %s: %v, want 404 \"the server could not find the requested resource\"", path, err)
		}
	}
}
