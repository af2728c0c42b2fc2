package cli

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/minik8s/minik8s/pkg/bench"
)

func benchCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Measure a running or in-process cluster"}
	cmd.AddCommand(benchAPICommand(), benchSchedulerCommand())
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
