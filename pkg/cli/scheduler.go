package cli

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minik8s/minik8s/pkg/controlplane"
	"github.com/minik8s/minik8s/pkg/scheduler"
)

type schedulerFlags struct {
	kubeconfig    string
	config        string
	leaderElect   bool
	schedulerName string
}

func schedulerCommand() *cobra.Command {
	f := &schedulerFlags{}
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Run a scheduler against a cluster (minik8s server already runs one)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := scheduler.Config{}
			if f.config != "" {
				var err error
				if cfg, err = scheduler.LoadConfig(f.config); err != nil {
					return err
				}
			}
			rc, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
			if err != nil {
				return fmt.Errorf("kubeconfig: %w", err)
			}
			rc.QPS, rc.Burst, rc.UserAgent = 500, 1000, "minik8s-scheduler"
			if cfg.Client, err = kubernetes.NewForConfig(rc); err != nil {
				return err
			}
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
			cfg.LeaderElection.Enabled = f.leaderElect
			if f.schedulerName != "" {
				cfg.SchedulerName = f.schedulerName
			}
			s, err := scheduler.New(cfg)
			if err != nil {
				return err
			}
			return s.Start(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	cmd.Flags().StringVar(&f.config, "config", "", "scheduler config file (YAML or JSON; see pkg/scheduler)")
	cmd.Flags().BoolVar(&f.leaderElect, "leader-elect", true, "take the kube-system/minik8s-scheduler Lease before scheduling")
	cmd.Flags().StringVar(&f.schedulerName, "scheduler-name", "", "schedule pods with this spec.schedulerName (default default-scheduler)")
	return cmd
}

type benchSchedulerFlags struct {
	kubeconfig string
	nodes      []int
	pods       int
}

func benchSchedulerCommand() *cobra.Command {
	f := &benchSchedulerFlags{}
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Pods scheduled per second with N fake nodes (API objects without kubelets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			kubeconfig := f.kubeconfig
			if kubeconfig == "" {
				dir, err := os.MkdirTemp("", "minik8s-bench-scheduler-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				cp, stop, err := controlplane.Start(cmd.Context(), controlplane.Config{DataDir: dir, BindAddress: "127.0.0.1"})
				if err != nil {
					return err
				}
				defer func() { _ = stop() }()
				kubeconfig = cp.KubeconfigPath
			}
			rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return err
			}
			rc.QPS = -1
			client, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return err
			}
			for _, n := range f.nodes {
				if err := scheduler.Bench(cmd.Context(), client, n, f.pods, cmd.OutOrStdout()); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "measure this cluster instead of an in-process control plane")
	cmd.Flags().IntSliceVar(&f.nodes, "nodes", []int{100, 1000}, "node counts, one run each")
	cmd.Flags().IntVar(&f.pods, "pods", 1000, "pods per run")
	return cmd
}
