package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minik8s/minik8s/pkg/apiserver"
	"github.com/minik8s/minik8s/pkg/bootstrap"
	"github.com/minik8s/minik8s/pkg/bootstrap/token"
	"github.com/minik8s/minik8s/pkg/clusterconfig"
	"github.com/minik8s/minik8s/pkg/controlplane"
	"github.com/minik8s/minik8s/pkg/dns"
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
	capacity                 map[string]string
	proxyMode                string
	clusterDNS               []string
	clusterDomain            string
	nodeExporterPort         int
	slurm                    slurmFlags
}

func agentCommand() *cobra.Command {
	f := &agentFlags{}
	cmd := &cobra.Command{
		Use:     "agent",
		Aliases: []string{"kubelet"},
		Short:   "Run node agents (kubelets) that join a cluster",
		Long: `Runs a kubelet that registers a Node and runs the pods bound to it.

With --server and a join token (--token, from the server's <data-dir>/node-token
or "minik8s token create"), the node joins as Kubernetes nodes do: it checks the
server against the CA hash in the token, asks for its own client certificate
(system:node:<name>) with the token, and from then on uses only that, saved
under its root dir (kubelet.kubeconfig). A restart reuses the saved credential.

--provider simulated runs pods without containers (kwok-style hollow nodes);
with --nodes N one process hosts N such nodes, named <node-name>-0 .. -N-1.

--provider slurm runs a virtual node for a Slurm cluster (virtual-kubelet
style; pkg/kubelet/slurm): each pod bound to it becomes one Slurm batch job
(sbatch), its status follows the job's state, its logs are the job's output
and deleting it cancels the job (scancel). The Slurm commands run here, on a
Slurm login host (--slurm-conf sets SLURM_CONF), or over SSH on a remote
login node (--slurm-ssh user@host:port, --slurm-ssh-key and
--slurm-ssh-known-host). The node (labels type=virtual-kubelet and
minik8s.io/provider=slurm, taint virtual-kubelet.io/provider=slurm:NoSchedule)
takes its capacity from --slurm-partition; pods reach it with a nodeSelector
and a toleration. --slurm-work-root must be shared by the login host and the
compute nodes. --node-ip is where the apiserver reaches its kubelet for logs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkProxyMode(f.proxyMode); err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			switch f.provider {
			case "simulated":
				return runSimulatedNodes(cmd.Context(), f, log)
			case "local":
				return runLocalNode(cmd.Context(), f, log)
			case "slurm":
				return runSlurmNode(cmd.Context(), f, log)
			}
			return fmt.Errorf("unknown provider %q (available: local, simulated, slurm)", f.provider)
		},
	}
	host, _ := os.Hostname()
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig to reach the apiserver")
	fl.StringVar(&f.server, "server", "", "apiserver URL (with --token)")
	fl.StringVar(&f.token, "token", "", "join token K10<ca-hash>::<id>.<secret> (the server's <data-dir>/node-token); another token (pki/tokens.csv) is used as a bearer token as it is")
	fl.StringVar(&f.caFile, "certificate-authority", "", "the cluster CA certificate (optional with a K10 join token)")
	fl.StringVar(&f.nodeName, "node-name", host, "node name (a prefix with --nodes > 1)")
	fl.StringVar(&f.provider, "provider", "local", "pod provider: local (containerd + CNI, root), simulated (no containers) or slurm (pods become Slurm batch jobs; the --slurm-* flags)")
	fl.StringVar(&f.nodeIP, "node-ip", "", "the node's InternalIP, where the apiserver reaches its kubelet (local and slurm providers)")
	fl.StringVar(&f.netns, "netns", "", "the node's network namespace path, when it is not this process's own (local provider)")
	fl.StringVar(&f.rootDir, "root-dir", "", "the node's credential, pod volumes and logs (default /var/lib/minik8s/kubelet/<node>; <root-dir>/<node> with --nodes > 1)")
	fl.StringVar(&f.kubeletAt, "kubelet-address", ":10250", "where the kubelet serves logs and exec")
	fl.StringVar(&f.clusterCIDR, "cluster-cidr", "", "pod IP range of the cluster (default: the cluster's, from kube-system/"+clusterconfig.Name+"; refused if it disagrees)")
	fl.StringVar(&f.serviceCIDR, "service-cluster-ip-range", "", "Service cluster IP range (default: the cluster's; refused if it disagrees)")
	fl.IntVar(&f.nodes, "nodes", 1, "number of nodes this process hosts (simulated provider)")
	fl.StringToStringVar(&f.labels, "node-labels", nil, "labels for the node(s)")
	fl.StringSliceVar(&f.clusterDNS, "cluster-dns", nil, "nameservers of dnsPolicy ClusterFirst pods (default: kube-system/kube-dns's clusterIP when the cluster has one)")
	fl.StringVar(&f.clusterDomain, "cluster-domain", "", "the cluster's DNS domain (default: the cluster's; refused if it disagrees)")
	fl.StringVar(&f.proxyMode, "proxy-mode", "auto", "how the node's service proxy programs the kernel: auto (nftables, else iptables), nftables or iptables")
	fl.StringToStringVar(&f.capacity, "extra-resources", nil, "resources the node offers beyond cpu, memory and pods, e.g. nvidia.com/gpu=2 (local provider)")
	fl.IntVar(&f.nodeExporterPort, "node-exporter-port", node.DefaultNodeExporterPort, "where the node's prometheus-node-exporter listens on --node-ip (local provider); 0: none")
	addSlurmFlags(fl, &f.slurm)
	return cmd
}

// defaultRootDir holds one directory per node.
const defaultRootDir = "/var/lib/minik8s/kubelet"

// nodeDir is where node name keeps its credential (and, for the local
// provider, its pods' volumes and logs).
func nodeDir(f *agentFlags, name string) string {
	switch {
	case f.rootDir == "":
		return filepath.Join(defaultRootDir, name)
	case f.nodes > 1:
		return filepath.Join(f.rootDir, name)
	}
	return f.rootDir
}

// joins says whether the nodes get their own credentials with a join token.
func joins(f *agentFlags) bool {
	if f.server == "" || f.token == "" {
		return false
	}
	_, err := token.ParseJoin(f.token)
	return err == nil
}

// nodeRESTConfig is node name's credential: its own certificate after a
// join (saved in its directory), else the kubeconfig or static token given.
func nodeRESTConfig(ctx context.Context, f *agentFlags, name string, log *slog.Logger) (*rest.Config, error) {
	var rc *rest.Config
	switch {
	case f.server == "":
		var err error
		if rc, err = clientcmd.BuildConfigFromFlags("", f.kubeconfig); err != nil {
			return nil, err
		}
	case f.token == "":
		return nil, errors.New("--server needs --token")
	case joins(f):
		var caPEM []byte
		if f.caFile != "" {
			var err error
			if caPEM, err = os.ReadFile(f.caFile); err != nil {
				return nil, err
			}
		}
		var err error
		rc, err = bootstrap.Join(ctx, bootstrap.Config{
			Server: f.server, Token: f.token, CAPEM: caPEM, NodeName: name, Dir: nodeDir(f, name), Logger: log,
		})
		if err != nil {
			return nil, fmt.Errorf("node %s: join: %w", name, err)
		}
	case f.caFile == "":
		return nil, errors.New("a token that is not a join token (K10<ca-hash>::<id>.<secret>) needs --certificate-authority")
	default:
		rc = &rest.Config{Host: f.server, BearerToken: f.token, TLSClientConfig: rest.TLSClientConfig{CAFile: f.caFile}}
	}
	rc.QPS, rc.Burst, rc.UserAgent = 50, 100, "minik8s-kubelet"
	return rc, nil
}

func runSimulatedNodes(ctx context.Context, f *agentFlags, log *slog.Logger) error {
	var shared kubernetes.Interface
	if !joins(f) {
		rc, err := nodeRESTConfig(ctx, f, f.nodeName, log)
		if err != nil {
			return err
		}
		if shared, err = kubernetes.NewForConfig(rc); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, f.nodes)
	for i := 0; i < f.nodes; i++ {
		name := f.nodeName
		if f.nodes > 1 {
			name = fmt.Sprintf("%s-%d", f.nodeName, i)
		}
		client := shared
		if client == nil {
			rc, err := nodeRESTConfig(ctx, f, name, log)
			if err != nil {
				return err
			}
			if client, err = kubernetes.NewForConfig(rc); err != nil {
				return err
			}
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

func runLocalNode(ctx context.Context, f *agentFlags, log *slog.Logger) error {
	if os.Geteuid() != 0 {
		return errors.New("the local provider runs containers and pod networking, so it must run as root")
	}
	if f.nodeIP == "" {
		return errors.New("--node-ip is required with the local provider")
	}
	rc, err := nodeRESTConfig(ctx, f, f.nodeName, log)
	if err != nil {
		return err
	}
	pool, err := clusterCAPool(rc)
	if err != nil {
		return err
	}
	capacity, err := parseResources(f.capacity)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	settings, err := clusterSettings(ctx, client, clusterconfig.Settings{ClusterCIDR: f.clusterCIDR, ServiceCIDR: f.serviceCIDR, ClusterDomain: f.clusterDomain}, log)
	if err != nil {
		return err
	}
	clusterDNS := f.clusterDNS
	if len(clusterDNS) == 0 {
		clusterDNS = discoverClusterDNS(ctx, client, log)
	}
	return node.Run(ctx, node.Config{
		NodeName: f.nodeName, NodeIP: f.nodeIP, REST: rc, ClientCA: pool, Labels: f.labels, Capacity: capacity,
		ClusterDNS: clusterDNS, ClusterDomain: settings.ClusterDomain, ProxyMode: f.proxyMode,
		ClusterCIDR: settings.ClusterCIDR, ServiceCIDR: settings.ServiceCIDR, RootDir: nodeDir(f, f.nodeName),
		KubeletAddress: f.kubeletAt, HostNetNS: f.netns, Logger: log,
		PlainHTTPRegistries: nonEmpty(settings.Registry), NodeExporterPort: exporterPort(f.nodeExporterPort),
	})
}

// exporterPort is node.Config's NodeExporterPort for the flag's port: 0
// or less is none.
func exporterPort(port int) int {
	if port <= 0 {
		return -1
	}
	return port
}

// nonEmpty is s as a list: none when s is empty.
func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// clusterSettings are the node's pod range, Service range and DNS domain:
// the cluster's (pkg/clusterconfig), so a join needs none of them; a flag
// (non-empty in flags) that disagrees is refused. A cluster that publishes
// none leaves the flags, or Kubernetes' defaults, in force.
func clusterSettings(ctx context.Context, client kubernetes.Interface, flags clusterconfig.Settings, log *slog.Logger) (clusterconfig.Settings, error) {
	cluster, found, err := clusterconfig.Read(ctx, client)
	if err != nil {
		return clusterconfig.Settings{}, fmt.Errorf("the cluster's settings: %w", err)
	}
	defaults := clusterconfig.Settings{ClusterCIDR: controlplane.DefaultClusterCIDR, ServiceCIDR: apiserver.DefaultServiceCIDR,
		ClusterDomain: controlplane.DefaultClusterDomain}
	s, err := clusterconfig.Resolve(cluster, found, flags, defaults)
	if err != nil {
		return clusterconfig.Settings{}, err
	}
	if !found {
		log.Warn("the cluster publishes no settings (kube-system/"+clusterconfig.Name+"): using the flags and defaults",
			"clusterCIDR", s.ClusterCIDR, "serviceCIDR", s.ServiceCIDR, "clusterDomain", s.ClusterDomain)
	}
	return s, nil
}

// discoverClusterDNS is the clusterIP of kube-system/kube-dns, when the
// cluster runs DNS (minik8s up does): what ClusterFirst pods of this node
// are given. None: pods get the host's resolvers.
func discoverClusterDNS(ctx context.Context, client kubernetes.Interface, log *slog.Logger) []string {
	svc, err := client.CoreV1().Services(metav1.NamespaceSystem).Get(ctx, dns.ServiceName, metav1.GetOptions{})
	if err != nil || net.ParseIP(svc.Spec.ClusterIP) == nil {
		log.Info("no cluster DNS found (kube-system/kube-dns); pods use the host's resolvers unless --cluster-dns is given", "err", err)
		return nil
	}
	log.Info("cluster DNS", "nameserver", svc.Spec.ClusterIP)
	return []string{svc.Spec.ClusterIP}
}

// parseResources reads name=quantity pairs, e.g. nvidia.com/gpu=2.
func parseResources(in map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for name, v := range in {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("resource %s=%s: %w", name, v, err)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}
