package cli

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minik8s/minik8s/pkg/clusterconfig"
	"github.com/minik8s/minik8s/pkg/proxy"
)

type proxyFlags struct {
	kubeconfig  string
	nodeName    string
	netns       string
	clusterCIDR string
	serviceCIDR string
	mode        string
	cleanup     bool
	// localhostNodePorts: NodePorts answer the node on 127.0.0.1.
	localhostNodePorts bool
}

func proxyCommand() *cobra.Command {
	f := &proxyFlags{}
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Run the service proxy (nftables table ip " + proxy.TableName + ", or iptables MINIK8S-* chains); minik8s up and agent already run one per node",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkProxyMode(f.mode); err != nil {
				return err
			}
			if f.cleanup {
				return proxy.Cleanup(cmd.Context(), f.netns)
			}
			rc, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
			if err != nil {
				return fmt.Errorf("kubeconfig: %w", err)
			}
			rc.UserAgent = "minik8s-proxy"
			client, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			settings, err := clusterSettings(cmd.Context(), client, clusterconfig.Settings{ClusterCIDR: f.clusterCIDR, ServiceCIDR: f.serviceCIDR}, log)
			if err != nil {
				return err
			}
			p, err := proxy.New(proxy.Config{
				Client: client, NodeName: f.nodeName, HostNetNS: f.netns, Mode: proxy.Mode(f.mode), Logger: log,
				ClusterCIDR: settings.ClusterCIDR, ServiceCIDR: settings.ServiceCIDR, LocalhostNodePorts: &f.localhostNodePorts,
			})
			if err != nil {
				return err
			}
			return p.Start(cmd.Context())
		},
	}
	host, _ := os.Hostname()
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	fl.StringVar(&f.nodeName, "node-name", host, "the node this proxy serves (for logs)")
	fl.StringVar(&f.netns, "netns", "", "the node's network namespace (a path such as /run/netns/NAME); empty: this process's own")
	fl.StringVar(&f.clusterCIDR, "cluster-cidr", "", "pod IP range; connections to Services from outside it are masqueraded (default: the cluster's; refused if it disagrees)")
	fl.StringVar(&f.serviceCIDR, "service-cluster-ip-range", "", "Service cluster IP range; connections to its addresses that no Service port claims are refused (default: the cluster's)")
	fl.BoolVar(&f.localhostNodePorts, "localhost-nodeports", true, "NodePorts answer the node itself on 127.0.0.1 (sets route_localnet, with a guard that drops other hosts' packets for 127.0.0.0/8)")
	fl.StringVar(&f.mode, "mode", string(proxy.ModeAuto), "how to program the kernel: auto (nftables when nft works, else iptables), nftables or iptables")
	fl.BoolVar(&f.cleanup, "cleanup", false, "delete the proxy's nftables table and iptables chains and exit")
	return cmd
}

// checkProxyMode refuses a --proxy-mode / --mode the proxy does not have.
func checkProxyMode(mode string) error {
	switch proxy.Mode(mode) {
	case "", proxy.ModeAuto, proxy.ModeNFTables, proxy.ModeIPTables:
		return nil
	}
	return fmt.Errorf("proxy mode %q: want auto, nftables or iptables", mode)
}
