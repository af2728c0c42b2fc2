package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/namespaces"
	"github.com/containernetworking/cni/pkg/invoke"

	"github.com/minik8s/minik8s/pkg/image"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime/daemon"
)

// PodsConfig is what `minik8s bench pods` measures and how.
type PodsConfig struct {
	// Pods is how many pods are measured, after one warm-up pod (default 30).
	Pods int
	// Concurrency is how many pods are being created and started at once
	// (default 1: one after the other).
	Concurrency int
	// Image is the pods' image (default busybox). It must be present in
	// containerd's minik8s namespace: the benchmark measures starts, not pulls.
	Image string
	// CtrRuns is how many times the `ctr run -d` binary is timed, for the
	// record, when ctr is on PATH (default 5; negative: never).
	CtrRuns int
	// ContainerdAddress is containerd's socket (default
	// /run/containerd/containerd.sock); one is started when none answers.
	ContainerdAddress string
	// PodTimeout bounds each pod's wait for Running and Ready (default 2m).
	PodTimeout time.Duration
	// JSON writes the report as JSON instead of a table.
	JSON bool
	// Progress, when set, gets a line per step and per pod.
	Progress io.Writer
}

// Defaults for the zero fields of PodsConfig.
const (
	DefaultPods        = 30
	DefaultPodsImage   = "busybox"
	DefaultCtrRuns     = 5
	DefaultPodTimeout  = 2 * time.Minute
	defaultConcurrency = 1
)

// podCommand is what every measured container runs: it stays up and does
// nothing.
var podCommand = []string{"sleep", "3600"}

func (c *PodsConfig) complete() error {
	if c.Pods < 0 || c.Concurrency < 0 {
		return fmt.Errorf("pods and concurrency must not be negative, got %d and %d", c.Pods, c.Concurrency)
	}
	if c.Pods == 0 {
		c.Pods = DefaultPods
	}
	if c.Concurrency == 0 {
		c.Concurrency = defaultConcurrency
	}
	c.Concurrency = min(c.Concurrency, c.Pods)
	if c.Image == "" {
		c.Image = DefaultPodsImage
	}
	if c.CtrRuns == 0 {
		c.CtrRuns = DefaultCtrRuns
	}
	if c.ContainerdAddress == "" {
		c.ContainerdAddress = daemon.DefaultAddress
	}
	if c.PodTimeout <= 0 {
		c.PodTimeout = DefaultPodTimeout
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return nil
}

// RunPods measures pod startup latency on a node of its own and the bare
// start of the same image on containerd, and writes the report to w.
// Everything it creates (control plane, node, network namespace, pods,
// containers, containerd namespace) is removed before it returns.
func RunPods(ctx context.Context, cfg PodsConfig, w io.Writer) (err error) {
	if err := cfg.complete(); err != nil {
		return err
	}
	ref, err := runtime.NormalizeImage(cfg.Image)
	if err != nil {
		return err
	}
	e, err := newNodeEnv(ctx, nodeEnvConfig{
		bench: "pods", needsRoot: "a node (containerd, runc, cgroups, a network namespace, iptables)",
		logLabel: "control plane and node log", containerdAddress: cfg.ContainerdAddress, cleanupTimeout: 3 * time.Minute, progress: cfg.Progress,
	})
	if err != nil {
		return err
	}
	defer func() { err = e.close(err) }()
	if _, err := e.client.GetImage(namespaces.WithNamespace(ctx, image.Namespace), ref); err != nil {
		if errdefs.IsNotFound(err) {
			return fmt.Errorf("image %s is not in containerd's %s namespace: the benchmark measures starts with the image present; import it first (minik8s image import)", ref, image.Namespace)
		}
		return fmt.Errorf("image %s: %w", ref, err)
	}

	report := &PodsReport{
		Image: ref, Command: podCommand, Pods: cfg.Pods, Concurrency: cfg.Concurrency, WarmUp: 1,
		Containerd: e.address,
	}

	// The baseline first, on an otherwise idle containerd.
	bare, err := measureBare(ctx, e.client, e.address, ref, e.id, cfg, e.log)
	if err != nil {
		return err
	}
	report.Rows = append(report.Rows, bare...)

	c, err := startPodCluster(ctx, e.address, e.id, "", e.log)
	if err != nil {
		return err
	}
	report.Node = fmt.Sprintf("%s in network namespace %s, node IP %s", c.nodeName, c.netnsName, podNodeIP)
	e.onClose(func(ctx context.Context) error {
		fmt.Fprintf(cfg.Progress, "cleaning up: pods, node %s, control plane, network namespace\n", c.nodeName)
		return c.close(ctx, e.client)
	})
	fmt.Fprintf(cfg.Progress, "node %s Ready\n", c.nodeName)
	row, err := c.measure(ctx, cfg)
	if err != nil {
		return err
	}
	report.Rows = append([]LatencyRow{row}, report.Rows...)
	report.computeRatios()
	if cfg.JSON {
		return report.WriteJSON(w)
	}
	return report.WriteTable(w)
}

// measureBare times the client-library equivalent of `ctr run -d` N times
// and, when ctr is on PATH, the binary itself, in a containerd namespace of
// their own that is removed afterwards.
func measureBare(ctx context.Context, client *containerd.Client, address, ref, id string, cfg PodsConfig, log *slog.Logger) (rows []LatencyRow, err error) {
	b, err := newBareEnv(ctx, client, address, ref, "minik8s-bench-"+id)
	if err != nil {
		return nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if cerr := b.close(cctx); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	fmt.Fprintf(cfg.Progress, "bare containers in containerd namespace %s\n", b.ns)
	if err := b.start(ctx, "warm-up"); err != nil {
		return nil, fmt.Errorf("bare container (warm-up): %w", err)
	}
	lat, elapsed, err := timeSequential(ctx, cfg.Pods, func(ctx context.Context, i int) error {
		return b.start(ctx, fmt.Sprintf("bare-%03d", i))
	})
	if err != nil {
		return nil, fmt.Errorf("bare container: %w", err)
	}
	rows = append(rows, latencyRow(RowBare, lat, 1, elapsed))
	fmt.Fprintf(cfg.Progress, "%d bare containers started, p50 %s\n", len(lat), formatLatency(rows[0].P50Ms))

	ctr, lookErr := exec.LookPath("ctr")
	if cfg.CtrRuns < 0 || lookErr != nil {
		if lookErr != nil {
			log.Info("ctr not on PATH: `ctr run -d` not timed")
		}
		return rows, nil
	}
	if err := b.ctrRun(ctx, ctr, "ctr-warm-up"); err != nil {
		return nil, fmt.Errorf("ctr run -d (warm-up): %w", err)
	}
	lat, elapsed, err = timeSequential(ctx, cfg.CtrRuns, func(ctx context.Context, i int) error {
		return b.ctrRun(ctx, ctr, fmt.Sprintf("ctr-%03d", i))
	})
	if err != nil {
		return nil, fmt.Errorf("ctr run -d: %w", err)
	}
	rows = append(rows, latencyRow(RowCtr, lat, 1, elapsed))
	return rows, nil
}

// timeSequential runs fn n times, one after the other, and returns each
// call's duration and the whole.
func timeSequential(ctx context.Context, n int, fn func(context.Context, int) error) ([]time.Duration, time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	start := time.Now()
	for i := range n {
		t0 := time.Now()
		if err := fn(ctx, i); err != nil {
			return nil, 0, err
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, time.Since(start), nil
}

// timeConcurrent runs fn for 0..n-1 with at most concurrency calls at once
// and returns each call's latency (as fn reports it) and the whole; the
// first error stops new calls.
func timeConcurrent(ctx context.Context, n, concurrency int, fn func(context.Context, int) (time.Duration, error)) ([]time.Duration, time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		lat      = make([]time.Duration, 0, n)
		firstErr error
		wg       sync.WaitGroup
	)
	sem := make(chan struct{}, concurrency)
	start := time.Now()
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			d, err := fn(ctx, i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				cancel()
				return
			}
			lat = append(lat, d)
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return lat, elapsed, firstErr
}

// checkNodeTools says what is missing for the benchmark's nodes to run
// pods, before anything starts.
func checkNodeTools(bench string) error {
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if _, err := invoke.FindInPath(p, []string{"/usr/lib/cni", "/opt/cni/bin"}); err != nil {
			return fmt.Errorf("bench %s needs the CNI plugin %s (apt-get install containernetworking-plugins): %w", bench, p, err)
		}
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		if _, serr := os.Stat(filepath.Join("/usr/sbin", "iptables")); serr != nil {
			return fmt.Errorf("bench %s needs iptables (apt-get install iptables)", bench)
		}
	}
	return nil
}
