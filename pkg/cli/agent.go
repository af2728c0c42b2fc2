package cli

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minik8s/minik8s/pkg/apiserver"
	"github.com/minik8s/minik8s/pkg/controlplane"
	"github.com/minik8s/minik8s/pkg/kubelet"
	"github.com/minik8s/minik8s/pkg/kubelet/simulated"
	"github.com/minik8s/minik8s/pkg/node"
)

type agentFlags struct {
	kubeconfig               string
	server                   string
	token                    string
	caFile                   string
	nodeName                 string
	provider                 string
	nodes                    int
	labels                   map[string]string
	nodeIP                   string
	netns                    string
	rootDir                  string
	kubeletAt                string
	clusterCIDR, serviceCIDR string
}

func agentCommand() *cobra.Command {
	f := &agentFlags{}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run node agents (kubelets) that join a cluster",
		Long: `Runs a kubelet that registers a Node and runs the pods bound to it.

--provider simulated runs pods without containers (kwok-style hollow nodes);
with --nodes N one process hosts N such nodes, named <node-name>-0 .. -N-1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rc, err := agentRESTConfig(f)
			if err != nil {
				return err
			}
			rc.QPS, rc.Burst, rc.UserAgent = 50, 100, "minik8s-kubelet"
			client, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			switch f.provider {
			case "simulated":
				return runSimulatedNodes(cmd.Context(), client, f, log)
			case "local":
				return runLocalNode(cmd.Context(), rc, f, log)
			}
			return fmt.Errorf("unknown provider %q (available: local, simulated)", f.provider)
		},
	}
	host, _ := os.Hostname()
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig to reach the apiserver")
	fl.StringVar(&f.server, "server", "", "apiserver URL (with --token)")
	fl.StringVar(&f.token, "token", "", "bearer token to join with (minik8s server's data dir pki/tokens.csv)")
	fl.StringVar(&f.caFile, "certificate-authority", "", "the cluster CA certificate (with --server)")
	fl.StringVar(&f.nodeName, "node-name", host, "node name (a prefix with --nodes > 1)")
	fl.StringVar(&f.provider, "provider", "local", "pod provider: local (containerd + CNI, root) or simulated (no containers)")
	fl.StringVar(&f.nodeIP, "node-ip", "", "the node's InternalIP, where the apiserver reaches its kubelet (local provider)")
	fl.StringVar(&f.netns, "netns", "", "the node's network namespace path, when it is not this process's own (local provider)")
	fl.StringVar(&f.rootDir, "root-dir", "", "pod volumes and logs (default /var/lib/minik8s/kubelet/<node>)")
	fl.StringVar(&f.kubeletAt, "kubelet-address", ":10250", "where the kubelet serves logs and exec")
	fl.StringVar(&f.clusterCIDR, "cluster-cidr", controlplane.DefaultClusterCIDR, "pod IP range of the cluster")
	fl.StringVar(&f.serviceCIDR, "service-cluster-ip-range", apiserver.DefaultServiceCIDR, "Service cluster IP range")
	fl.IntVar(&f.nodes, "nodes", 1, "number of nodes this process hosts (simulated provider)")
	fl.StringToStringVar(&f.labels, "node-labels", nil, "labels for the node(s)")
	return cmd
}

func agentRESTConfig(f *agentFlags) (*rest.Config, error) {
	if f.server == "" {
		return clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	}
	if f.token == "" || f.caFile == "" {
		return nil, fmt.Errorf("--server needs --token and --certificate-authority")
	}
	return &rest.Config{Host: f.server, BearerToken: f.token, TLSClientConfig: rest.TLSClientConfig{CAFile: f.caFile}}, nil
}

func runSimulatedNodes(ctx context.Context, client kubernetes.Interface, f *agentFlags, log *slog.Logger) error {
	var wg sync.WaitGroup
	errs := make(chan error, f.nodes)
	for i := 0; i < f.nodes; i++ {
		name := f.nodeName
		if f.nodes > 1 {
			name = fmt.Sprintf("%s-%d", f.nodeName, i)
		}
		p, err := simulated.New(simulated.Config{
			NodeName: name, NodeIP: fmt.Sprintf("172.31.%d.%d", i/250, i%250+1),
			PodCIDR: fmt.Sprintf("10.245.%d.0/24", i%256),
		})
		if err != nil {
			return err
		}
		k, err := kubelet.New(kubelet.Config{Client: client, NodeName: name, Provider: p, Labels: f.labels, Logger: log, Workers: 2})
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := k.Start(ctx); err != nil {
				errs <- fmt.Errorf("node %s: %w", name, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func runLocalNode(ctx context.Context, rc *rest.Config, f *agentFlags, log *slog.Logger) error {
	if os.Geteuid() != 0 {
		return errors.New("the local provider runs containers and pod networking, so it must run as root")
	}
	if f.nodeIP == "" {
		return errors.New("--node-ip is required with the local provider")
	}
	caPEM := rc.TLSClientConfig.CAData
	if len(caPEM) == 0 && rc.TLSClientConfig.CAFile != "" {
		var err error
		if caPEM, err = os.ReadFile(rc.TLSClientConfig.CAFile); err != nil {
			return err
		}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("the kubeconfig carries no cluster CA: the kubelet needs it to verify the apiserver's calls")
	}
	rootDir := f.rootDir
	if rootDir == "" {
		rootDir = filepath.Join("/var/lib/minik8s/kubelet", f.nodeName)
	}
	return node.Run(ctx, node.Config{
		NodeName: f.nodeName, NodeIP: f.nodeIP, REST: rc, ClientCA: pool, Labels: f.labels,
		ClusterCIDR: f.clusterCIDR, ServiceCIDR: f.serviceCIDR, RootDir: rootDir,
		KubeletAddress: f.kubeletAt, HostNetNS: f.netns, Logger: log,
	})
}
