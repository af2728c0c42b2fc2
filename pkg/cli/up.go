package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/minik8s/minik8s/pkg/apiserver"
	"github.com/minik8s/minik8s/pkg/controlplane"
	"github.com/minik8s/minik8s/pkg/node"
)

type upFlags struct {
	dataDir     string
	port        int
	nodeName    string
	nodeIP      string
	containerd  string
	clusterCIDR string
	serviceCIDR string
	capacity    map[string]string
}

func upCommand() *cobra.Command {
	f := &upFlags{}
	host, _ := os.Hostname()
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a whole single-node cluster in the foreground (root): containerd, etcd, control plane, kubelet",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Geteuid() != 0 {
				return errors.New("minik8s up runs containers and sets up pod networking, so it must run as root (minik8s server runs the control plane alone without root)")
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			ctx := cmd.Context()
			cp, stop, err := controlplane.Start(ctx, controlplane.Config{
				DataDir: f.dataDir, Port: f.port, Logger: log,
				ClusterCIDR: f.clusterCIDR, ServiceCIDR: f.serviceCIDR,
			})
			if err != nil {
				return err
			}
			defer func() { _ = stop() }()
			capacity, err := parseResources(f.capacity)
			if err != nil {
				return err
			}
			certPEM, keyPEM, err := cp.Bundle.IssueClientCert("system:node:"+f.nodeName, []string{"system:nodes"}, 0)
			if err != nil {
				return fmt.Errorf("node credential: %w", err)
			}
			return node.Run(ctx, node.Config{
				NodeName: f.nodeName, NodeIP: f.nodeIP,
				REST: &rest.Config{Host: cp.URL, UserAgent: "minik8s-kubelet", QPS: 50, Burst: 100,
					TLSClientConfig: rest.TLSClientConfig{CAData: cp.Bundle.CAPEM, CertData: certPEM, KeyData: keyPEM}},
				ClientCA: cp.Bundle.CAPool, ContainerdAddress: f.containerd,
				ClusterCIDR: f.clusterCIDR, ServiceCIDR: f.serviceCIDR,
				RootDir: filepath.Join(f.dataDir, "kubelet"), Capacity: capacity, Logger: log,
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dataDir, "data-dir", "/var/lib/minik8s", "directory for etcd data, certificates, admin.kubeconfig and pod volumes")
	fl.IntVar(&f.port, "port", 6443, "apiserver HTTPS port")
	fl.StringVar(&f.nodeName, "node-name", host, "name of this node")
	fl.StringVar(&f.nodeIP, "node-ip", "127.0.0.1", "the node's InternalIP (where the apiserver reaches the kubelet)")
	fl.StringVar(&f.containerd, "containerd", "", "containerd socket (default /run/containerd/containerd.sock; started when none answers)")
	fl.StringVar(&f.clusterCIDR, "cluster-cidr", controlplane.DefaultClusterCIDR, "pod IP range, one /24 per node")
	fl.StringVar(&f.serviceCIDR, "service-cluster-ip-range", apiserver.DefaultServiceCIDR, "Service cluster IP range")
	fl.StringToStringVar(&f.capacity, "extra-resources", nil, "resources the node offers beyond cpu, memory and pods, e.g. nvidia.com/gpu=2")
	return cmd
}
