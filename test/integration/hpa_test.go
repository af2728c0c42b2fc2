package integration

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/podautoscaler"
	"github.com/minik8s/minik8s/pkg/kubelet/simulated"
)

// TestHPA is the HorizontalPodAutoscaler end to end on the real API: a
// simulated node whose pods "use" the cpu their annotations say, the
// built-in metrics.k8s.io API reading it from the kubelet, and the
// controller writing the Deployment's replicas through /scale.
//
// No Deployment controller runs here: the test makes the pods itself, and
// watches spec.replicas, which is all the HPA owns.
func TestHPA(t *testing.T) {
	// The test runs its own HPA controller, with a 1s sync period.
	c := startClusterWith(t, withoutControllers("horizontalpodautoscaling", "deployment", "replicaset"))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	startServingNode(t, c, "hpa-node")
	hpaStartController(t, c)

	t.Run("scales up under load and down after it", func(t *testing.T) {
		hpaDeployment(t, ctx, c, "web", 2, "100m")
		hot := []string{"web-hot-0", "web-hot-1"}
		for _, name := range hot {
			hpaPod(t, ctx, c, "web", name, "100m", "150m") // 150% of the request
		}
		hpa := &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
				MinReplicas:    ptr.To[int32](1), MaxReplicas: 10,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)},
				}}},
				// A short scale-down window, so the test need not wait 5m.
				Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
					ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](5)},
				},
			},
		}
		if _, err := c.client.AutoscalingV2().HorizontalPodAutoscalers("default").Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}

		// 2 pods at 150% of a 50% target: 2 × 3 = 6, within the default
		// scale-up rate (4 pods or 100% per 15s, from 2).
		hpaWaitReplicas(t, ctx, c, "web", 6)
		got := hpaWaitStatus(t, ctx, c, "web", "status with the rescale", func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
			return h.Status.DesiredReplicas == 6 && h.Status.LastScaleTime != nil
		})
		if m := got.Status.CurrentMetrics; len(m) != 1 || m[0].Resource == nil || ptr.Deref(m[0].Resource.Current.AverageUtilization, 0) != 150 {
			t.Errorf("currentMetrics = %+v, want cpu at 150%%", m)
		}
		if got.Status.ObservedGeneration == nil || *got.Status.ObservedGeneration != got.Generation {
			t.Errorf("observedGeneration = %v, want %d", got.Status.ObservedGeneration, got.Generation)
		}
		hpaExpectCondition(t, got, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound")
		hpaWaitEvent(t, ctx, c, "web", "SuccessfulRescale", "New size: 6; reason: cpu resource utilization (percentage of request) above target")

		// The load goes away: idle pods replace the busy ones (a simulated
		// pod's usage is fixed when it starts).
		for _, name := range hot {
			if err := c.client.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range []string{"web-idle-0", "web-idle-1"} {
			hpaPod(t, ctx, c, "web", name, "100m", "10m")
		}
		// 10% of a 50% target: ceil(2 × 0.2) = 1, the minimum.
		hpaWaitReplicas(t, ctx, c, "web", 1)
		hpaWaitEvent(t, ctx, c, "web", "SuccessfulRescale", "New size: 1; reason: All metrics below target")
	})

	t.Run("pods without a cpu request", func(t *testing.T) {
		hpaDeployment(t, ctx, c, "bare", 1, "")
		hpaPod(t, ctx, c, "bare", "bare-0", "", "100m")
		hpa := &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "default"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "bare"},
				MaxReplicas:    5, // the default metric: cpu at 80%
			},
		}
		if _, err := c.client.AutoscalingV2().HorizontalPodAutoscalers("default").Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// At first the pod may have no metrics yet; then its missing request
		// is what stops the HPA.
		got := hpaWaitStatus(t, ctx, c, "bare", "to report the missing request", func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
			for _, cond := range h.Status.Conditions {
				if cond.Type == autoscalingv2.ScalingActive && strings.Contains(cond.Message, "missing request for cpu") {
					return true
				}
			}
			return false
		})
		hpaExpectCondition(t, got, autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetResourceMetric")
		hpaWaitEvent(t, ctx, c, "bare", "FailedGetResourceMetric", "missing request for cpu")
	})
}

// hpaStartController runs the HPA controller against the cluster, on the
// metrics.k8s.io API, evaluating every second, until the test ends.
func hpaStartController(t *testing.T, c *cluster) {
	t.Helper()
	kc := kit.NewContext(c.client)
	kc.Logger = slog.New(slog.DiscardHandler)
	ctrl, err := podautoscaler.New(kc, podautoscaler.Config{
		Metrics:    podautoscaler.NewMetricsSource(metricsclient.NewForConfigOrDie(c.config)),
		SyncPeriod: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	runControllers(t, kc, kit.Part{Name: "horizontalpodautoscaling", Start: ctrl.Start})
}

// hpaDeployment creates a Deployment whose pods are labeled app=name and
// request cpu (none when empty).
func hpaDeployment(t *testing.T, ctx context.Context, c *cluster, name string, replicas int32, cpu string) {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox", Resources: hpaRequests(cpu)}}},
			},
		},
	}
	if _, err := c.client.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func hpaRequests(cpu string) corev1.ResourceRequirements {
	if cpu == "" {
		return corev1.ResourceRequirements{}
	}
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
}

// hpaPod runs a pod of app on hpa-node that "uses" usage cpu, and waits
// for it to run.
func hpaPod(t *testing.T, ctx context.Context, c *cluster, app, name, request, usage string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": app},
			Annotations: map[string]string{simulated.AnnotationCPUUsage: usage, simulated.AnnotationMemoryUsage: "32Mi"}},
		Spec: corev1.PodSpec{NodeName: "hpa-node", Containers: []corev1.Container{{Name: "app", Image: "busybox", Resources: hpaRequests(request)}}},
	}
	if _, err := c.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, name+" Running", func(ctx context.Context) (bool, error) {
		p, err := c.client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning && podReady(p), nil
	})
}

// hpaPoll polls cond every 200ms for up to 90s: a fresh pod's cpu counts
// only once the metrics API has measured it over a whole window (10s),
// and the API caches kubelet summaries for as long.
func hpaPoll(t *testing.T, ctx context.Context, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// hpaWaitReplicas waits for the Deployment's spec.replicas, as its /scale
// reports it.
func hpaWaitReplicas(t *testing.T, ctx context.Context, c *cluster, name string, want int32) {
	t.Helper()
	var last int32
	hpaPoll(t, ctx, fmt.Sprintf("deployment %s scaled to %d", name, want), func(ctx context.Context) (bool, error) {
		s, err := c.client.AppsV1().Deployments("default").GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if s.Spec.Replicas != last {
			t.Logf("deployment %s: spec.replicas %d", name, s.Spec.Replicas)
			last = s.Spec.Replicas
		}
		return s.Spec.Replicas == want, nil
	})
}

func hpaWaitStatus(t *testing.T, ctx context.Context, c *cluster, name, what string, ok func(*autoscalingv2.HorizontalPodAutoscaler) bool) *autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	var got *autoscalingv2.HorizontalPodAutoscaler
	hpaPoll(t, ctx, "hpa "+name+" "+what, func(ctx context.Context) (bool, error) {
		h, err := c.client.AutoscalingV2().HorizontalPodAutoscalers("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = h
		return ok(h), nil
	})
	return got
}

func hpaExpectCondition(t *testing.T, h *autoscalingv2.HorizontalPodAutoscaler, typ autoscalingv2.HorizontalPodAutoscalerConditionType,
	status corev1.ConditionStatus, reason string) *autoscalingv2.HorizontalPodAutoscalerCondition {
	t.Helper()
	for i, cond := range h.Status.Conditions {
		if cond.Type == typ {
			if cond.Status != status || cond.Reason != reason {
				t.Errorf("%s = %s/%s (%s), want %s/%s", typ, cond.Status, cond.Reason, cond.Message, status, reason)
			}
			return &h.Status.Conditions[i]
		}
	}
	t.Errorf("no %s condition in %+v", typ, h.Status.Conditions)
	return nil
}

// hpaWaitEvent waits for an event about the HPA with reason and a message
// containing message.
func hpaWaitEvent(t *testing.T, ctx context.Context, c *cluster, hpa, reason, message string) {
	t.Helper()
	hpaPoll(t, ctx, fmt.Sprintf("event %s %q on hpa %s", reason, message, hpa), func(ctx context.Context) (bool, error) {
		list, err := c.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "HorizontalPodAutoscaler" && e.InvolvedObject.Name == hpa &&
				e.Reason == reason && strings.Contains(e.Message, message) {
				return true, nil
			}
		}
		return false, nil
	})
}
