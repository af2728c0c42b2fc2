package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/containerd/containerd"

	"github.com/minik8s/minik8s/pkg/image"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime/daemon"
	"github.com/minik8s/minik8s/pkg/serverless/pyruntime"
	"github.com/minik8s/minik8s/pkg/serverless/registry"
)

// nodeEnvConfig says what a benchmark that runs nodes of its own (bench
// pods, functions, workflows) needs before it starts them.
type nodeEnvConfig struct {
	// bench names the benchmark in messages and in its log file's name
	// ("functions").
	bench string
	// needsRoot says what needs root, after "it runs ".
	needsRoot string
	// functions: the benchmark also needs the registry and the function
	// runtimes.
	functions bool
	// logLabel names the log in the error of a failed run ("cluster log").
	logLabel string
	// containerdAddress is containerd's socket; one is started when none
	// answers, and stopped at the end.
	containerdAddress string
	// cleanupTimeout bounds each clean-up step, which runs even when the
	// run's context is cancelled (Ctrl-C).
	cleanupTimeout time.Duration
	progress       io.Writer
}

// nodeEnv is what such a benchmark runs on: a random id for the names of
// what it creates, one log for the control plane and the nodes (kept when
// the run fails), and containerd with the built-in images. What the run
// creates on it is registered with onClose and removed by close, last
// first.
type nodeEnv struct {
	id       string
	log      *slog.Logger
	address  string // containerd's socket
	client   *containerd.Client
	progress io.Writer

	logFile        *os.File
	logLabel       string
	cleanupBase    context.Context // the run's context, without its cancellation
	cleanupTimeout time.Duration
	cleanups       []func(context.Context) error
}

// newNodeEnv checks what the benchmark needs, then opens the log and
// makes sure containerd runs. On error, what it did is undone.
func newNodeEnv(ctx context.Context, cfg nodeEnvConfig) (_ *nodeEnv, err error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("bench %s needs root: it runs %s; run it with sudo", cfg.bench, cfg.needsRoot)
	}
	if cfg.functions {
		if _, err := registry.FindBinary(); err != nil {
			return nil, fmt.Errorf("bench %s needs the registry: %w", cfg.bench, err)
		}
		if _, err := pyruntime.BaseTarball(benchRuntime); err != nil {
			return nil, fmt.Errorf("bench %s needs the function runtimes: %w", cfg.bench, err)
		}
	}
	if err := checkNodeTools(cfg.bench); err != nil {
		return nil, err
	}
	id, err := randomID()
	if err != nil {
		return nil, err
	}

	logFile, err := os.CreateTemp("", "minik8s-bench-"+cfg.bench+"-*.log")
	if err != nil {
		return nil, err
	}
	e := &nodeEnv{
		id:             id,
		log:            slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo})),
		progress:       cfg.progress,
		logFile:        logFile,
		logLabel:       cfg.logLabel,
		cleanupBase:    context.WithoutCancel(ctx),
		cleanupTimeout: cfg.cleanupTimeout,
	}
	defer func() {
		if err != nil {
			err = e.close(err)
		}
	}()

	d, err := daemon.Ensure(ctx, daemon.Config{Address: cfg.containerdAddress})
	if err != nil {
		return nil, fmt.Errorf("containerd: %w", err)
	}
	e.address = d.Address
	if d.Started {
		fmt.Fprintf(e.progress, "started containerd on %s (stopped at the end)\n", d.Address)
		e.onClose(d.Stop)
	}
	if err := image.EnsureBuiltin(ctx, d.Address); err != nil {
		return nil, err
	}
	if e.client, err = containerd.New(d.Address); err != nil {
		return nil, fmt.Errorf("containerd at %s: %w", d.Address, err)
	}
	e.onClose(func(context.Context) error {
		_ = e.client.Close()
		return nil
	})
	return e, nil
}

// onClose registers a clean-up step; close runs them last first.
func (e *nodeEnv) onClose(f func(context.Context) error) {
	e.cleanups = append(e.cleanups, f)
}

// close runs the clean-up steps, each with a context of its own that the
// run's cancellation does not end, and returns err joined with their
// errors. A failed run keeps its log and says where it is.
func (e *nodeEnv) close(err error) error {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		ctx, cancel := context.WithTimeout(e.cleanupBase, e.cleanupTimeout)
		err = errors.Join(err, e.cleanups[i](ctx))
		cancel()
	}
	e.cleanups = nil
	_ = e.logFile.Close()
	if err != nil {
		return fmt.Errorf("%w (%s: %s)", err, e.logLabel, e.logFile.Name())
	}
	_ = os.Remove(e.logFile.Name())
	return nil
}

// startFnCluster starts the cluster of bench functions and workflows (see
// startFnCluster) with the given number of nodes, and registers its close;
// cleaning lists what that removes, for the progress line.
func (e *nodeEnv) startFnCluster(ctx context.Context, nodes int, cleaning string) (*fnCluster, error) {
	c, err := startFnCluster(ctx, e.address, e.id, nodes, e.log)
	if c != nil {
		e.onClose(func(ctx context.Context) error {
			fmt.Fprintf(e.progress, "cleaning up: %s\n", cleaning)
			return c.close(ctx, e.client)
		})
	}
	if err != nil {
		return nil, err
	}
	c.containerd = e.client
	return c, nil
}
