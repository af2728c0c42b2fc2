package cli

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minik8s/minik8s/pkg/controllermanager"
	"github.com/minik8s/minik8s/pkg/controlplane"
	"github.com/minik8s/minik8s/pkg/pki"
)

type controllerManagerFlags struct {
	kubeconfig         string
	pkiDir             string
	clusterCIDR        string
	disable            []string
	leaderElect        bool
	accountCredentials bool
}

func controllerManagerCommand() *cobra.Command {
	f := &controllerManagerFlags{}
	cmd := &cobra.Command{
		Use:   "controller-manager",
		Short: "Run the controllers against a cluster (minik8s server already runs them)",
		Long: "Runs the built-in controllers (" + strings.Join(controllermanager.Names(), ", ") + `)
while it holds the kube-system/` + controllermanager.LeaseName + ` Lease, so several may run and one acts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rc, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
			if err != nil {
				return fmt.Errorf("kubeconfig: %w", err)
			}
			rc.QPS, rc.Burst = 100, 200
			cfg := controllermanager.Config{
				REST: rc, ClusterCIDR: f.clusterCIDR, Disable: f.disable, LeaderElection: f.leaderElect,
				ServiceAccountCredentials: f.accountCredentials,
				Logger:                    slog.New(slog.NewTextHandler(os.Stderr, nil)),
			}
			if f.pkiDir != "" {
				b, err := pki.Ensure(pki.Config{Dir: f.pkiDir})
				if err != nil {
					return fmt.Errorf("cluster CA: %w", err)
				}
				cfg.CA = b
			}
			return controllermanager.Run(cmd.Context(), cfg)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	fl.StringVar(&f.pkiDir, "pki-dir", "", "the server's PKI directory (<data-dir>/pki): signs approved node certificates (csrsigning runs only with it)")
	fl.StringVar(&f.clusterCIDR, "cluster-cidr", controlplane.DefaultClusterCIDR, "pod IP range, one /24 per node")
	fl.StringSliceVar(&f.disable, "disable", nil, "controllers not to run")
	fl.BoolVar(&f.accountCredentials, "use-service-account-credentials", true,
		"run each controller as its own service account in kube-system, authorized by its role system:controller:<account>")
	fl.BoolVar(&f.leaderElect, "leader-elect", true, "take the kube-system/"+controllermanager.LeaseName+" Lease before acting")
	return cmd
}
