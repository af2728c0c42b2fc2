package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
)

// fakeScales is the targets' /scale, by resource and name.
type fakeScales struct {
	mu        sync.Mutex
	scales    map[string]*autoscalingv1.Scale
	updates   []int32
	updateErr error
}

func (f *fakeScales) Scales(ns string) scale.ScaleInterface { return fakeScaleClient{f, ns} }

type fakeScaleClient struct {
	f  *fakeScales
	ns string
}

func (c fakeScaleClient) Get(_ context.Context, gr schema.GroupResource, name string, _ metav1.GetOptions) (*autoscalingv1.Scale, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	s, ok := c.f.scales[gr.String()+"/"+c.ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(gr, name)
	}
	return s.DeepCopy(), nil
}

func (c fakeScaleClient) Update(_ context.Context, gr schema.GroupResource, s *autoscalingv1.Scale, _ metav1.UpdateOptions) (*autoscalingv1.Scale, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if c.f.updateErr != nil {
		return nil, c.f.updateErr
	}
	c.f.scales[gr.String()+"/"+c.ns+"/"+s.Name] = s.DeepCopy()
	c.f.updates = append(c.f.updates, s.Spec.Replicas)
	return s, nil
}

func (c fakeScaleClient) Patch(context.Context, schema.GroupVersionResource, string, types.PatchType, []byte, metav1.PatchOptions) (*autoscalingv1.Scale, error) {
	return nil, errors.New("not implemented")
}

// fixture is a controller on fakes: the HPA "default/web" targets the
// Deployment "web" (selector app=web).
type fixture struct {
	t        *testing.T
	client   *k8sfake.Clientset
	factory  informers.SharedInformerFactory
	scales   *fakeScales
	metrics  *fakeMetrics
	clock    *testingclock.FakeClock
	recorder *record.FakeRecorder
	c        *Controller
}

func newFixture(t *testing.T, hpa *autoscalingv2.HorizontalPodAutoscaler, replicas int32, pods []*corev1.Pod) *fixture {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{appsv1.SchemeGroupVersion})
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	f := &fixture{
		t: t, client: k8sfake.NewClientset(hpa),
		scales: &fakeScales{scales: map[string]*autoscalingv1.Scale{
			"deployments.apps/default/web": {
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
				Spec:       autoscalingv1.ScaleSpec{Replicas: replicas},
				Status:     autoscalingv1.ScaleStatus{Replicas: replicas, Selector: "app=web"},
			},
		}},
		metrics:  &fakeMetrics{usage: map[corev1.ResourceName]map[string]PodUsage{}},
		clock:    testingclock.NewFakeClock(t0),
		recorder: record.NewFakeRecorder(100),
	}
	f.factory = informers.NewSharedInformerFactory(f.client, 0)
	kc := &kit.Context{Client: f.client, Factory: f.factory, Clock: f.clock, Logger: slog.New(slog.DiscardHandler), Recorder: f.recorder}
	c, err := New(kc, Config{Metrics: f.metrics, Scales: f.scales, Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	if err := f.factory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer().Add(hpa); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if err := f.factory.Core().V1().Pods().Informer().GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// setUsage sets every pod's usage of res to milli, measured now.
func (f *fixture) setUsage(res corev1.ResourceName, milli map[string]int64) {
	u := map[string]PodUsage{}
	for name, v := range milli {
		u[name] = PodUsage{Value: v, Timestamp: f.clock.Now(), Window: 30 * time.Second}
	}
	f.metrics.usage[res] = u
}

// sync evaluates the HPA once, then feeds the written HPA back to the
// informer cache, as a watch would.
func (f *fixture) sync() (*autoscalingv2.HorizontalPodAutoscaler, error) {
	f.t.Helper()
	err := f.c.Reconcile(context.Background(), "default/web")
	hpa, gerr := f.client.AutoscalingV2().HorizontalPodAutoscalers("default").Get(context.Background(), "web", metav1.GetOptions{})
	if gerr != nil {
		f.t.Fatal(gerr)
	}
	if uerr := f.factory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer().Update(hpa); uerr != nil {
		f.t.Fatal(uerr)
	}
	return hpa, err
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (f *fixture) updates() []int32 {
	f.scales.mu.Lock()
	defer f.scales.mu.Unlock()
	return slices.Clone(f.scales.updates)
}

func testHPA(metrics ...autoscalingv2.MetricSpec) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "hpa-uid", Generation: 2},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 10, Metrics: metrics,
		},
	}
}

func utilizationOf(res corev1.ResourceName, percent int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: res, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(percent)}}}
}

func averageValueOf(res corev1.ResourceName, q string) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: res, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse(q))}}}
}

// webPods are n pods of the target, each requesting 1 cpu and 1Gi.
func webPods(n int, opts ...podOpt) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, testPod(fmt.Sprintf("web-%d", i), opts...))
	}
	return out
}

// perPod is the same usage for n pods.
func perPod(n int, milli int64) map[string]int64 {
	out := map[string]int64{}
	for i := range n {
		out[fmt.Sprintf("web-%d", i)] = milli
	}
	return out
}

func condition(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) *autoscalingv2.HorizontalPodAutoscalerCondition {
	for i := range hpa.Status.Conditions {
		if hpa.Status.Conditions[i].Type == t {
			return &hpa.Status.Conditions[i]
		}
	}
	return nil
}

// conditionIs says whether the condition is "Status/Reason".
func conditionIs(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType, want string) error {
	c := condition(hpa, t)
	if c == nil {
		return fmt.Errorf("no %s condition, want %s", t, want)
	}
	if got := string(c.Status) + "/" + c.Reason; got != want {
		return fmt.Errorf("%s = %s (%s), want %s", t, got, c.Message, want)
	}
	return nil
}

func TestReconcileScalesUp(t *testing.T) {
	f := newFixture(t, testHPA(utilizationOf(corev1.ResourceCPU, 50)), 2, webPods(2))
	f.setUsage(corev1.ResourceCPU, perPod(2, 1500))
	hpa, err := f.sync()
	if err != nil {
		t.Fatal(err)
	}
	if got := f.updates(); !slices.Equal(got, []int32{6}) {
		t.Fatalf("scale updates = %v, want [6]", got)
	}
	st := hpa.Status
	if st.CurrentReplicas != 2 || st.DesiredReplicas != 6 {
		t.Errorf("status replicas current %d desired %d, want 2 and 6", st.CurrentReplicas, st.DesiredReplicas)
	}
	if st.ObservedGeneration == nil || *st.ObservedGeneration != 2 {
		t.Errorf("observedGeneration = %v, want 2", st.ObservedGeneration)
	}
	if st.LastScaleTime == nil || !st.LastScaleTime.Time.Equal(t0) {
		t.Errorf("lastScaleTime = %v, want %v", st.LastScaleTime, t0)
	}
	if len(st.CurrentMetrics) != 1 || st.CurrentMetrics[0].Resource == nil ||
		ptr.Deref(st.CurrentMetrics[0].Resource.Current.AverageUtilization, 0) != 150 ||
		st.CurrentMetrics[0].Resource.Current.AverageValue.String() != "1500m" {
		t.Errorf("currentMetrics = %+v, want cpu at 150%% (1500m)", st.CurrentMetrics)
	}
	for ct, want := range map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{
		autoscalingv2.AbleToScale:    "True/SucceededRescale",
		autoscalingv2.ScalingActive:  "True/ValidMetricFound",
		autoscalingv2.ScalingLimited: "False/DesiredWithinRange",
	} {
		if err := conditionIs(hpa, ct, want); err != nil {
			t.Error(err)
		}
	}
	want := "Normal SuccessfulRescale New size: 6; reason: cpu resource utilization (percentage of request) above target"
	if got := f.events(); !slices.Equal(got, []string{want}) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

func TestReconcile(t *testing.T) {
	noRequests := func(p *corev1.Pod) { p.Spec.Containers[0].Resources = corev1.ResourceRequirements{} }
	for _, tc := range []struct {
		name       string
		hpa        func(*autoscalingv2.HorizontalPodAutoscaler)
		replicas   int32
		pods       []*corev1.Pod
		cpu, mem   map[string]int64 // usage; nil: no metrics
		setup      func(*fixture)
		wantUpdate []int32
		wantConds  map[autoscalingv2.HorizontalPodAutoscalerConditionType]string
		wantEvents []string // prefixes, in order
		wantErr    bool
	}{
		{
			name: "within tolerance: no change", replicas: 3, pods: webPods(3), cpu: perPod(3, 520),
			wantConds: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{
				autoscalingv2.AbleToScale: "True/ReadyForNewScale", autoscalingv2.ScalingActive: "True/ValidMetricFound",
				autoscalingv2.ScalingLimited: "False/DesiredWithinRange",
			},
		},
		{
			name: "pods without requests", replicas: 2, pods: webPods(2, noRequests), cpu: perPod(2, 500),
			wantConds: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{
				autoscalingv2.AbleToScale: "True/SucceededGetScale", autoscalingv2.ScalingActive: "False/FailedGetResourceMetric",
			},
			wantEvents: []string{"Warning FailedGetResourceMetric failed to get cpu utilization: missing request for cpu in container app of Pod web-0",
				"Warning FailedComputeMetricsReplicas invalid metrics (1 invalid out of 1)"},
			wantErr: true,
		},
		{
			name: "no metrics", replicas: 2, pods: webPods(2),
			wantConds: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{
				autoscalingv2.ScalingActive: "False/FailedGetResourceMetric",
			},
			wantEvents: []string{"Warning FailedGetResourceMetric failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned",
				"Warning FailedComputeMetricsReplicas"},
			wantErr: true,
		},
		{
			name: "no pods", replicas: 2, cpu: perPod(2, 500),
			wantConds: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{
				autoscalingv2.ScalingActive: "False/FailedGetResourceMetric",
			},
			wantEvents: []string{"Warning FailedGetResourceMetric failed to get cpu utilization: no pods returned by selector", "Warning FailedComputeMetricsReplicas"},
			wantErr:    true,
		},
		{
			name: "target scaled to zero: scaling disabled", replicas: 0, pods: webPods(2), cpu: perPod(2, 2000),
			wantConds: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{
				autoscalingv2.AbleToScale: "True/SucceededGetScale", autoscalingv2.ScalingActive: "False/ScalingDisabled",
			},
		},
		{
			name: "above maxReplicas", replicas: 15, pods: webPods(2), cpu: perPod(2, 500),
			wantUpdate: []int32{10},
			wantConds: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{
				autoscalingv2.AbleToScale: "True/SucceededRescale", autoscalingv2.ScalingLimited: "True/TooManyReplicas",
			},
			wantEvents: []string{"Normal SuccessfulRescale New size: 10; reason: Current number of replicas above Spec.MaxReplicas"},
		},
		{
			name: "below minReplicas", hpa: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr.To[int32](3) },
			replicas: 1, pods: webPods(1), cpu: perPod(1, 500), wantUpdate: []int32{3},
			wantEvents: []string{"Normal SuccessfulRescale New size: 3; reason: Current number of replicas below Spec.MinReplicas"},
		},
		{
			name: "limited by maxReplicas", replicas: 4, pods: webPods(4), cpu: perPod(4, 2000), wantUpdate: []int32{8},
			hpa: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MaxReplicas = 8 },
			wantConds: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{
				autoscalingv2.ScalingLimited: "True/TooManyReplicas",
			},
			wantEvents: []string{"Normal SuccessfulRescale New size: 8; reason: cpu resource utilization (percentage of request) above target"},
		},
		{
			name: "limited by the default scale-up rate", replicas: 1, pods: webPods(1), cpu: perPod(1, 5000), wantUpdate: []int32{5},
			wantConds: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{
				autoscalingv2.ScalingLimited: "True/ScaleUpLimit",
			},
			wantEvents: []string{"Normal SuccessfulRescale New size: 5; reason: cpu resource utilization (percentage of request) above target"},
		},
		{
			name: "missing target", replicas: 2, pods: webPods(2), cpu: perPod(2, 500),
			hpa: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.Name = "nope" },
			wantConds: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{
				autoscalingv2.AbleToScale: "False/FailedGetScale",
			},
			wantEvents: []string{`Warning FailedGetScale deployments.apps "nope" not found`},
			wantErr:    true,
		},
		{
			name: "unknown kind", replicas: 2, pods: webPods(2), cpu: perPod(2, 500),
			hpa: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.Kind = "Widget" },
			wantConds: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{
				autoscalingv2.AbleToScale: "False/FailedGetScale",
			},
			wantEvents: []string{"Warning FailedGetScale unable to determine resource for scale target reference"},
			wantErr:    true,
		},
		{
			name: "scale update fails", replicas: 2, pods: webPods(2), cpu: perPod(2, 1500),
			setup: func(f *fixture) { f.scales.updateErr = errors.New("boom") },
			wantConds: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{
				autoscalingv2.AbleToScale: "False/FailedUpdateScale",
			},
			wantEvents: []string{"Warning FailedRescale New size: 6; reason: cpu resource utilization (percentage of request) above target; error: boom"},
			wantErr:    true,
		},
		{
			name: "target without a selector", replicas: 2, pods: webPods(2), cpu: perPod(2, 500),
			setup: func(f *fixture) { f.scales.scales["deployments.apps/default/web"].Status.Selector = "" },
			wantConds: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{
				autoscalingv2.ScalingActive: "False/InvalidSelector",
			},
			wantEvents: []string{"Warning SelectorRequired selector is required", "Warning FailedComputeMetricsReplicas selector is required"},
			wantErr:    true,
		},
		{
			name: "several metrics: the largest proposal wins", replicas: 2, pods: webPods(2),
			hpa: func(h *autoscalingv2.HorizontalPodAutoscaler) {
				h.Spec.Metrics = append(h.Spec.Metrics, averageValueOf(corev1.ResourceMemory, "100Mi"))
			},
			cpu: perPod(2, 750), mem: perPod(2, 200<<20*1000), wantUpdate: []int32{4},
			wantEvents: []string{"Normal SuccessfulRescale New size: 4; reason: memory resource above target"},
		},
		{
			name: "a failing metric does not stop a scale-up", replicas: 2, pods: webPods(2),
			hpa: func(h *autoscalingv2.HorizontalPodAutoscaler) {
				h.Spec.Metrics = append(h.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType,
					Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "qps"}}})
			},
			cpu: perPod(2, 1500), wantUpdate: []int32{6},
			wantConds: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{
				autoscalingv2.ScalingActive: "True/ValidMetricFound",
			},
			wantEvents: []string{"Warning FailedGetPodsMetric", "Normal SuccessfulRescale New size: 6"},
			wantErr:    true,
		},
		{
			name: "a failing metric stops a scale-down", replicas: 4, pods: webPods(4),
			hpa: func(h *autoscalingv2.HorizontalPodAutoscaler) {
				h.Spec.Metrics = append(h.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType,
					External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "queue"}}})
			},
			cpu: perPod(4, 100),
			wantConds: map[autoscalingv2.HorizontalPodAutoscalerConditionType]string{
				autoscalingv2.ScalingActive: "False/FailedGetExternalMetric",
			},
			wantEvents: []string{"Warning FailedGetExternalMetric", "Warning FailedComputeMetricsReplicas invalid metrics (1 invalid out of 2)"},
			wantErr:    true,
		},
		{
			name: "container resource", replicas: 2, pods: webPods(2),
			hpa: func(h *autoscalingv2.HorizontalPodAutoscaler) {
				h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ContainerResourceMetricSourceType,
					ContainerResource: &autoscalingv2.ContainerResourceMetricSource{Name: corev1.ResourceCPU, Container: "app",
						Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}}}}
			},
			cpu: perPod(2, 1000), wantUpdate: []int32{4},
			wantEvents: []string{"Normal SuccessfulRescale New size: 4; reason: cpu container resource utilization (percentage of request) above target"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hpa := testHPA(utilizationOf(corev1.ResourceCPU, 50))
			if tc.hpa != nil {
				tc.hpa(hpa)
			}
			f := newFixture(t, hpa, tc.replicas, tc.pods)
			if tc.cpu != nil {
				f.setUsage(corev1.ResourceCPU, tc.cpu)
			}
			if tc.mem != nil {
				f.setUsage(corev1.ResourceMemory, tc.mem)
			}
			if tc.setup != nil {
				tc.setup(f)
			}
			got, err := f.sync()
			if (err != nil) != tc.wantErr {
				t.Errorf("err = %v, want error: %v", err, tc.wantErr)
			}
			if u := f.updates(); !slices.Equal(u, tc.wantUpdate) {
				t.Errorf("scale updates = %v, want %v", u, tc.wantUpdate)
			}
			for ct, want := range tc.wantConds {
				if err := conditionIs(got, ct, want); err != nil {
					t.Error(err)
				}
			}
			events := f.events()
			if len(events) != len(tc.wantEvents) {
				t.Fatalf("events = %q, want %q", events, tc.wantEvents)
			}
			for i, want := range tc.wantEvents {
				if !strings.HasPrefix(events[i], want) {
					t.Errorf("event %d = %q, want %q...", i, events[i], want)
				}
			}
			if got.Status.ObservedGeneration == nil || *got.Status.ObservedGeneration != 2 {
				t.Errorf("observedGeneration = %v, want 2", got.Status.ObservedGeneration)
			}
		})
	}
}

func TestReconcileMissingRequestMessage(t *testing.T) {
	noRequests := func(p *corev1.Pod) { p.Spec.Containers[0].Resources = corev1.ResourceRequirements{} }
	f := newFixture(t, testHPA(utilizationOf(corev1.ResourceCPU, 50)), 2, webPods(2, noRequests))
	f.setUsage(corev1.ResourceCPU, perPod(2, 500))
	hpa, _ := f.sync()
	c := condition(hpa, autoscalingv2.ScalingActive)
	if c == nil || !strings.Contains(c.Message, "missing request for cpu") {
		t.Errorf("ScalingActive = %+v, want a message about the missing request for cpu", c)
	}
	if hpa.Status.CurrentReplicas != 2 {
		t.Errorf("currentReplicas = %d, want 2", hpa.Status.CurrentReplicas)
	}
}

// TestReconcileScaleDownOverTime follows one HPA across syncs, on a fake
// clock: the scale-down waits for the HPA's 60s window.
func TestReconcileScaleDownOverTime(t *testing.T) {
	hpa := testHPA(utilizationOf(corev1.ResourceCPU, 50))
	hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: rules(60, "")}
	f := newFixture(t, hpa, 4, webPods(4))

	f.setUsage(corev1.ResourceCPU, perPod(4, 500))
	got, err := f.sync()
	if err != nil {
		t.Fatal(err)
	}
	if err := conditionIs(got, autoscalingv2.AbleToScale, "True/ReadyForNewScale"); err != nil {
		t.Error(err)
	}
	since := condition(got, autoscalingv2.AbleToScale).LastTransitionTime

	for _, at := range []time.Duration{15 * time.Second, 30 * time.Second, 59 * time.Second} {
		f.clock.SetTime(t0.Add(at))
		f.setUsage(corev1.ResourceCPU, perPod(4, 100))
		got, err = f.sync()
		if err != nil {
			t.Fatal(err)
		}
		if u := f.updates(); len(u) != 0 {
			t.Fatalf("t0+%s: scaled to %v within the window", at, u)
		}
		if err := conditionIs(got, autoscalingv2.AbleToScale, "True/ScaleDownStabilized"); err != nil {
			t.Errorf("t0+%s: %v", at, err)
		}
		if got.Status.DesiredReplicas != 4 {
			t.Errorf("t0+%s: desiredReplicas = %d, want 4", at, got.Status.DesiredReplicas)
		}
		if c := condition(got, autoscalingv2.AbleToScale); !c.LastTransitionTime.Equal(&since) {
			t.Errorf("t0+%s: AbleToScale moved from %v to %v without changing status", at, since, c.LastTransitionTime)
		}
	}

	// The last recommendation of 4 (t0) leaves the window.
	f.clock.SetTime(t0.Add(60 * time.Second))
	got, err = f.sync()
	if err != nil {
		t.Fatal(err)
	}
	if u := f.updates(); !slices.Equal(u, []int32{1}) {
		t.Fatalf("scale updates = %v, want [1]", u)
	}
	if got.Status.DesiredReplicas != 1 || !got.Status.LastScaleTime.Time.Equal(t0.Add(60*time.Second)) {
		t.Errorf("status = %+v", got.Status)
	}
	events := f.events()
	if want := "Normal SuccessfulRescale New size: 1; reason: All metrics below target"; len(events) != 1 || events[0] != want {
		t.Errorf("events = %q, want %q", events, want)
	}
}

func TestReconcileForgetsDeletedHPA(t *testing.T) {
	hpa := testHPA(utilizationOf(corev1.ResourceCPU, 50))
	f := newFixture(t, hpa, 2, webPods(2))
	f.setUsage(corev1.ResourceCPU, perPod(2, 500))
	if _, err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if len(f.c.histories) != 1 {
		t.Fatalf("histories = %v, want one", f.c.histories)
	}
	if err := f.factory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer().Delete(hpa); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if len(f.c.histories) != 0 {
		t.Errorf("histories = %v, want none", f.c.histories)
	}
	// A new HPA under the same name starts afresh.
	h := f.c.historyOf("default/web", "uid-1")
	h.initialize(t0, 3)
	if h2 := f.c.historyOf("default/web", "uid-2"); len(h2.recommendations) != 0 {
		t.Errorf("a new HPA inherited %+v", h2.recommendations)
	}
}

func TestNewNeedsMetrics(t *testing.T) {
	client := k8sfake.NewClientset()
	if _, err := New(kit.NewContext(client), Config{}); err == nil {
		t.Error("New without a metrics source: want an error")
	}
}
