package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/minik8s/minik8s/pkg/kubelet/runtime/daemon"
)

// FunctionsConfig is what `minik8s bench functions` measures and how.
type FunctionsConfig struct {
	// Cold is how many cold starts are timed with the image on the node
	// (default 10).
	Cold int
	// ColdPull is how many cold starts are timed with the image deleted
	// from the node first (default 3; negative: none).
	ColdPull int
	// Warm is how many sequential requests are timed on a running
	// instance (default 500).
	Warm int
	// Concurrency is the number of clients of the throughput and the
	// scale-up phases (default 20).
	Concurrency int
	// Duration is how long the throughput phase runs (default 10s).
	Duration time.Duration
	// Nodes is how many nodes the cluster has (default 1).
	Nodes int
	// ContainerdAddress is containerd's socket (default
	// /run/containerd/containerd.sock); one is started when none answers.
	ContainerdAddress string
	// JSON writes the report as JSON instead of a table.
	JSON bool
	// Progress, when set, gets a line per step.
	Progress io.Writer
}

// Defaults for the zero fields of FunctionsConfig.
const (
	DefaultFunctionsCold        = 10
	DefaultFunctionsColdPull    = 3
	DefaultFunctionsWarm        = 500
	DefaultFunctionsConcurrency = 20
	DefaultFunctionsDuration    = 10 * time.Second
)

// The function measured and how it scales: short autoscaler windows and
// idle time, so that cold start cycles are quick.
const (
	benchFunction         = "bench"
	benchRuntime          = "python3"
	benchTarget           = 4
	benchMaxScale         = 10
	benchScaleToZeroAfter = time.Second
	benchTick             = 500 * time.Millisecond
	benchStableWindow     = 6 * time.Second
	benchCode             = "def handle(event):\n    return {\"greeting\": \"hello \" + str(event.get(\"name\", \"world\"))}\n"
	benchBody             = `{"name":"bench"}`
	benchAnswer           = `"hello bench"`
)

// Targets of issue 11 for a cold start with the image on the node.
const (
	ColdTargetP50 = 500 * time.Millisecond
	ColdTargetP99 = time.Second
)

func (c *FunctionsConfig) complete() error {
	if c.Cold < 0 || c.Warm < 0 || c.Concurrency < 0 || c.Duration < 0 || c.Nodes < 0 {
		return errors.New("cold, warm, concurrency, duration and nodes must not be negative")
	}
	if c.Cold == 0 {
		c.Cold = DefaultFunctionsCold
	}
	if c.ColdPull == 0 {
		c.ColdPull = DefaultFunctionsColdPull
	}
	c.ColdPull = max(c.ColdPull, 0)
	if c.Warm == 0 {
		c.Warm = DefaultFunctionsWarm
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultFunctionsConcurrency
	}
	if c.Duration == 0 {
		c.Duration = DefaultFunctionsDuration
	}
	if c.Nodes == 0 {
		c.Nodes = 1
	}
	if c.Nodes > 8 {
		return fmt.Errorf("at most 8 nodes, got %d", c.Nodes)
	}
	if c.ContainerdAddress == "" {
		c.ContainerdAddress = daemon.DefaultAddress
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return nil
}

// RunFunctions measures the functions add-on on a cluster of its own and
// writes the report to w. Everything it creates (control plane, nodes,
// network namespaces, LAN bridge, registry, pods, containers, the images
// its nodes pulled) is removed before it returns.
func RunFunctions(ctx context.Context, cfg FunctionsConfig, w io.Writer) (err error) {
	if err := cfg.complete(); err != nil {
		return err
	}
	e, err := newNodeEnv(ctx, nodeEnvConfig{
		bench: "functions", needsRoot: "nodes (containerd, runc, cgroups, network namespaces, iptables)", functions: true,
		logLabel: "cluster log", containerdAddress: cfg.ContainerdAddress, cleanupTimeout: 4 * time.Minute, progress: cfg.Progress,
	})
	if err != nil {
		return err
	}
	defer func() { err = e.close(err) }()

	// The function's base layer, of this run only.
	rtDir, err := os.MkdirTemp("", "minik8s-bench-functions-runtime-")
	if err != nil {
		return err
	}
	e.onClose(func(context.Context) error { return os.RemoveAll(rtDir) })
	restore, err := uniqueRuntime(rtDir, benchRuntime, e.id)
	if err != nil {
		return fmt.Errorf("runtime %s for this run: %w", benchRuntime, err)
	}
	e.onClose(func(context.Context) error { restore(); return nil })

	fmt.Fprintf(cfg.Progress, "starting a control plane, %d node(s), the registry and the functions add-on\n", cfg.Nodes)
	c, err := e.startFnCluster(ctx, cfg.Nodes, "function, pods, nodes, registry, control plane, network namespaces, pulled images")
	if err != nil {
		return err
	}

	report := &FunctionsReport{
		Nodes: c.describeNodes(), Registry: c.regAddr, Runtime: benchRuntime + " (with a file of this run's own, so its layers are shared with no other image)", Function: "default/" + benchFunction,
		Scale: fmt.Sprintf("target %d in flight per instance, maxScale %d, scaleToZeroAfter %s; autoscaler tick %s, stable window %s, panic window %s",
			benchTarget, benchMaxScale, benchScaleToZeroAfter, benchTick, benchStableWindow, benchStableWindow/10),
		Client: fmt.Sprintf("Go net/http in %s's network namespace, straight to the router at %s (no nginx)", c.nodes[0].name, c.routerURL),
		Targets: Targets{ColdP50Ms: ms(ColdTargetP50), ColdP99Ms: ms(ColdTargetP99),
			Published: "Knative 2-4s, OpenFaaS 1-2s"},
	}
	if err := c.measureAll(ctx, cfg, report); err != nil {
		return err
	}
	report.computeRatios()
	if cfg.JSON {
		return report.WriteJSON(w)
	}
	return report.WriteTable(w)
}
