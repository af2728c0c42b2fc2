package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/kubernetes"

	"github.com/minik8s/minik8s/pkg/hostservice"
	"github.com/minik8s/minik8s/pkg/pki"
)

// HostConfig runs the cluster DNS on the host of a node (minik8s up).
type HostConfig struct {
	// DataDir is the cluster's data dir; CoreDNS's files go under DataDir/dns.
	DataDir string
	// APIServer and Bundle: where CoreDNS watches and the CA that issues
	// its client certificate.
	APIServer string
	Bundle    *pki.Bundle
	// Client writes the kube-dns Service and slice and reads the Node.
	Client kubernetes.Interface
	// NodeName is this host's node: CoreDNS is reached at its pod-bridge
	// gateway, unless Address is set.
	NodeName string
	// Address is where pods reach this host, when it is not a node (the
	// host's address on the nodes' network).
	Address netip.Addr
	// AllowNets are client networks answered besides the cluster CIDR and
	// loopback (the nodes' network when pods reach Address masqueraded).
	AllowNets []string
	// HostsFile, when set, is served first (the gateway's names).
	HostsFile string
	// ServiceCIDR gives the Service's clusterIP (ServiceIP); ClusterCIDR is
	// the only client network answered, besides loopback.
	ServiceCIDR, ClusterCIDR string
	// Port is CoreDNS's port on the host (default DefaultPort).
	Port int
	// MetricsPort is where CoreDNS serves /metrics on the host's
	// addresses (default DefaultMetricsPort); negative: no metrics.
	MetricsPort int
	Logger      *slog.Logger
}

// RunOnHost runs CoreDNS on all of the host's addresses (answering only
// pods and loopback), with its metrics on MetricsPort of the same
// addresses, and publishes kube-dns at the node's pod gateway, until ctx
// ends. Without a coredns binary it logs that cluster DNS is off and
// returns ErrNoBinary at once. When the metrics port is taken (another
// cluster's CoreDNS on this host) CoreDNS runs without metrics, with a
// warning: CoreDNS would not start at all otherwise.
func RunOnHost(ctx context.Context, cfg HostConfig) error {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
	}
	clusterIP, err := ServiceIP(cfg.ServiceCIDR)
	if err != nil {
		return fmt.Errorf("dns: %w", err)
	}
	ready, err := freeLoopbackAddr()
	if err != nil {
		return err
	}
	health, err := freeLoopbackAddr()
	if err != nil {
		return err
	}
	scfg := Config{
		Dir:    filepath.Join(cfg.DataDir, "dns"),
		Listen: net.JoinHostPort("0.0.0.0", strconv.Itoa(cfg.Port)), ReadyAddress: ready, HealthAddress: health,
		AllowNets: append([]string{cfg.ClusterCIDR, "127.0.0.0/8", "::1/128"}, cfg.AllowNets...), HostsFile: cfg.HostsFile, Logger: log,
	}
	var metricsPort int32
	if cfg.MetricsPort == 0 {
		cfg.MetricsPort = DefaultMetricsPort
	}
	if cfg.MetricsPort > 0 {
		// The metrics on the addresses (and so the family) CoreDNS serves
		// pods on.
		addr := net.JoinHostPort("0.0.0.0", strconv.Itoa(cfg.MetricsPort))
		if ln, err := net.Listen("tcp", addr); err != nil {
			log.Warn("CoreDNS runs without metrics: its metrics port is taken", "address", addr, "err", err)
		} else {
			_ = ln.Close()
			scfg.MetricsAddress, metricsPort = addr, int32(cfg.MetricsPort)
		}
	}
	if _, err := FindBinary(); err != nil {
		log.Warn("cluster DNS is off: no coredns binary (run hack/install-deps.sh); pods' lookups of cluster names will fail", "err", err)
		return err
	}
	if err := IssueCredentials(&scfg, cfg.APIServer, cfg.Bundle); err != nil {
		return err
	}
	srv, err := New(scfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	published := make(chan error, 1)
	go func() {
		published <- hostservice.Publish(ctx, hostservice.PublishConfig{Client: cfg.Client, Service: KubeDNS(clusterIP, int32(cfg.Port), metricsPort),
			Address: cfg.Address, NodeName: cfg.NodeName, Logger: log})
	}()
	err = srv.Start(ctx) // returns at once only when it cannot write its files
	cancel()
	return errors.Join(err, <-published)
}

// freeLoopbackAddr is a free 127.0.0.1 TCP port, for CoreDNS's /ready and
// /health (several clusters may share a host).
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("dns: pick a port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
