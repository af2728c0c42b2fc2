package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/minik8s/minik8s/pkg/apiserver"
	"github.com/minik8s/minik8s/pkg/apiserver/authz"
	"github.com/minik8s/minik8s/pkg/component"
	"github.com/minik8s/minik8s/pkg/controlplane"
	"github.com/minik8s/minik8s/pkg/dns"
	"github.com/minik8s/minik8s/pkg/gateway"
	"github.com/minik8s/minik8s/pkg/glusterfs"
	"github.com/minik8s/minik8s/pkg/hostservice"
	"github.com/minik8s/minik8s/pkg/node"
	"github.com/minik8s/minik8s/pkg/prometheus"
	"github.com/minik8s/minik8s/pkg/serverless"
	"github.com/minik8s/minik8s/pkg/serverless/registry"
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
	proxyMode   string
}

func upCommand() *cobra.Command {
	f := &upFlags{}
	host, _ := os.Hostname()
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a whole single-node cluster in the foreground (root): containerd, etcd, control plane, kubelet",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkProxyMode(f.proxyMode); err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			if f.nodeIP == "" {
				f.nodeIP = defaultNodeIP(log)
			}
			if os.Geteuid() != 0 {
				return errors.New("minik8s up runs containers and sets up pod networking, so it must run as root (minik8s server runs the control plane alone without root)")
			}
			parts, err := upParts(f, log)
			if err != nil {
				return err
			}
			return component.Run(cmd.Context(), parts...)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dataDir, "data-dir", "/var/lib/minik8s", "directory for etcd data, certificates, admin.kubeconfig and pod volumes")
	fl.IntVar(&f.port, "port", 6443, "apiserver HTTPS port")
	fl.StringVar(&f.nodeName, "node-name", host, "name of this node")
	fl.StringVar(&f.nodeIP, "node-ip", "", "the node's InternalIP, where the apiserver reaches the kubelet and pods reach NodePorts (default: the IPv4 address of the default route's interface, as the kubelet picks it; 127.0.0.1 without one)")
	fl.StringVar(&f.containerd, "containerd", "", "containerd socket (default /run/containerd/containerd.sock; started when none answers)")
	fl.StringVar(&f.clusterCIDR, "cluster-cidr", controlplane.DefaultClusterCIDR, "pod IP range, one /24 per node")
	fl.StringVar(&f.serviceCIDR, "service-cluster-ip-range", apiserver.DefaultServiceCIDR, "Service cluster IP range")
	fl.StringToStringVar(&f.capacity, "extra-resources", nil, "resources the node offers beyond cpu, memory and pods, e.g. nvidia.com/gpu=2")
	fl.StringVar(&f.proxyMode, "proxy-mode", "auto", "how the node's service proxy programs the kernel: auto (nftables, else iptables), nftables or iptables")
	return cmd
}

// defaultNodeIP is the node's InternalIP when --node-ip is not given:
// as the kubelet, the global IPv4 address of the default route's
// interface. Not loopback, which the kubelet refuses: a pod's
// 127.0.0.1 is its own, so pods could not reach the node's NodePorts
// there. A host without a default route falls back to 127.0.0.1, which
// only the node itself reaches, with a warning.
func defaultNodeIP(log *slog.Logger) string {
	ip, err := utilnet.ChooseHostInterface()
	if err == nil && ip.To4() != nil {
		return ip.String()
	}
	if err == nil {
		err = fmt.Errorf("%s is not IPv4", ip)
	}
	log.Warn("no address to register the node at, using 127.0.0.1: pods cannot reach its NodePorts; pass --node-ip", "err", err)
	return "127.0.0.1"
}

// upParts are a whole cluster's parts in start order: the control
// plane's, the add-ons (upAddons), the node, and the node's control-plane
// role label.
func upParts(f *upFlags, log *slog.Logger) ([]component.Part, error) {
	capacity, err := parseResources(f.capacity)
	if err != nil {
		return nil, err
	}
	// cp is set once the control plane is ready, before the parts after
	// it start.
	var cp controlplane.ControlPlane
	parts, err := controlplane.Parts(controlplane.Config{
		DataDir: f.dataDir, Port: f.port, Logger: log, Registry: registryAddress(f),
		ClusterCIDR: f.clusterCIDR, ServiceCIDR: f.serviceCIDR,
		Ready: func(ready controlplane.ControlPlane) { cp = ready },
	})
	if err != nil {
		return nil, err
	}
	addons, clusterDNS, err := upAddons(&cp, f, log)
	if err != nil {
		return nil, err
	}
	parts = append(parts, addons...)
	return append(parts,
		component.Func("node", func(ctx context.Context) error {
			certPEM, keyPEM, err := cp.Bundle.IssueClientCert("system:node:"+f.nodeName, []string{"system:nodes"}, 0)
			if err != nil {
				return fmt.Errorf("credential: %w", err)
			}
			return node.Run(ctx, node.Config{
				ClusterDNS: clusterDNS, ClusterDomain: dns.DefaultClusterDomain, ProxyMode: f.proxyMode,
				NodeName: f.nodeName, NodeIP: f.nodeIP,
				REST: &rest.Config{Host: cp.URL, UserAgent: "minik8s-kubelet", QPS: 50, Burst: 100,
					TLSClientConfig: rest.TLSClientConfig{CAData: cp.Bundle.CAPEM, CertData: certPEM, KeyData: keyPEM}},
				ClientCA: cp.Bundle.CAPool, ContainerdAddress: f.containerd,
				ClusterCIDR: f.clusterCIDR, ServiceCIDR: f.serviceCIDR,
				RootDir: filepath.Join(f.dataDir, "kubelet"), Capacity: capacity, Logger: log,
				PlainHTTPRegistries: nonEmpty(registryAddress(f)),
			})
		}),
		component.Do("control-plane role", func(ctx context.Context) error {
			client, _, err := adminClients(cp)
			if err != nil {
				return err
			}
			return controlplane.MarkControlPlaneNode(ctx, client, f.nodeName)
		})), nil
}

// upAddons are the cluster's add-ons on this host, run once the control
// plane at *cp is ready: default/kubernetes, the gateway's nginx
// (pkg/gateway) and CoreDNS (pkg/dns), which serves the gateway's host
// names too (see docs/design/0007-dns.md and 0009-gateway.md), the
// registry and functions, and the shared file system (0023). An add-on
// whose program is absent is off, with a warning. nameservers are for the
// kubelet: the kube-dns clusterIP, or none (the host's resolvers) when
// there is no coredns binary.
func upAddons(cp *controlplane.ControlPlane, f *upFlags, log *slog.Logger) (parts []component.Part, nameservers []string, err error) {
	// default/kubernetes: pods reach this apiserver at the node's pod
	// gateway, as in-cluster clients expect.
	parts = append(parts, component.Func("kubernetes service", func(ctx context.Context) error {
		client, _, err := componentClients(*cp, authz.UserHostServices)
		if err != nil {
			return err
		}
		svc, err := apiserverService(cp.URL, f.serviceCIDR)
		if err != nil {
			return err
		}
		return hostservice.Publish(ctx, hostservice.PublishConfig{Client: client, Service: svc, NodeName: f.nodeName, Logger: log})
	}))
	// Pods, and this host itself: its connections to a clusterIP leave
	// from one of its own addresses.
	hostNets := hostAddresses()
	var hostsFile string
	if _, err := gateway.FindNginx(); err != nil {
		log.Warn("gateway is off: DNSRecords and Ingresses are not served", "err", err)
	} else {
		dir := filepath.Join(f.dataDir, "gateway")
		hostsFile = filepath.Join(dir, "hosts")
		parts = append(parts, component.FuncReady("gateway", func(ctx context.Context, ready func()) error {
			client, dyn, err := componentClients(*cp, authz.UserGateway)
			if err != nil {
				return err
			}
			gw, err := gateway.New(gateway.Config{Client: client, Dynamic: dyn, Dir: dir, HostsFile: hostsFile,
				NodeName: f.nodeName, AllowNets: append([]string{f.clusterCIDR, "127.0.0.0/8"}, hostNets...), Logger: log, Ready: ready})
			if err != nil {
				return err
			}
			return gw.Start(ctx)
		}))
	}
	parts = append(parts, functionsAddon(cp, f, log)...)
	parts = append(parts, sharedStorageAddon(cp, f, log)...)
	parts = append(parts, monitoringAddon(cp, f, log)...)
	if _, err := dns.FindBinary(); err != nil {
		log.Warn("cluster DNS is off: no coredns binary (make deps installs it); pods use the host's resolvers", "err", err)
		return parts, nil, nil
	}
	clusterIP, err := dns.ServiceIP(f.serviceCIDR)
	if err != nil {
		return nil, nil, err
	}
	parts = append(parts, component.Func("cluster DNS", func(ctx context.Context) error {
		client, _, err := componentClients(*cp, authz.UserHostServices)
		if err != nil {
			return err
		}
		return dns.RunOnHost(ctx, dns.HostConfig{
			DataDir: f.dataDir, APIServer: cp.URL, Bundle: cp.Bundle, Client: client, NodeName: f.nodeName,
			ServiceCIDR: f.serviceCIDR, ClusterCIDR: f.clusterCIDR, AllowNets: hostNets, HostsFile: hostsFile, Logger: log,
		})
	}))
	return parts, []string{clusterIP.String()}, nil
}

// functionsAddon is the cluster's registry and the functions add-on
// (pkg/serverless) on this host: the builder pushes to the registry on
// loopback, where this node's kubelet pulls from too. Off, with a
// warning, without the registry binary.
func functionsAddon(cp *controlplane.ControlPlane, f *upFlags, log *slog.Logger) []component.Part {
	if _, err := registry.FindBinary(); err != nil {
		log.Warn("functions are off: no registry binary (make deps installs it)", "err", err)
		return nil
	}
	regAddr := registryAddress(f)
	return []component.Part{
		component.FuncReady("registry", func(ctx context.Context, ready func()) error {
			r, err := registry.New(registry.Config{Dir: registryDir(f),
				Address: ":" + strconv.Itoa(registry.DefaultPort), Logger: log, Ready: ready})
			if err != nil {
				return err
			}
			return r.Start(ctx)
		}),
		component.Func("registry service", func(ctx context.Context) error {
			client, _, err := componentClients(*cp, authz.UserHostServices)
			if err != nil {
				return err
			}
			return hostservice.Publish(ctx, hostservice.PublishConfig{Client: client, NodeName: f.nodeName, Logger: log,
				Service: hostservice.Service{Namespace: "kube-system", Name: registry.ServiceName, ManagedBy: "registry.minik8s.io",
					Ports: []hostservice.Port{{Name: "http", Protocol: "TCP", Port: registry.DefaultPort, TargetPort: registry.DefaultPort}}}})
		}),
		component.FuncReady("functions", func(ctx context.Context, ready func()) error {
			client, dyn, err := componentClients(*cp, authz.UserFunctions)
			if err != nil {
				return err
			}
			return serverless.Run(ctx, serverless.Config{Client: client, Dynamic: dyn, Registry: regAddr, RegistryDir: registryDir(f),
				NodeName: f.nodeName, Logger: log, Ready: ready})
		}),
	}
}

// sharedStorageAddon is the shared file system (pkg/glusterfs) on this
// host: volumes of the StorageClass "shared" that pods on every node
// mount at once. Nodes reach it at the node's address. Off, with a
// warning, without GlusterFS's programs.
func sharedStorageAddon(cp *controlplane.ControlPlane, f *upFlags, log *slog.Logger) []component.Part {
	if _, err := glusterfs.FindServer(); err != nil {
		log.Warn("shared volumes (StorageClass shared) are off", "err", err)
		return nil
	}
	advertise, err := netip.ParseAddr(f.nodeIP)
	if err != nil {
		log.Warn("shared volumes (StorageClass shared) are off", "err", fmt.Errorf("node IP: %w", err))
		return nil
	}
	return []component.Part{component.FuncReady("shared storage", func(ctx context.Context, ready func()) error {
		client, _, err := componentClients(*cp, authz.UserSharedStorage)
		if err != nil {
			return err
		}
		return glusterfs.Run(ctx, glusterfs.Config{Client: client, Dir: filepath.Join(f.dataDir, "glusterfs"), Bundle: cp.Bundle,
			Advertise: advertise, Logger: log, Ready: ready})
	})}
}

func registryDir(f *upFlags) string { return filepath.Join(f.dataDir, "registry") }

// registryAddress is where the builder pushes and every node pulls:
// the node's address, which nodes that join reach (loopback when the
// cluster has only this node); empty without the registry binary.
func registryAddress(f *upFlags) string {
	if _, err := registry.FindBinary(); err != nil {
		return ""
	}
	return net.JoinHostPort(f.nodeIP, strconv.Itoa(registry.DefaultPort))
}

// adminClients are the admin's clients of the control plane cp, for
// setting up the cluster itself (the control-plane node's role).
func adminClients(cp controlplane.ControlPlane) (kubernetes.Interface, dynamic.Interface, error) {
	return clientsFor(&rest.Config{Host: cp.URL, UserAgent: "minik8s-addons",
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.Bundle.CAPEM, CertData: cp.Bundle.AdminCertPEM, KeyData: cp.Bundle.AdminKeyPEM}})
}

// componentClients are an add-on's clients of the control plane cp, as
// user (one of authz's component users, each bound to its own role), with
// a client certificate the cluster CA issues at each start.
func componentClients(cp controlplane.ControlPlane, user string) (kubernetes.Interface, dynamic.Interface, error) {
	certPEM, keyPEM, err := cp.Bundle.IssueClientCert(user, nil, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("credential of %s: %w", user, err)
	}
	return clientsFor(&rest.Config{Host: cp.URL, UserAgent: "minik8s-addons",
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.Bundle.CAPEM, CertData: certPEM, KeyData: keyPEM}})
}

func clientsFor(rc *rest.Config) (kubernetes.Interface, dynamic.Interface, error) {
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	return client, dyn, nil
}

// hostAddresses are this host's IPv4 addresses, as /32 networks.
func hostAddresses() []string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			out = append(out, n.IP.String()+"/32")
		}
	}
	return out
}

// apiserverService is default/kubernetes for the apiserver at url.
func apiserverService(url, serviceCIDR string) (hostservice.Service, error) {
	u, err := neturl.Parse(url)
	if err != nil {
		return hostservice.Service{}, err
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return hostservice.Service{}, fmt.Errorf("apiserver port of %s: %w", url, err)
	}
	return controlplane.KubernetesService(serviceCIDR, int32(port))
}

// monitoringAddon is Prometheus (pkg/prometheus) on this host, which
// finds the cluster's targets in the API as a user of its own, and the
// Service kube-system/prometheus that leads pods to it. Off, with a
// warning, without a prometheus binary that discovers Kubernetes
// targets. The parts after it do not wait for Prometheus to be ready:
// nothing needs it to be.
func monitoringAddon(cp *controlplane.ControlPlane, f *upFlags, log *slog.Logger) []component.Part {
	if _, err := prometheus.FindBinary(); err != nil {
		log.Warn("monitoring is off", "err", err)
		return nil
	}
	return []component.Part{
		component.Func("monitoring", func(ctx context.Context) error {
			return prometheus.Run(ctx, prometheus.Config{Dir: filepath.Join(f.dataDir, "prometheus"), APIServer: cp.URL,
				Bundle: cp.Bundle, Logger: log})
		}),
		component.Func("monitoring service", func(ctx context.Context) error {
			client, _, err := componentClients(*cp, authz.UserHostServices)
			if err != nil {
				return err
			}
			return hostservice.Publish(ctx, hostservice.PublishConfig{Client: client, NodeName: f.nodeName, Logger: log,
				Service: prometheus.Service(prometheus.DefaultPort)})
		}),
	}
}
