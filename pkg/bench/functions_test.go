package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSummariseSteps(t *testing.T) {
	ms := func(m int) time.Duration { return time.Duration(m) * time.Millisecond }
	cycles := []map[string]time.Duration{
		{StepScaled: ms(10), StepCreated: ms(40), StepScheduled: ms(60), StepRunning: ms(700), StepResponse: ms(900), StepReady: ms(1100)},
		{StepScaled: ms(20), StepCreated: ms(50), StepScheduled: ms(80), StepRunning: ms(800), StepResponse: ms(950), StepReady: ms(1000)},
		// A cycle whose pod the watch did not see Ready.
		{StepScaled: ms(30), StepCreated: ms(60), StepScheduled: ms(90), StepRunning: ms(600), StepResponse: ms(700)},
	}
	rows := summariseSteps(cycles)
	want := []StepRow{
		{StepScaled, 3, 20, 20},
		{StepCreated, 3, 50, 30},
		{StepScheduled, 3, 80, 30},
		{StepRunning, 3, 700, 640},
		{StepResponse, 3, 900, 150},
		{StepReady, 2, 1000, 200}, // from the container running: 400 and 200
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, rows[i], want[i])
		}
	}
}

func TestFnTrackerSince(t *testing.T) {
	tr := newFnTracker()
	replicas := func(n int32) *appsv1.Deployment {
		return &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: &n}}
	}
	tr.observe(replicas(0))
	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "old", UID: "old"}}
	tr.observe(old)
	t0 := time.Now()
	tr.observe(replicas(1))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "new", UID: "new"}}
	tr.observe(pod)
	pod = pod.DeepCopy()
	pod.Spec.NodeName = "n1"
	tr.observe(pod)
	pod = pod.DeepCopy()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	tr.observe(pod)
	if tr.readyAfter(t0) {
		t.Error("ready before the Ready condition")
	}
	pod = pod.DeepCopy()
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	tr.observe(pod)
	if !tr.readyAfter(t0) {
		t.Error("not ready after the Ready condition")
	}
	steps := tr.since(t0, time.Now())
	prev := time.Duration(0)
	for _, s := range []string{StepScaled, StepCreated, StepScheduled, StepRunning, StepReady, StepResponse} {
		d, ok := steps[s]
		if !ok || d < prev {
			t.Errorf("step %q: %v (seen %v), want seen, after %v", s, d, ok, prev)
		}
		prev = d
	}
}

func TestFunctionsReport(t *testing.T) {
	r := &FunctionsReport{
		Nodes: "1: n1", Registry: "127.0.0.1:5000", Runtime: "python3", Function: "default/bench",
		Targets: Targets{ColdP50Ms: 500, ColdP99Ms: 1000, Published: "Knative 2-4s, OpenFaaS 1-2s"},
		Rows: []FunctionsRow{
			{LatencyRow: latencyRow(RowFnCold, []time.Duration{800 * time.Millisecond, 900 * time.Millisecond, 1200 * time.Millisecond}, 1, 0)},
			{LatencyRow: latencyRow(RowFnColdPull, []time.Duration{4 * time.Second}, 1, 0), ImageBytes: 100 << 20, KeptBytes: 1 << 10},
		},
		ScaleUp: &ScaleUp{Clients: 20, Want: 5, ToTwoMs: 3000, MaxReady: 4, MaxPods: 5, Note: "5 Ready instances not reached"},
	}
	r.computeRatios()
	if r.ColdP50VsTarget == nil || *r.ColdP50VsTarget != 1.8 || *r.ColdP99VsTarget != 1.2 {
		t.Fatalf("ratios %v %v, want 1.8 and 1.2", r.ColdP50VsTarget, r.ColdP99VsTarget)
	}
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"p50 <= 500ms, p99 <= 1000ms", "Knative 2-4s, OpenFaaS 1-2s", "p50 1.80x", "p99 1.20x",
		RowFnCold, "100.0 MiB", "5 Ready after never", "5 Ready instances not reached"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back FunctionsReport
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Rows[0].P50Ms != 900 || back.Rows[1].ImageBytes != 100<<20 {
		t.Errorf("JSON round trip: %v %+v", err, back.Rows)
	}
}

func TestFunctionsConfigDefaults(t *testing.T) {
	c := FunctionsConfig{ColdPull: -1}
	if err := c.complete(); err != nil {
		t.Fatal(err)
	}
	if c.Cold != 10 || c.ColdPull != 0 || c.Warm != 500 || c.Concurrency != 20 || c.Duration != 10*time.Second || c.Nodes != 1 {
		t.Errorf("defaults: %+v", c)
	}
	if err := (&FunctionsConfig{Nodes: 9}).complete(); err == nil {
		t.Error("9 nodes accepted")
	}
}
