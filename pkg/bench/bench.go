package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minik8s/minik8s/pkg/controlplane"
)

// Config is what `minik8s bench api` measures and how.
type Config struct {
	// Kubeconfig, when set, targets a running cluster; empty starts a
	// control plane in-process on a temporary data dir.
	Kubeconfig string
	// EtcdEndpoints are the etcd client URLs to compare against. For the
	// in-process control plane they default to its embedded etcd; for a
	// running cluster, empty skips the etcd rows.
	EtcdEndpoints []string
	// DataDir, for the in-process control plane, replaces the temporary
	// data dir (it is kept afterwards).
	DataDir string
	// Concurrency lists the numbers of clients, one phase each (default 1, 16, 64).
	Concurrency []int
	// Duration is how long each phase runs (default 5s), unless Requests is set.
	Duration time.Duration
	// Requests, when > 0, is the number of requests of each phase, shared
	// by its workers; it replaces Duration.
	Requests int
	// ListObjects is how many ConfigMaps the listed namespace holds (default 100).
	ListObjects int
	// PayloadBytes is the size of each ConfigMap's data (default 256).
	PayloadBytes int
	// JSON writes the report as JSON instead of a table.
	JSON bool
	// Progress, when set, gets a line per phase as it completes.
	Progress io.Writer
}

// Defaults for the zero fields of Config.
const (
	DefaultDuration     = 5 * time.Second
	DefaultListObjects  = 100
	DefaultPayloadBytes = 256
)

// DefaultConcurrency is used when Config.Concurrency is empty.
var DefaultConcurrency = []int{1, 16, 64}

func (c *Config) complete() error {
	if len(c.Concurrency) == 0 {
		c.Concurrency = DefaultConcurrency
	}
	for _, n := range c.Concurrency {
		if n < 1 {
			return fmt.Errorf("concurrency must be at least 1, got %d", n)
		}
	}
	if c.Requests < 0 {
		return fmt.Errorf("requests must not be negative, got %d", c.Requests)
	}
	if c.Duration < 0 {
		return fmt.Errorf("duration must not be negative, got %s", c.Duration)
	}
	if c.Duration == 0 && c.Requests == 0 {
		c.Duration = DefaultDuration
	}
	if c.ListObjects <= 0 {
		c.ListObjects = DefaultListObjects
	}
	if c.PayloadBytes < 0 {
		return fmt.Errorf("payload bytes must not be negative, got %d", c.PayloadBytes)
	}
	if c.PayloadBytes == 0 {
		c.PayloadBytes = DefaultPayloadBytes
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return nil
}

// Run measures the target cfg describes and writes the report to w.
func Run(ctx context.Context, cfg Config, w io.Writer) (err error) {
	if err := cfg.complete(); err != nil {
		return err
	}
	t, err := openTarget(ctx, &cfg)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := t.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()

	e, err := newEnv(ctx, envConfig{
		rest: t.rest, etcd: cfg.EtcdEndpoints, listObjects: cfg.ListObjects, payloadBytes: cfg.PayloadBytes,
	})
	if err != nil {
		return err
	}
	defer func() {
		if t.ephemeral {
			return
		}
		// Leave a running cluster as it was found.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if cerr := e.cleanup(cctx); cerr != nil && err == nil {
			err = cerr
		}
	}()

	report := &Report{
		Target:        t.description,
		APIServer:     t.rest.Host,
		EtcdEndpoints: cfg.EtcdEndpoints,
		Requests:      cfg.Requests,
		ListObjects:   cfg.ListObjects,
		PayloadBytes:  cfg.PayloadBytes,
		StoredBytes:   len(e.storedValue),
		Client:        "client-go typed clientset, one per pool (one HTTP/2 connection), no client-side rate limit, JSON",
	}
	if cfg.Requests == 0 {
		report.PhaseSeconds = cfg.Duration.Seconds()
	}
	for _, op := range e.operations() {
		for _, clients := range cfg.Concurrency {
			workers, release, err := op.prepare(ctx, clients)
			if err != nil {
				return fmt.Errorf("%s, %d clients: prepare: %w", op.name, clients, err)
			}
			res := runPhase(ctx, workers, cfg.Duration, cfg.Requests)
			release()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r := res.result(op.name, clients)
			report.Results = append(report.Results, r)
			fmt.Fprintf(cfg.Progress, "%-9s clients=%-3d %9.0f ops/s  p50 %-8s p99 %-8s errors %d\n",
				r.Operation, r.Clients, r.OpsPerSec, formatLatency(r.P50Ms), formatLatency(r.P99Ms), r.Errors)
			if res.firstErr != nil {
				if res.ops == 0 {
					return fmt.Errorf("%s, %d clients: every request failed: %w", op.name, clients, res.firstErr)
				}
				fmt.Fprintf(cfg.Progress, "  %d errors, the first: %v\n", res.errors, res.firstErr)
			}
		}
	}
	report.computeRatios()
	if cfg.JSON {
		return report.WriteJSON(w)
	}
	return report.WriteTable(w)
}

// target is the cluster measured: its client config and how to let it go.
type target struct {
	rest        *rest.Config
	description string
	// ephemeral: the in-process control plane on a temporary data dir,
	// thrown away at the end, so nothing needs cleaning up.
	ephemeral bool
	close     func() error
}

func openTarget(ctx context.Context, cfg *Config) (*target, error) {
	if cfg.Kubeconfig != "" {
		rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
		return &target{rest: rc, description: "cluster of " + cfg.Kubeconfig, close: func() error { return nil }}, nil
	}

	dataDir, ephemeral := cfg.DataDir, false
	if dataDir == "" {
		d, err := os.MkdirTemp("", "minik8s-bench-")
		if err != nil {
			return nil, err
		}
		dataDir, ephemeral = d, true
	}
	removeDir := func() error {
		if ephemeral {
			return os.RemoveAll(dataDir)
		}
		return nil
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cp, stopCP, err := controlplane.Start(ctx, controlplane.Config{DataDir: dataDir, BindAddress: "127.0.0.1", Port: 0, Logger: log})
	if err != nil {
		_ = removeDir()
		return nil, fmt.Errorf("in-process %w", err)
	}
	stop := func() error {
		err := stopCP()
		if rerr := removeDir(); err == nil {
			err = rerr
		}
		return err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cp.KubeconfigPath)
	if err != nil {
		_ = stop()
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	if len(cfg.EtcdEndpoints) == 0 && cp.EtcdEndpoint != "" {
		cfg.EtcdEndpoints = []string{cp.EtcdEndpoint}
	}
	description := "in-process control plane, embedded etcd, data dir " + dataDir
	if ephemeral {
		description = "in-process control plane, embedded etcd, temporary data dir " + dataDir
	}
	return &target{
		rest:        rc,
		description: description,
		ephemeral:   ephemeral,
		close:       stop,
	}, nil
}
