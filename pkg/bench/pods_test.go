package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/kubelet/network"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime/runtimetest"
)

func millis(ms ...int) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m) * time.Millisecond
	}
	return out
}

func TestLatencyRow(t *testing.T) {
	// 1..30 ms, shuffled: nearest rank gives p50 = 15, p90 = 27, p99 = max = 30.
	var thirty []int
	for i := 30; i >= 1; i-- {
		thirty = append(thirty, i)
	}
	tests := []struct {
		name                     string
		lat                      []time.Duration
		elapsed                  time.Duration
		p50, p90, p99, max, rate float64
	}{
		{"thirty", millis(thirty...), 3 * time.Second, 15, 27, 30, 30, 10},
		{"one", millis(7), 7 * time.Millisecond, 7, 7, 7, 7, 1000.0 / 7},
		{"none", nil, 0, 0, 0, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tt.lat...)
			r := latencyRow("x", in, 2, tt.elapsed)
			if r.N != len(tt.lat) || r.Concurrency != 2 {
				t.Errorf("N %d concurrency %d, want %d and 2", r.N, r.Concurrency, len(tt.lat))
			}
			got := []float64{r.P50Ms, r.P90Ms, r.P99Ms, r.MaxMs}
			want := []float64{tt.p50, tt.p90, tt.p99, tt.max}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("p50/p90/p99/max = %v, want %v", got, want)
					break
				}
			}
			if diff := r.PerSec - tt.rate; diff > 1e-9 || diff < -1e-9 {
				t.Errorf("per sec %v, want %v", r.PerSec, tt.rate)
			}
			for i := range in {
				if in[i] != tt.lat[i] {
					t.Fatal("latencyRow reordered its input")
				}
			}
		})
	}
}

func TestPodsReportTable(t *testing.T) {
	r := &PodsReport{
		Node: "bench-x in network namespace mk8s-bench-x", Containerd: "/run/containerd/containerd.sock",
		Image: "docker.io/library/busybox:latest", Command: podCommand, Pods: 30, Concurrency: 1, WarmUp: 1,
		Rows: []LatencyRow{
			{Name: RowPods, N: 30, Concurrency: 1, P50Ms: 300, P90Ms: 350, P99Ms: 400, MaxMs: 400, PerSec: 3.3},
			{Name: RowBare, N: 30, Concurrency: 1, P50Ms: 60, P90Ms: 70, P99Ms: 80, MaxMs: 80, PerSec: 15},
			{Name: RowCtr, N: 5, Concurrency: 1, P50Ms: 90, P90Ms: 100, P99Ms: 100, MaxMs: 100, PerSec: 10},
		},
	}
	r.computeRatios()
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"P50 VS BARE", RowPods, RowBare, RowCtr,
		"300ms", "60.00ms", "5.00x", "1.00x", "1.50x", "1.25x",
		"pod startup / bare container start: p50 5.00x, p99 5.00x",
		"p99 is the slowest",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	var j bytes.Buffer
	if err := r.WriteJSON(&j); err != nil {
		t.Fatal(err)
	}
	var back PodsReport
	if err := json.Unmarshal(j.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Rows[0].P99VsBare == nil || *back.Rows[0].P99VsBare != 5 {
		t.Errorf("JSON p99 ratio of the pods row: %v", back.Rows[0].P99VsBare)
	}

	// No bare row (the baseline failed or was not run): no ratios.
	noBare := &PodsReport{Rows: []LatencyRow{{Name: RowPods, P50Ms: 1, P99Ms: 1}}}
	noBare.computeRatios()
	b.Reset()
	if err := noBare.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "pod startup / bare") || noBare.Rows[0].P50VsBare != nil {
		t.Errorf("ratios without a bare row:\n%s", b.String())
	}
}

func pod(phase corev1.PodPhase, ready bool, waiting string, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: podNamespace}, Status: corev1.PodStatus{Phase: phase}}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	if waiting != "" {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "sleep", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waiting}}}}
	}
	if deleting {
		p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	}
	return p
}

func TestPodTracker(t *testing.T) {
	tests := []struct {
		name    string
		pod     *corev1.Pod
		outcome bool // an outcome is delivered
		failed  bool
	}{
		{"pending", pod(corev1.PodPending, false, "ContainerCreating", false), false, false},
		{"running, not ready", pod(corev1.PodRunning, false, "", false), false, false},
		{"running and ready", pod(corev1.PodRunning, true, "", false), true, false},
		{"image pull error", pod(corev1.PodPending, false, "ErrImagePull", false), true, true},
		{"failed", pod(corev1.PodFailed, false, "", false), true, true},
		{"being deleted", pod(corev1.PodRunning, true, "", true), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newPodTracker()
			tr.observe(tt.pod) // not expected yet: ignored
			ch := tr.expect("p")
			before := time.Now()
			tr.observe(tt.pod)
			tr.observe(tt.pod) // a second event delivers nothing more
			select {
			case o := <-ch:
				if !tt.outcome {
					t.Fatalf("outcome %+v, want none", o)
				}
				if (o.err != nil) != tt.failed {
					t.Errorf("err %v, want failed=%v", o.err, tt.failed)
				}
				if !tt.failed && o.at.Before(before) {
					t.Errorf("ready at %v, before the event", o.at)
				}
			default:
				if tt.outcome {
					t.Fatal("no outcome")
				}
			}
			select {
			case <-tr.changed:
			default:
				t.Error("events did not poke changed")
			}
		})
	}
}

func TestTimeConcurrent(t *testing.T) {
	var running, peak atomic.Int32
	lat, _, err := timeConcurrent(context.Background(), 12, 3, func(_ context.Context, i int) (time.Duration, error) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		running.Add(-1)
		return time.Duration(i), nil
	})
	if err != nil || len(lat) != 12 {
		t.Fatalf("%d latencies, err %v; want 12, nil", len(lat), err)
	}
	if p := peak.Load(); p > 3 || p < 1 {
		t.Errorf("peak concurrency %d, want at most 3", p)
	}

	boom := errors.New("boom")
	var calls atomic.Int32
	_, _, err = timeConcurrent(context.Background(), 50, 1, func(_ context.Context, i int) (time.Duration, error) {
		calls.Add(1)
		if i == 2 {
			return 0, boom
		}
		return 0, nil
	})
	if !errors.Is(err, boom) || calls.Load() > 4 {
		t.Errorf("err %v after %d calls; want boom, and no more calls", err, calls.Load())
	}
}

func TestRemoveNamespaceCgroups(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"ns1", "cpu/ns1", "memory/ns1", "memory/other", "pids/ns1/still-used"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	err := removeNamespaceCgroups(root, "ns1")
	if err == nil || !strings.Contains(err.Error(), "pids") {
		t.Errorf("err %v, want one about the pids cgroup that still holds a child", err)
	}
	for d, want := range map[string]bool{"ns1": false, "cpu/ns1": false, "memory/ns1": false, "memory/other": true, "pids/ns1": true} {
		_, err := os.Stat(filepath.Join(root, d))
		if got := err == nil; got != want {
			t.Errorf("%s exists: %v, want %v", d, got, want)
		}
	}
}

// TestRunPodsSmoke runs the whole benchmark with two pods on this
// machine's containerd (as root) and checks that it reports every row and
// leaves nothing behind. Timings are not judged.
func TestRunPodsSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and a node")
	}
	addr := runtimetest.Containerd(t)
	if err := checkNodeTools("pods"); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, progress bytes.Buffer
	cfg := PodsConfig{Pods: 2, Concurrency: 2, CtrRuns: 1, ContainerdAddress: addr, JSON: true, Progress: &progress}
	if err := RunPods(ctx, cfg, &out); err != nil {
		t.Fatalf("RunPods: %v\nprogress:\n%s", err, progress.String())
	}
	var r PodsReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("decode report: %v\n%s", err, out.String())
	}
	rows := map[string]LatencyRow{}
	for _, row := range r.Rows {
		rows[row.Name] = row
	}
	for _, name := range []string{RowPods, RowBare} {
		row, ok := rows[name]
		if !ok || row.N != 2 || row.P50Ms <= 0 || row.MaxMs < row.P50Ms || row.P50VsBare == nil {
			t.Errorf("row %q: %+v (present %v)", name, row, ok)
		}
	}

	client, err := containerd.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	nss, err := client.NamespaceService().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := strings.TrimPrefix(strings.Fields(r.Node)[0], "bench-")
	for _, ns := range nss {
		if ns == "minik8s-bench-"+node {
			t.Errorf("containerd namespace %s left behind", ns)
		}
	}
	if cs, err := nodeContainers(namespaces.WithNamespace(ctx, "minik8s"), client, "bench-"+node); err != nil || len(cs) > 0 {
		t.Errorf("node containers left behind: %d (err %v)", len(cs), err)
	}
	if _, err := os.Stat(filepath.Join(network.DefaultNetNSDir, "mk8s-bench-"+node)); err == nil {
		t.Errorf("network namespace mk8s-bench-%s left behind", node)
	}
}
