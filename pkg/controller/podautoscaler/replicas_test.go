package podautoscaler

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// testReadiness: 5m cpu initialization, 30s initial readiness delay.
var testReadiness = readiness{cpuInitializationPeriod: 5 * time.Minute, initialReadinessDelay: 30 * time.Second}

// podOpt changes a test pod.
type podOpt func(*corev1.Pod)

// testPod is a Running, Ready pod started (and ready) 10 minutes before
// t0, with one container "app" requesting 1 cpu and 1Gi.
func testPod(name string, opts ...podOpt) *corev1.Pod {
	start := metav1.NewTime(t0.Add(-10 * time.Minute))
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		}}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, StartTime: &start,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: start}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func deleting(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) }

// startedAgo sets the start and the readiness transition.
func startedAgo(start, readyChange time.Duration, ready bool) podOpt {
	return func(p *corev1.Pod) {
		s := metav1.NewTime(t0.Add(-start))
		p.Status.StartTime = &s
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(t0.Add(-readyChange))}}
	}
}

func noReadyCondition(p *corev1.Pod) { p.Status.Conditions = nil }

func requests(cpu string) podOpt {
	return func(p *corev1.Pod) {
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
	}
}

// sample is a fresh measurement over 30s.
func sample(milli int64) PodUsage {
	return PodUsage{Value: milli, Timestamp: t0, Window: 30 * time.Second}
}

func TestGroupPods(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		usage   map[string]PodUsage
		res     corev1.ResourceName
		wantIn  string // ready, unready, missing or ignored
		comment string
	}{
		{"ready with sample", testPod("p"), map[string]PodUsage{"p": sample(100)}, corev1.ResourceCPU, "ready", ""},
		{"no sample", testPod("p"), nil, corev1.ResourceCPU, "missing", ""},
		{"pending", testPod("p", phase(corev1.PodPending)), map[string]PodUsage{"p": sample(100)}, corev1.ResourceCPU, "unready", ""},
		{"failed", testPod("p", phase(corev1.PodFailed)), map[string]PodUsage{"p": sample(100)}, corev1.ResourceCPU, "ignored", ""},
		{"succeeded", testPod("p", phase(corev1.PodSucceeded)), nil, corev1.ResourceCPU, "ignored", ""},
		{"being deleted", testPod("p", deleting), map[string]PodUsage{"p": sample(100)}, corev1.ResourceCPU, "ignored", ""},
		{"cpu: no ready condition", testPod("p", noReadyCondition), map[string]PodUsage{"p": sample(100)}, corev1.ResourceCPU, "unready", ""},
		{"cpu: fresh and not ready", testPod("p", startedAgo(time.Minute, time.Minute, false)), map[string]PodUsage{"p": sample(100)}, corev1.ResourceCPU, "unready", ""},
		{"cpu: fresh, ready, measured over a window since", testPod("p", startedAgo(time.Minute, 40*time.Second, true)),
			map[string]PodUsage{"p": sample(100)}, corev1.ResourceCPU, "ready", "ready 40s ago, window 30s"},
		{"cpu: fresh, ready, window overlaps start-up", testPod("p", startedAgo(time.Minute, 20*time.Second, true)),
			map[string]PodUsage{"p": sample(100)}, corev1.ResourceCPU, "unready", "ready 20s ago, window 30s"},
		{"cpu: old, unready, never was ready", testPod("p", startedAgo(10*time.Minute, 10*time.Minute-10*time.Second, false)),
			map[string]PodUsage{"p": sample(100)}, corev1.ResourceCPU, "unready", "last transition 10s after start"},
		{"cpu: old, unready after having been ready", testPod("p", startedAgo(10*time.Minute, time.Minute, false)),
			map[string]PodUsage{"p": sample(100)}, corev1.ResourceCPU, "ready", "its sample counts"},
		{"memory: readiness does not matter", testPod("p", startedAgo(time.Minute, time.Minute, false)),
			map[string]PodUsage{"p": sample(100)}, corev1.ResourceMemory, "ready", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := groupPods([]*corev1.Pod{tc.pod}, tc.usage, tc.res, t0, testReadiness)
			got := map[string]sets.Set[string]{"ready": g.ready, "unready": g.unready, "missing": g.missing, "ignored": g.ignored}
			for group, set := range got {
				if want := group == tc.wantIn; set.Has("p") != want {
					t.Errorf("pod in %s = %v, want %v (%s)", group, set.Has("p"), want, tc.comment)
				}
			}
		})
	}
}

func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	cpu := func(q string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}}
	}
	pod := func(spec corev1.PodSpec) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: spec}
	}
	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		container string
		want      int64
		wantErr   string
	}{
		{"sum of containers", pod(corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: cpu("250m")}, {Name: "b", Resources: cpu("1")}}}), "", 1250, ""},
		{"one container", pod(corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: cpu("250m")}, {Name: "b", Resources: cpu("1")}}}), "b", 1000, ""},
		{"missing request", pod(corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: cpu("250m")}, {Name: "b"}}}), "",
			0, "missing request for cpu in container b of Pod p"},
		{"missing request elsewhere does not matter for a container metric",
			pod(corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: cpu("250m")}, {Name: "b"}}}), "a", 250, ""},
		{"sidecars count, init containers do not", pod(corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Resources: cpu("4")}, {Name: "sidecar", RestartPolicy: &always, Resources: cpu("100m")}},
			Containers:     []corev1.Container{{Name: "a", Resources: cpu("250m")}},
		}), "", 350, ""},
		{"pod-level request", pod(corev1.PodSpec{Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
			Containers: []corev1.Container{{Name: "a"}}}), "", 2000, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := podRequests([]*corev1.Pod{tc.pod}, corev1.ResourceCPU, tc.container)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got["p"] != tc.want {
				t.Errorf("request = %d, want %d", got["p"], tc.want)
			}
		})
	}
}

// podsAndUsage builds pods named p0, p1, ... from usage given as
// millicores (request 1000m), where -1 means no sample.
func podsAndUsage(milli []int64, opts map[int][]podOpt) ([]*corev1.Pod, map[string]PodUsage) {
	var pods []*corev1.Pod
	usage := map[string]PodUsage{}
	for i, m := range milli {
		name := "p" + string(rune('0'+i))
		pods = append(pods, testPod(name, opts[i]...))
		if m >= 0 {
			usage[name] = sample(m)
		}
	}
	return pods, usage
}

func TestReplicasForUtilization(t *testing.T) {
	notReady := []podOpt{startedAgo(time.Minute, time.Minute, false)}
	for _, tc := range []struct {
		name            string
		current, target int32
		usage           []int64 // per pod, millicores of a 1000m request; -1: no sample
		opts            map[int][]podOpt
		want            int32
		wantUtilization int32
		wantErr         error
	}{
		{name: "scale up", current: 3, target: 50, usage: []int64{900, 900, 900}, want: 6, wantUtilization: 90},
		{name: "scale down", current: 4, target: 50, usage: []int64{100, 100, 100, 100}, want: 1, wantUtilization: 10},
		{name: "within tolerance above", current: 3, target: 50, usage: []int64{540, 540, 540}, want: 3, wantUtilization: 54},
		{name: "at the tolerance's edge", current: 3, target: 50, usage: []int64{550, 550, 550}, want: 3, wantUtilization: 55},
		{name: "just past the tolerance", current: 3, target: 50, usage: []int64{560, 560, 560}, want: 4, wantUtilization: 56},
		{name: "within tolerance below", current: 3, target: 50, usage: []int64{460, 460, 460}, want: 3, wantUtilization: 46},
		{name: "ready pods, not the current replicas, are multiplied", current: 10, target: 50, usage: []int64{1000, 1000}, want: 4, wantUtilization: 100},
		{name: "scale down: missing pods count as 100%", current: 4, target: 80, usage: []int64{100, 100, -1, -1}, want: 3, wantUtilization: 10},
		{name: "scale down: missing pods at 100% cancel it", current: 4, target: 50, usage: []int64{100, 100, -1, -1}, want: 4, wantUtilization: 10},
		{name: "scale down: missing pods count as the target when above 100%", current: 3, target: 200, usage: []int64{100, 100, -1}, want: 2, wantUtilization: 10},
		{name: "scale up: missing pods count as 0%", current: 4, target: 50, usage: []int64{1500, 1500, -1, -1}, want: 6, wantUtilization: 150},
		{name: "scale up: missing pods at 0% cancel it", current: 4, target: 50, usage: []int64{1000, 1000, -1, -1}, want: 4, wantUtilization: 100},
		{name: "scale up: missing pods would flip the direction", current: 2, target: 50, usage: []int64{600, -1}, want: 2, wantUtilization: 60},
		{name: "scale up: unready pods count as 0%", current: 3, target: 50, usage: []int64{1000, 1000, 2000}, opts: map[int][]podOpt{2: notReady}, want: 4, wantUtilization: 100},
		{name: "scale up: pending pods count as 0%", current: 3, target: 50, usage: []int64{1000, 1000, -1}, opts: map[int][]podOpt{2: {phase(corev1.PodPending)}}, want: 4, wantUtilization: 100},
		{name: "scale down: unready pods are left out", current: 4, target: 50, usage: []int64{100, 100, 1000, 1000}, opts: map[int][]podOpt{2: notReady, 3: notReady}, want: 1, wantUtilization: 10},
		{name: "scale up: fewer than current is no scale up", current: 10, target: 50, usage: []int64{1000, 1000, -1}, want: 10, wantUtilization: 100},
		{name: "deleted and failed pods do not count", current: 3, target: 50, usage: []int64{1000, 1000, -1, -1},
			opts: map[int][]podOpt{2: {deleting}, 3: {phase(corev1.PodFailed)}}, want: 4, wantUtilization: 100},
		{name: "requests weigh the average", current: 2, target: 50, usage: []int64{1000, 0}, opts: map[int][]podOpt{1: {requests("3")}}, want: 1, wantUtilization: 25},
		{name: "no ready pod with a sample", current: 2, target: 50, usage: []int64{1000, -1}, opts: map[int][]podOpt{0: notReady}, wantErr: errNoReadyMetrics},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods, usage := podsAndUsage(tc.usage, tc.opts)
			reqs, err := podRequests(pods, corev1.ResourceCPU, "")
			if err != nil {
				t.Fatal(err)
			}
			g := groupPods(pods, usage, corev1.ResourceCPU, t0, testReadiness)
			p, err := replicasForUtilization(tc.current, tc.target, usage, g, reqs, tolerances{0.1, 0.1})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.replicas != tc.want || p.utilization != tc.wantUtilization {
				t.Errorf("got %d replicas at %d%%, want %d at %d%%", p.replicas, p.utilization, tc.want, tc.wantUtilization)
			}
		})
	}
}

func TestReplicasForUtilizationZeroRequests(t *testing.T) {
	pods, usage := podsAndUsage([]int64{100}, map[int][]podOpt{0: {requests("0")}})
	reqs, _ := podRequests(pods, corev1.ResourceCPU, "")
	g := groupPods(pods, usage, corev1.ResourceCPU, t0, testReadiness)
	if _, err := replicasForUtilization(1, 50, usage, g, reqs, tolerances{0.1, 0.1}); err == nil || !strings.Contains(err.Error(), "no metrics") {
		t.Errorf("err = %v, want an error", err)
	}
}

func TestReplicasForAverageValue(t *testing.T) {
	for _, tc := range []struct {
		name        string
		current     int32
		target      int64
		usage       []int64
		want        int32
		wantAverage int64
	}{
		{"scale up", 3, 100, []int64{200, 200, 200}, 6, 200},
		{"within tolerance", 3, 100, []int64{105, 95, 100}, 3, 100},
		{"scale down", 4, 100, []int64{10, 10, 10, 10}, 1, 10},
		{"scale down: missing pods count as the target", 3, 100, []int64{10, 10, -1}, 2, 10},
		{"scale up: missing pods count as nothing", 3, 100, []int64{300, 300, -1}, 6, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods, usage := podsAndUsage(tc.usage, nil)
			g := groupPods(pods, usage, corev1.ResourceMemory, t0, testReadiness)
			n, avg, err := replicasForAverageValue(tc.current, tc.target, usage, g, tolerances{0.1, 0.1})
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.want || avg != tc.wantAverage {
				t.Errorf("got %d replicas at average %d, want %d at %d", n, avg, tc.want, tc.wantAverage)
			}
		})
	}
}

func TestTolerances(t *testing.T) {
	for _, tc := range []struct {
		tol   tolerances
		ratio float64
		want  bool
	}{
		{tolerances{0.1, 0.1}, 1.0, true},
		{tolerances{0.1, 0.1}, 0.9, true},
		{tolerances{0.1, 0.1}, 0.89, false},
		{tolerances{0.1, 0.1}, 1.11, false},
		{tolerances{0.5, 0}, 0.6, true},
		{tolerances{0.5, 0}, 1.01, false},
	} {
		if got := tc.tol.within(tc.ratio); got != tc.want {
			t.Errorf("%+v within(%v) = %v, want %v", tc.tol, tc.ratio, got, tc.want)
		}
	}
}
