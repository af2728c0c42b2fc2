package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/minik8s/minik8s/pkg/kubelet/runtime/daemon"
)

// WorkflowsConfig is what `minik8s bench workflows` measures and how.
type WorkflowsConfig struct {
	// Runs is how many runs of each chain (20 Pass states, 20 Task
	// states) are timed, one after the other (default 50).
	Runs int
	// Calls is how many sequential calls time the function alone through
	// the router (default 200).
	Calls int
	// Concurrency is the number of clients of the throughput phase
	// (default 20).
	Concurrency int
	// Duration is how long the throughput phase runs (default 20s).
	Duration time.Duration
	// ContainerdAddress is containerd's socket (default
	// /run/containerd/containerd.sock); one is started when none answers.
	ContainerdAddress string
	// JSON writes the report as JSON instead of a table.
	JSON bool
	// Progress, when set, gets a line per step.
	Progress io.Writer
}

// Defaults for the zero fields of WorkflowsConfig.
const (
	DefaultWorkflowsRuns        = 50
	DefaultWorkflowsCalls       = 200
	DefaultWorkflowsConcurrency = 20
	DefaultWorkflowsDuration    = 20 * time.Second
)

// Targets for the engine's overhead.
const (
	// PassTransitionTarget bounds the time per Pass state of a chain.
	PassTransitionTarget = 5 * time.Millisecond
	// TaskOverheadTarget bounds a Task state's time beyond its function's
	// own warm latency.
	TaskOverheadTarget = 10 * time.Millisecond
)

// wfChainLength is the number of states of the Pass and Task chains.
const wfChainLength = 20

func (c *WorkflowsConfig) complete() error {
	if c.Runs < 0 || c.Calls < 0 || c.Concurrency < 0 || c.Duration < 0 {
		return errors.New("runs, calls, concurrency and duration must not be negative")
	}
	if c.Runs == 0 {
		c.Runs = DefaultWorkflowsRuns
	}
	if c.Calls == 0 {
		c.Calls = DefaultWorkflowsCalls
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultWorkflowsConcurrency
	}
	if c.Duration == 0 {
		c.Duration = DefaultWorkflowsDuration
	}
	if c.ContainerdAddress == "" {
		c.ContainerdAddress = daemon.DefaultAddress
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return nil
}

// RunWorkflows measures the workflow engine on a cluster of its own (the
// one `bench functions` builds: an in-process control plane, whose
// controller manager runs the engine, one node in a network namespace on
// a LAN bridge, the registry and the functions add-on) and writes the
// report to w:
//   - a chain of 20 Pass states, cfg.Runs runs one after the other: the
//     time per state from the run's history (first state entered to last
//     state exited, over 20), and each run from its Create call to the
//     watch event showing it Succeeded;
//   - a chain of 20 Task states calling one warm Python function that
//     returns its input, timed the same way, against the function alone
//     called cfg.Calls times through the router on the engine's path;
//   - runs/s of Pass -> Task -> Pass under cfg.Concurrency clients, each
//     creating a run and waiting for its end, for cfg.Duration.
//
// Everything it creates is removed before it returns.
func RunWorkflows(ctx context.Context, cfg WorkflowsConfig, w io.Writer) (err error) {
	if err := cfg.complete(); err != nil {
		return err
	}
	e, err := newNodeEnv(ctx, nodeEnvConfig{
		bench: "workflows", needsRoot: "a node (containerd, runc, cgroups, network namespaces, iptables)", functions: true,
		logLabel: "cluster log", containerdAddress: cfg.ContainerdAddress, cleanupTimeout: 4 * time.Minute, progress: cfg.Progress,
	})
	if err != nil {
		return err
	}
	defer func() { err = e.close(err) }()

	fmt.Fprintf(cfg.Progress, "starting a control plane (with the workflow engine), a node, the registry and the functions add-on\n")
	c, err := e.startFnCluster(ctx, 1, "function, pods, node, registry, control plane, network namespace, pulled images")
	if err != nil {
		return err
	}
	gateway, err := addLANGateway(c)
	if err != nil {
		return err
	}

	wc, err := newWfCluster(ctx, c)
	if err != nil {
		return err
	}
	defer wc.stop()
	report := &WorkflowsReport{
		Nodes:       c.describeNodes(),
		Engine:      "the controller manager's workflowrun controller, in the in-process control plane (embedded etcd)",
		Function:    fmt.Sprintf("default/%s, %s, returns its input; minScale 1, maxScale %d, target %d in flight per instance", benchFunction, benchRuntime, benchMaxScale, benchTarget),
		Client:      fmt.Sprintf("client-go dynamic client from the host; runs seen Succeeded on a watch; the function alone called like the engine calls it, from the host (LAN address %s) to the router's Endpoints", gateway),
		ChainLength: wfChainLength,
		Targets:     WorkflowsTargets{PassTransitionMs: ms(PassTransitionTarget), TaskOverheadMs: ms(TaskOverheadTarget)},
	}
	if err := wc.measureAll(ctx, cfg, report); err != nil {
		return err
	}
	report.computeRatios()
	if cfg.JSON {
		return report.WriteJSON(w)
	}
	return report.WriteTable(w)
}

// addLANGateway gives the host an address on the cluster's LAN bridge
// (.254 of the nodes' /24), so that the controller manager, in the host's
// namespace, reaches the function router at the first node's address, as
// its Endpoints say. The address goes with the bridge when close removes
// it.
func addLANGateway(c *fnCluster) (net.IP, error) {
	br, err := netlink.LinkByName(c.bridge)
	if err != nil {
		return nil, fmt.Errorf("LAN bridge %s: %w", c.bridge, err)
	}
	ip := c.nodes[0].ip.As4()
	ip[3] = 254
	gw := net.IP(ip[:])
	if err := netlink.AddrAdd(br, &netlink.Addr{IPNet: &net.IPNet{IP: gw, Mask: net.CIDRMask(24, 32)}}); err != nil {
		return nil, fmt.Errorf("host address %s on the LAN bridge %s: %w", gw, c.bridge, err)
	}
	return gw, nil
}
