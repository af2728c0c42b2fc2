package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/minik8s/minik8s/pkg/bench"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime/daemon"
)

func benchCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Measure a running or in-process cluster"}
	cmd.AddCommand(benchAPICommand(), benchSchedulerCommand(), benchPodsCommand(), benchFunctionsCommand(), benchWorkflowsCommand(), benchStorageCommand())
	return cmd
}

type benchAPIFlags struct {
	kubeconfig    string
	etcdEndpoints []string
	dataDir       string
	concurrency   []int
	duration      time.Duration
	requests      int
	listObjects   int
	payloadBytes  int
	json          bool
	quiet         bool
}

func benchAPICommand() *cobra.Command {
	f := &benchAPIFlags{}
	cmd := &cobra.Command{
		Use:   "api",
		Short: "API throughput and latency (create, get, list, update), against raw etcd puts",
		Long: `Measures creates, gets, lists and updates of ConfigMaps through the apiserver,
and puts straight to the etcd underneath, at each concurrency: ops/s, p50 and p99.
By default on a control plane started in-process on a temporary data dir;
with --kubeconfig on a running cluster (etcd measured only with --etcd-endpoints).
A benchmark: it prints figures, it does not judge them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := bench.Config{
				Kubeconfig: f.kubeconfig, EtcdEndpoints: f.etcdEndpoints, DataDir: f.dataDir,
				Concurrency: f.concurrency, Duration: f.duration, Requests: f.requests,
				ListObjects: f.listObjects, PayloadBytes: f.payloadBytes, JSON: f.json,
			}
			if !f.quiet {
				cfg.Progress = os.Stderr
			}
			return bench.Run(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "measure the cluster of this kubeconfig instead of an in-process control plane")
	fl.StringSliceVar(&f.etcdEndpoints, "etcd-endpoints", nil, "etcd client URLs to compare against (default: the in-process control plane's embedded etcd)")
	fl.StringVar(&f.dataDir, "data-dir", "", "data dir of the in-process control plane (default: a temporary one, removed afterwards)")
	fl.IntSliceVar(&f.concurrency, "concurrency", bench.DefaultConcurrency, "numbers of concurrent clients, one phase each")
	fl.DurationVar(&f.duration, "duration", bench.DefaultDuration, "duration of each phase")
	fl.IntVar(&f.requests, "requests", 0, "requests per phase, shared by its clients (replaces --duration)")
	fl.IntVar(&f.listObjects, "list-objects", bench.DefaultListObjects, "ConfigMaps in the listed namespace")
	fl.IntVar(&f.payloadBytes, "payload-bytes", bench.DefaultPayloadBytes, "size of each ConfigMap's data")
	fl.BoolVar(&f.json, "json", false, "write the report as JSON")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}

type benchPodsFlags struct {
	pods        int
	concurrency int
	image       string
	ctrRuns     int
	containerd  string
	podTimeout  time.Duration
	json        bool
	quiet       bool
}

func benchPodsCommand() *cobra.Command {
	f := &benchPodsFlags{}
	cmd := &cobra.Command{
		Use:   "pods",
		Short: "Pod startup latency (create -> Running, image present) against a bare container start (as root)",
		Long: `Starts a control plane in-process and one node in a network namespace of its
own on this machine's containerd, then creates --pods pods (after one warm-up
pod), --concurrency at a time, each running the image's sleep 3600, and times
each from its Create call to the watch event that shows it Running and Ready.
For comparison it starts the same image as many times straight on containerd
with its Go client (what ctr run -d does) in a temporary containerd namespace,
and runs the ctr binary a few times when it is on PATH.
Prints p50, p90, p99, max, starts per second, and the ratios to the bare start.
Everything it creates is removed at the end. Needs root.
A benchmark: it prints figures, it does not judge them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := bench.PodsConfig{
				Pods: f.pods, Concurrency: f.concurrency, Image: f.image, CtrRuns: f.ctrRuns,
				ContainerdAddress: f.containerd, PodTimeout: f.podTimeout, JSON: f.json,
			}
			if f.ctrRuns <= 0 {
				cfg.CtrRuns = -1 // PodsConfig's zero is the default
			}
			if !f.quiet {
				cfg.Progress = os.Stderr
			}
			return bench.RunPods(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.pods, "pods", bench.DefaultPods, "pods measured (and bare containers started), after one warm-up")
	fl.IntVar(&f.concurrency, "concurrency", 1, "pods created and started at once")
	fl.StringVar(&f.image, "image", bench.DefaultPodsImage, "the pods' image; it must be present in containerd's minik8s namespace")
	fl.IntVar(&f.ctrRuns, "ctr-runs", bench.DefaultCtrRuns, "times the ctr binary is run, when on PATH (0: never)")
	fl.StringVar(&f.containerd, "containerd", daemon.DefaultAddress, "containerd socket (one is started when none answers)")
	fl.DurationVar(&f.podTimeout, "pod-timeout", bench.DefaultPodTimeout, "how long a pod may take to be Running and Ready")
	fl.BoolVar(&f.json, "json", false, "write the report as JSON")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}

type benchFunctionsFlags struct {
	cold        int
	coldPull    int
	warm        int
	concurrency int
	duration    time.Duration
	nodes       int
	containerd  string
	json        bool
	quiet       bool
}

func benchFunctionsCommand() *cobra.Command {
	f := &benchFunctionsFlags{}
	cmd := &cobra.Command{
		Use:   "functions",
		Short: "Function cold start (image present and pulled), warm latency, requests/s and scale-up from zero (as root)",
		Long: `Starts a control plane in-process, --nodes nodes in network namespaces of their
own on this machine's containerd, the registry on a free loopback port and the
functions add-on with its router in the first node's namespace (autoscaler tick
500ms, stable window 6s), then deploys a one-line Python function (target 4,
scaleToZeroAfter 1s) and calls the router straight from that namespace:
  - --cold cold starts with the image on the node: each waits until the function
    has no pod left, then times one request; and where the time goes (scale,
    pod created, scheduled, container running, response, Ready);
  - --cold-pull cold starts with the image deleted from containerd first;
  - the time from zero to ceil(concurrency/4) Ready instances under
    --concurrency clients;
  - --warm sequential requests with minScale 1;
  - requests/s of --concurrency clients for --duration.
Prints p50, p90, p99, max, the issue's targets and the ratios to them.
Everything it creates is removed at the end. Needs root, the registry binary and
the function runtimes (make deps).
A benchmark: it prints figures, it does not judge them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := bench.FunctionsConfig{
				Cold: f.cold, ColdPull: f.coldPull, Warm: f.warm, Concurrency: f.concurrency, Duration: f.duration,
				Nodes: f.nodes, ContainerdAddress: f.containerd, JSON: f.json,
			}
			if f.coldPull <= 0 {
				cfg.ColdPull = -1 // FunctionsConfig's zero is the default
			}
			if !f.quiet {
				cfg.Progress = os.Stderr
			}
			return bench.RunFunctions(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.cold, "cold", bench.DefaultFunctionsCold, "cold starts timed with the image on the node")
	fl.IntVar(&f.coldPull, "cold-pull", bench.DefaultFunctionsColdPull, "cold starts timed with the image deleted from the node first (0: none)")
	fl.IntVar(&f.warm, "warm", bench.DefaultFunctionsWarm, "sequential requests timed on a running instance")
	fl.IntVar(&f.concurrency, "concurrency", bench.DefaultFunctionsConcurrency, "clients of the throughput and scale-up phases")
	fl.DurationVar(&f.duration, "duration", bench.DefaultFunctionsDuration, "duration of the throughput phase")
	fl.IntVar(&f.nodes, "nodes", 1, "nodes of the cluster")
	fl.StringVar(&f.containerd, "containerd", daemon.DefaultAddress, "containerd socket (one is started when none answers)")
	fl.BoolVar(&f.json, "json", false, "write the report as JSON")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}

type benchWorkflowsFlags struct {
	runs        int
	calls       int
	concurrency int
	duration    time.Duration
	containerd  string
	json        bool
	quiet       bool
}

func benchWorkflowsCommand() *cobra.Command {
	f := &benchWorkflowsFlags{}
	cmd := &cobra.Command{
		Use:   "workflows",
		Short: "Workflow engine overhead per Pass and Task state, and runs/s (as root)",
		Long: `Starts the cluster of bench functions (a control plane in-process, whose
controller manager runs the workflow engine, a node in a network namespace of
its own, the registry and the functions add-on), deploys a Python function that
returns its input (minScale 1) and three workflows, then measures:
  - --runs runs of a chain of 20 Pass states, one after the other: the time per
    state from the run's history (first state entered to last exited, over 20),
    and each run from its Create call to the watch event showing it Succeeded;
  - the function alone, --calls sequential calls through the router, the way
    the engine calls it;
  - --runs runs of a chain of 20 Task states calling the function, timed the
    same way; a Task state's overhead is its time less the function's;
  - runs/s of Pass -> Task -> Pass under --concurrency clients for --duration,
    each creating a run and waiting for its end, then the next.
Prints p50, p90, p99, max, the targets (a Pass state under 5ms, a Task state
within 10ms of the function's warm latency) and the ratios to them.
Everything it creates is removed at the end. Needs root, the registry binary and
the function runtimes (make deps).
A benchmark: it prints figures, it does not judge them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := bench.WorkflowsConfig{
				Runs: f.runs, Calls: f.calls, Concurrency: f.concurrency, Duration: f.duration,
				ContainerdAddress: f.containerd, JSON: f.json,
			}
			if !f.quiet {
				cfg.Progress = os.Stderr
			}
			return bench.RunWorkflows(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.runs, "runs", bench.DefaultWorkflowsRuns, "runs timed of each chain (20 Pass states, 20 Task states), one after the other")
	fl.IntVar(&f.calls, "calls", bench.DefaultWorkflowsCalls, "sequential calls timing the function alone")
	fl.IntVar(&f.concurrency, "concurrency", bench.DefaultWorkflowsConcurrency, "clients of the runs/s phase")
	fl.DurationVar(&f.duration, "duration", bench.DefaultWorkflowsDuration, "duration of the runs/s phase")
	fl.StringVar(&f.containerd, "containerd", daemon.DefaultAddress, "containerd socket (one is started when none answers)")
	fl.BoolVar(&f.json, "json", false, "write the report as JSON")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}

type benchStorageFlags struct {
	sizeMiB    int
	files      int
	runs       int
	dir        string
	containerd string
	podTimeout time.Duration
	json       bool
	quiet      bool
}

func benchStorageCommand() *cobra.Command {
	f := &benchStorageFlags{}
	cmd := &cobra.Command{
		Use:   "storage",
		Short: "Sequential write/read MB/s and small-file ops/s in a pod on each volume type, against the node's disk (as root)",
		Long: `Starts a control plane in-process and one node in a network namespace of its
own on this machine's containerd, its root dir in --dir, then runs the same
busybox script (this machine's static busybox, which the pods' busybox image is
built from) --runs times in each place:
  - on the node's disk, straight from the host, in a directory of the node's
    root dir, next to where local-path puts volumes;
  - in a pod, on an emptyDir;
  - in a pod, on a static hostPath PersistentVolume (Retain) and its claim;
  - in a pod, on a claim of the default StorageClass local-path
    (provisioned on the node when the pod is scheduled, deleted with the claim);
  - in a pod, on a ReadWriteMany claim of the StorageClass shared: GlusterFS,
    run for the benchmark with its brick in --dir and mounted on the node with
    FUSE (left out, saying why, when GlusterFS is not installed).
Each run writes --size-mib MiB (dd bs=1M conv=fsync), reads them back (dd bs=1M
with O_DIRECT, where the filesystem has it, else through the page cache), and
creates, stats and removes --files files of 4 KiB (3 operations a file).
Prints, for each place, the medians of write MB/s, read MB/s and small-file
ops/s, and each as a ratio to the node's disk.
Everything it creates is removed at the end: pods, claims, volumes and their
directories, the GlusterFS server and mounts, node, control plane, network
namespace. Needs root.
A benchmark: it prints figures, it does not judge them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := bench.StorageConfig{
				SizeMiB: f.sizeMiB, Files: f.files, Runs: f.runs, Dir: f.dir,
				ContainerdAddress: f.containerd, PodTimeout: f.podTimeout, JSON: f.json,
			}
			if !f.quiet {
				cfg.Progress = os.Stderr
			}
			return bench.RunStorage(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.sizeMiB, "size-mib", bench.DefaultStorageSizeMiB, "MiB written and read back sequentially in each run")
	fl.IntVar(&f.files, "files", bench.DefaultStorageFiles, "small files (4 KiB) created, stat'ed and removed in each run")
	fl.IntVar(&f.runs, "runs", bench.DefaultStorageRuns, fmt.Sprintf("runs in each place; the report gives the median (at most %d)", bench.MaxStorageRuns))
	fl.StringVar(&f.dir, "dir", os.TempDir(), "where the node's root dir and GlusterFS's directory are made: its filesystem is the one measured")
	fl.StringVar(&f.containerd, "containerd", daemon.DefaultAddress, "containerd socket (one is started when none answers)")
	fl.DurationVar(&f.podTimeout, "pod-timeout", bench.DefaultStoragePodTimeout, "how long each pod may take, from its creation to its end")
	fl.BoolVar(&f.json, "json", false, "write the report as JSON")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}
