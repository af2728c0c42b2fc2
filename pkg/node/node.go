package node

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/minik8s/minik8s/pkg/component"
	"github.com/minik8s/minik8s/pkg/image"
	"github.com/minik8s/minik8s/pkg/kubelet"
	"github.com/minik8s/minik8s/pkg/kubelet/local"
	"github.com/minik8s/minik8s/pkg/kubelet/localpath"
	"github.com/minik8s/minik8s/pkg/kubelet/network"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime/daemon"
	"github.com/minik8s/minik8s/pkg/proxy"
)

// Config describes one node.
type Config struct {
	NodeName string
	// NodeIP is the node's InternalIP, where the apiserver reaches its kubelet.
	NodeIP string
	// REST is the node's credential for the apiserver.
	REST *rest.Config
	// ClientCA verifies callers of the kubelet's server (the apiserver).
	ClientCA *x509.CertPool
	// ContainerdAddress is containerd's socket (default /run/containerd/containerd.sock).
	ContainerdAddress string
	// ClusterCIDR and ServiceCIDR are blackholed / routed on the host so no
	// cluster address ever leaks out of the machine.
	ClusterCIDR, ServiceCIDR string
	// ClusterDNS are the nameservers of dnsPolicy ClusterFirst pods (the
	// kube-dns clusterIP, pkg/dns); empty: pods get the host's resolvers.
	// ClusterDomain defaults to cluster.local.
	ClusterDNS    []string
	ClusterDomain string
	// RootDir holds pods' volumes and logs (default /var/lib/minik8s/kubelet).
	RootDir string
	// KubeletAddress is where the kubelet serves logs and exec (default :10250).
	KubeletAddress string
	// HostNetNS is the node's network namespace when it is not the process's own.
	HostNetNS string
	// PlainHTTPRegistries are registries (host:port) pulled from over
	// plain HTTP: the cluster's own (pkg/clusterconfig Registry).
	PlainHTTPRegistries []string
	// ProxyMode is the service proxy's mode: auto (the default),
	// nftables or iptables (proxy.Mode).
	ProxyMode string
	Labels    map[string]string
	// Capacity adds to what the machine reports, e.g. extended resources
	// such as nvidia.com/gpu.
	Capacity corev1.ResourceList
	// LeaseDuration is how long the node's heartbeat Lease is valid
	// (kubelet default 40s); the kubelet renews it every quarter of it. A
	// cluster whose node monitor grace period is shorter than the default
	// needs a shorter lease, or healthy nodes look unreachable.
	LeaseDuration time.Duration
	// NodeExporterPort is where the node's node exporter listens on
	// NodeIP (default DefaultNodeExporterPort, 9100: where Prometheus'
	// node-exporter job looks); negative: none.
	NodeExporterPort int
	Logger           *slog.Logger
}

// Run runs the node's parts (Parts) until ctx ends or one of them fails;
// the error names the part ("containerd: ...").
func Run(ctx context.Context, cfg Config) error {
	parts, err := Parts(cfg)
	if err != nil {
		return err
	}
	return component.Run(ctx, parts...)
}

// Parts are the node's parts in start order: containerd (ready once it
// answers and has the built-in images), the host's routes (ready once
// the cluster and service ranges are routed; then it keeps a route to
// every other node's pods), the service proxy, the node's half of the
// local-path provisioner (pkg/kubelet/localpath), the kubelet and the node
// exporter (exporter.go). A node without a usable nft or iptables has no
// service proxy (a warning): it still runs pods, only without Services;
// one without prometheus-node-exporter has no node exporter (a warning).
func Parts(cfg Config) ([]component.Part, error) {
	if cfg.NodeName == "" || cfg.NodeIP == "" || cfg.REST == nil {
		return nil, errors.New("node: name, IP and credentials are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.KubeletAddress == "" {
		cfg.KubeletAddress = fmt.Sprintf(":%d", kubelet.DefaultServerPort)
	}
	client, err := kubernetes.NewForConfig(cfg.REST)
	if err != nil {
		return nil, err
	}
	ctrd := &containerdPart{cfg: &cfg, ready: make(chan struct{})}
	parts := []component.Part{ctrd, &routesPart{cfg: &cfg, client: client, ready: make(chan struct{})}}
	if px, err := proxy.New(proxy.Config{Client: client, NodeName: cfg.NodeName, HostNetNS: cfg.HostNetNS,
		ClusterCIDR: cfg.ClusterCIDR, ServiceCIDR: cfg.ServiceCIDR, Mode: proxy.Mode(cfg.ProxyMode), Logger: cfg.Logger}); err != nil {
		cfg.Logger.Warn("service proxy disabled", "err", err)
	} else {
		parts = append(parts, component.Func("service proxy", px.Start))
	}
	// The node's half of the local-path provisioner: its volumes live
	// under the node's own root dir, so nodes sharing a host keep theirs
	// apart.
	localPathRoot := ""
	if cfg.RootDir != "" {
		localPathRoot = filepath.Join(cfg.RootDir, "local-path")
	}
	reaper, err := localpath.New(localpath.Config{Client: client, NodeName: cfg.NodeName, Root: localPathRoot, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	parts = append(parts, component.Func("local-path", reaper.Start))
	parts = append(parts, component.Func("kubelet", func(ctx context.Context) error {
		return runKubelet(ctx, cfg, client, ctrd.address, reaper.Root())
	}))
	if exporter := nodeExporterPart(&cfg); exporter != nil {
		parts = append(parts, exporter)
	}
	return parts, nil
}

// containerdPart makes sure containerd answers (starting it when none
// does, and stopping the one it started) with the built-in images.
type containerdPart struct {
	cfg   *Config
	ready chan struct{}
	// address is containerd's socket, set before ready closes.
	address string
}

func (p *containerdPart) Name() string           { return "containerd" }
func (p *containerdPart) Ready() <-chan struct{} { return p.ready }

func (p *containerdPart) Start(ctx context.Context) error {
	d, err := daemon.Ensure(ctx, daemon.Config{Address: p.cfg.ContainerdAddress})
	if err != nil {
		return err
	}
	if d.Started {
		p.cfg.Logger.Info("started containerd", "address", d.Address, "log", d.LogPath)
	}
	if err := image.EnsureBuiltin(ctx, d.Address); err != nil {
		return errors.Join(fmt.Errorf("built-in images: %w", err), d.Stop(context.WithoutCancel(ctx)))
	}
	p.address = d.Address
	close(p.ready)
	<-ctx.Done()
	return d.Stop(context.WithoutCancel(ctx))
}

// routesPart blackholes the cluster range, routes the service range to
// the pod bridge, then keeps a route to every other node's pod CIDR.
type routesPart struct {
	cfg    *Config
	client kubernetes.Interface
	ready  chan struct{}
}

func (p *routesPart) Name() string           { return "routes" }
func (p *routesPart) Ready() <-chan struct{} { return p.ready }

func (p *routesPart) Start(ctx context.Context) error {
	cfg := p.cfg
	routes, err := network.NewRoutes(network.RoutesConfig{NodeName: cfg.NodeName, HostNetNS: cfg.HostNetNS, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	if cfg.ClusterCIDR != "" {
		if err := routes.EnsureBlackholes(cfg.ClusterCIDR); err != nil {
			return fmt.Errorf("cluster CIDR blackhole: %w", err)
		}
	}
	if cfg.ServiceCIDR != "" {
		if err := routes.EnsureServiceRoute(cfg.ServiceCIDR, network.DefaultBridgeName); err != nil {
			return fmt.Errorf("service CIDR route: %w", err)
		}
	}
	close(p.ready)
	syncRoutes(ctx, p.client, routes, cfg.Logger)
	return nil
}

// runKubelet runs the kubelet with the local provider (containers on the
// containerd at address, pods on CNI) until ctx ends.
func runKubelet(ctx context.Context, cfg Config, client kubernetes.Interface, address, localPathRoot string) error {
	log := cfg.Logger
	rt, err := runtime.New(ctx, runtime.Config{Address: address, Node: cfg.NodeName, HostNetNS: cfg.HostNetNS, PlainHTTPRegistries: cfg.PlainHTTPRegistries, Logger: log})
	if err != nil {
		return err
	}
	// The kubelet's events (Pulled, Started, Killing, BackOff, Unhealthy)
	// come from the component "kubelet" on this host, as kubectl describe
	// shows them.
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: cfg.NodeName})
	// host-local's allocations live with the node's other state (several
	// nodes on one machine each have their own).
	stateDir := ""
	if cfg.RootDir != "" {
		stateDir = filepath.Join(cfg.RootDir, "cni")
	}
	provider, err := local.New(local.Config{
		NodeName: cfg.NodeName, NodeIP: cfg.NodeIP, Runtime: rt, Client: client, Recorder: recorder, Capacity: cfg.Capacity,
		RootDir: cfg.RootDir, LocalPathRoot: localPathRoot, HostNetNS: cfg.HostNetNS, Logger: log,
		Credential: &cfg.REST.TLSClientConfig,
		ClusterDNS: cfg.ClusterDNS, ClusterDomain: cfg.ClusterDomain,
		NewNetwork: func(podCIDR string) (network.Network, error) {
			return network.New(network.Config{NodeName: cfg.NodeName, PodCIDR: podCIDR, ClusterCIDR: cfg.ClusterCIDR,
				HostNetNS: cfg.HostNetNS, StateDir: stateDir, Logger: log})
		},
	})
	if err != nil {
		return err
	}
	defer provider.Close()
	k, err := kubelet.New(kubelet.Config{
		Client: client, NodeName: cfg.NodeName, Provider: provider, Labels: cfg.Labels, AdmitPods: true,
		ServerAddress: cfg.KubeletAddress, ClientCA: cfg.ClientCA, LeaseDuration: cfg.LeaseDuration, Logger: log,
		Listen: func(proto, address string) (ln net.Listener, err error) {
			err = network.InNetNS(cfg.HostNetNS, func() error {
				ln, err = net.Listen(proto, address)
				return err
			})
			return ln, err
		},
	})
	if err != nil {
		return err
	}
	return k.Start(ctx)
}

// syncRoutes keeps a route to every other node's pod CIDR (host-gw).
func syncRoutes(ctx context.Context, client kubernetes.Interface, routes *network.Routes, log *slog.Logger) {
	factory := informers.NewSharedInformerFactory(client, 0)
	nodes := factory.Core().V1().Nodes()
	changed := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	_, _ = nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: poke, UpdateFunc: func(_, n any) { poke(n) }, DeleteFunc: poke,
	})
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	cache.WaitForCacheSync(ctx.Done(), nodes.Informer().HasSynced)
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		select {
		case <-changed:
		case <-time.After(30 * time.Second):
		case <-ctx.Done():
			return
		}
		list, err := nodes.Lister().List(labels.Everything())
		if err != nil {
			return
		}
		if err := routes.Sync(network.NodeRoutes(list)); err != nil {
			log.Warn("sync node routes", "err", err)
		}
	}, 0)
}
