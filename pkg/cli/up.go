package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/minik8s/minik8s/pkg/apiserver"
	"github.com/minik8s/minik8s/pkg/controlplane"
	"github.com/minik8s/minik8s/pkg/dns"
	"github.com/minik8s/minik8s/pkg/gateway"
	"github.com/minik8s/minik8s/pkg/hostservice"
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
			clusterDNS, stopAddons, err := startAddons(ctx, cp, f, log)
			if err != nil {
				return err
			}
			defer stopAddons()
			return node.Run(ctx, node.Config{
				ClusterDNS: clusterDNS, ClusterDomain: dns.DefaultClusterDomain, ProxyMode: f.proxyMode,
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
	fl.StringVar(&f.proxyMode, "proxy-mode", "auto", "how the node's service proxy programs the kernel: auto (nftables, else iptables), nftables or iptables")
	return cmd
}

// startAddons runs the cluster's add-ons on this host in the background:
// the gateway's nginx (pkg/gateway) and CoreDNS (pkg/dns), which serves
// the gateway's host names too (see docs/design/0007-dns.md and
// 0009-gateway.md). It returns the nameservers for the kubelet: the
// kube-dns clusterIP, or none (the host's resolvers) when there is no
// coredns binary. stop ends them and waits.
func startAddons(ctx context.Context, cp controlplane.ControlPlane, f *upFlags, log *slog.Logger) (nameservers []string, stop func(), err error) {
	rc := &rest.Config{Host: cp.URL, UserAgent: "minik8s-addons",
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.Bundle.CAPEM, CertData: cp.Bundle.AdminCertPEM, KeyData: cp.Bundle.AdminKeyPEM}}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	stop = func() { cancel(); wg.Wait() }
	run := func(name string, start func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := start(ctx); err != nil {
				log.Error(name+" stopped", "err", err)
			}
		}()
	}
	run("control-plane role", func(ctx context.Context) error {
		return controlplane.MarkControlPlaneNode(ctx, client, f.nodeName)
	})
	// default/kubernetes: pods reach this apiserver at the node's pod
	// gateway, as in-cluster clients expect.
	if svc, err := apiserverService(cp.URL, f.serviceCIDR); err != nil {
		log.Warn("no default/kubernetes service", "err", err)
	} else {
		run("kubernetes service", func(ctx context.Context) error {
			return hostservice.Publish(ctx, hostservice.PublishConfig{Client: client, Service: svc, NodeName: f.nodeName, Logger: log})
		})
	}
	// Pods, and this host itself: its connections to a clusterIP leave
	// from one of its own addresses.
	hostNets := hostAddresses()
	allow := append([]string{f.clusterCIDR, "127.0.0.0/8"}, hostNets...)
	var hostsFile string
	gw, err := gateway.New(gateway.Config{Client: client, Dynamic: dyn, Dir: filepath.Join(f.dataDir, "gateway"),
		NodeName: f.nodeName, AllowNets: allow, Logger: log})
	if err != nil {
		log.Warn("gateway is off: DNSRecords and Ingresses are not served", "err", err)
	} else {
		hostsFile = gw.HostsFile()
		run("gateway", gw.Start)
	}
	if _, err := dns.FindBinary(); err != nil {
		log.Warn("cluster DNS is off: no coredns binary (make deps installs it); pods use the host's resolvers", "err", err)
		return nil, stop, nil
	}
	clusterIP, err := dns.ServiceIP(f.serviceCIDR)
	if err != nil {
		stop()
		return nil, nil, err
	}
	run("cluster DNS", func(ctx context.Context) error {
		return dns.RunOnHost(ctx, dns.HostConfig{
			DataDir: f.dataDir, APIServer: cp.URL, Bundle: cp.Bundle, Client: client, NodeName: f.nodeName,
			ServiceCIDR: f.serviceCIDR, ClusterCIDR: f.clusterCIDR, AllowNets: hostNets, HostsFile: hostsFile, Logger: log,
		})
	})
	return []string{clusterIP.String()}, stop, nil
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
