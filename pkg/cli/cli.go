package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/minik8s/minik8s/pkg/apiserver"
	"github.com/minik8s/minik8s/pkg/controlplane"
	"github.com/minik8s/minik8s/pkg/kubectl"
)

// Run executes the minik8s command line.
func Run(ctx context.Context, args []string) error {
	root := &cobra.Command{
		Use:           "minik8s",
		Short:         "A small, real Kubernetes in one binary",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(serverCommand(), upCommand(), agentCommand(), tokenCommand(), kubeconfigCommand(), imageCommand(), schedulerCommand(), controllerManagerCommand(), kubectlCommand(), proxyCommand(), benchCommand(), versionCommand())
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

type serverFlags struct {
	dataDir     string
	bindAddress string
	port        int
	etcdServers []string
	hosts       []string
	clusterCIDR string
	serviceCIDR string
	verbose     bool
	auditLog    string
	auditPolicy string
	auditMaxMB  int

	advertiseAddress string
}

// advertiseAddress is where the apiserver says it is reached (the
// endpoint of default/kubernetes): flag, else the bind address when it
// names one, else the host's first non-loopback IPv4 address, else
// loopback.
func advertiseAddress(flag, bind string) (netip.Addr, error) {
	if flag != "" {
		a, err := netip.ParseAddr(flag)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("--advertise-address: %w", err)
		}
		return a, nil
	}
	if a, err := netip.ParseAddr(bind); err == nil && !a.IsUnspecified() {
		return a, nil
	}
	for _, n := range hostAddresses() {
		if p, err := netip.ParsePrefix(n); err == nil {
			return p.Addr(), nil
		}
	}
	return netip.MustParseAddr("127.0.0.1"), nil
}

func serverCommand() *cobra.Command {
	f := &serverFlags{}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the control plane: etcd (embedded unless --etcd-servers) and the apiserver",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			level := slog.LevelInfo
			if f.verbose {
				level = slog.LevelDebug
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			advertise, err := advertiseAddress(f.advertiseAddress, f.bindAddress)
			if err != nil {
				return err
			}
			return controlplane.Run(cmd.Context(), controlplane.Config{
				DataDir: f.dataDir, BindAddress: f.bindAddress, Port: f.port, AdvertiseAddress: advertise,
				EtcdServers: f.etcdServers, Hosts: f.hosts, Logger: log,
				ClusterCIDR: f.clusterCIDR, ServiceCIDR: f.serviceCIDR,
				AuditLogPath: f.auditLog, AuditPolicyFile: f.auditPolicy, AuditLogMaxSizeMB: f.auditMaxMB,
			})
		},
	}
	cmd.Flags().StringVar(&f.dataDir, "data-dir", "/var/lib/minik8s", "directory for etcd data, certificates, admin.kubeconfig and node-token (the join token for agents)")
	cmd.Flags().StringVar(&f.bindAddress, "bind-address", "0.0.0.0", "address the apiserver listens on")
	cmd.Flags().IntVar(&f.port, "port", 6443, "apiserver HTTPS port")
	cmd.Flags().StringVar(&f.advertiseAddress, "advertise-address", "",
		"address published as the endpoint of the default/kubernetes Service (default: --bind-address when it names one, else this host's first non-loopback IPv4 address)")
	cmd.Flags().StringSliceVar(&f.etcdServers, "etcd-servers", nil, "external etcd client URLs; empty runs an embedded etcd")
	cmd.Flags().StringSliceVar(&f.hosts, "tls-san", nil, "extra DNS names or IPs for the apiserver certificate")
	cmd.Flags().StringVar(&f.clusterCIDR, "cluster-cidr", controlplane.DefaultClusterCIDR, "pod IP range, split into one /24 per node")
	cmd.Flags().StringVar(&f.serviceCIDR, "service-cluster-ip-range", apiserver.DefaultServiceCIDR, "Service cluster IP range")
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "debug logging")
	cmd.Flags().StringVar(&f.auditLog, "audit-log-path", "", `audit log file, one audit.k8s.io/v1 Event per line (default <data-dir>/audit.log; "-" for none)`)
	cmd.Flags().StringVar(&f.auditPolicy, "audit-policy-file", "", "audit.k8s.io/v1 Policy (default: every write, Secret read and request of a user or node at Metadata level)")
	cmd.Flags().IntVar(&f.auditMaxMB, "audit-log-maxsize", 100, "size in megabytes at which the audit log is rotated (one backup kept)")
	return cmd
}

func kubectlCommand() *cobra.Command {
	return &cobra.Command{
		Use:                "kubectl",
		Short:              "Run kubectl (the same code as bin/kubectl)",
		DisableFlagParsing: true,
		Run: func(cmd *cobra.Command, args []string) {
			k := kubectl.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, append([]string{"kubectl"}, args...))
			if err := k.Execute(); err != nil {
				cmdutil.CheckErr(err)
			}
		},
	}
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the Kubernetes API version minik8s serves",
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "minik8s (Kubernetes API %s)\n", apiserver.KubernetesVersion)
			return err
		},
	}
}
