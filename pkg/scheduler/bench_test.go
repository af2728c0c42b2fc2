package scheduler_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minik8s/minik8s/pkg/controlplane"
	"github.com/minik8s/minik8s/pkg/scheduler"
)

// controlPlane runs a control plane in-process (embedded etcd) until the
// test ends and returns a client without client-side rate limiting.
func controlPlane(tb testing.TB) kubernetes.Interface {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan controlplane.ControlPlane, 1)
	done := make(chan error, 1)
	go func() {
		done <- controlplane.Run(ctx, controlplane.Config{
			DataDir: tb.TempDir(), BindAddress: "127.0.0.1", Logger: slog.New(slog.DiscardHandler),
			Ready: func(cp controlplane.ControlPlane) { ready <- cp },
		})
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
	})
	var cp controlplane.ControlPlane
	select {
	case cp = <-ready:
	case err := <-done:
		tb.Fatalf("control plane exited: %v", err)
	case <-time.After(60 * time.Second):
		tb.Fatal("control plane not ready after 60s")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.KubeconfigPath)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.QPS = -1
	return kubernetes.NewForConfigOrDie(cfg)
}

func TestBench(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	client := controlPlane(t)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := scheduler.Bench(ctx, client, 5, 40, &out); err != nil {
		t.Fatal(err)
	}
	t.Log(strings.TrimSpace(out.String()))
	if !strings.Contains(out.String(), "5 nodes, 40 pods") || !strings.Contains(out.String(), "pods/s") {
		t.Errorf("report %q", out.String())
	}
	// It cleans up after itself.
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 0 {
		t.Errorf("%d bench nodes left behind", len(nodes.Items))
	}
}

// BenchmarkSchedulerThroughput reports pods scheduled per second against
// an in-process control plane: go test ./pkg/scheduler -run XXX -bench Throughput
func BenchmarkSchedulerThroughput(b *testing.B) {
	client := controlPlane(b)
	for _, nodes := range []int{100, 1000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			const pods = 1000
			var total time.Duration
			for range b.N {
				r, err := scheduler.MeasureThroughput(context.Background(), client, nodes, pods)
				if err != nil {
					b.Fatal(err)
				}
				total += r.Duration
			}
			b.ReportMetric(float64(pods*b.N)/total.Seconds(), "pods/s")
		})
	}
}
