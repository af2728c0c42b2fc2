package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/minik8s/minik8s/pkg/pki"
	"github.com/minik8s/minik8s/pkg/supervisor"
)

// Defaults.
const (
	// DefaultPort is where CoreDNS listens on the host (UDP and TCP). Not
	// 53, so that it never clashes with a resolver of the host's own
	// (systemd-resolved, dnsmasq); pods never see it, they ask the
	// kube-dns clusterIP on port 53 and the proxy DNATs to this port.
	DefaultPort = 10053
	// DefaultReadyPort and DefaultHealthPort serve CoreDNS's /ready and
	// /health on 127.0.0.1.
	DefaultReadyPort  = 18181
	DefaultHealthPort = 18080
	// DefaultMetricsPort is where RunOnHost's CoreDNS serves its
	// Prometheus metrics (the prometheus plugin's, and Kubernetes'
	// kube-dns Service's, port).
	DefaultMetricsPort = 9153
	// DefaultClusterDomain is the pods' DNS domain.
	DefaultClusterDomain = "cluster.local"
	// User is the CoreDNS client certificate's user name.
	User = "system:coredns"

	kubeconfigContext = "coredns"
	binaryName        = "coredns"
)

// ErrNoBinary is returned by New when the coredns binary is not found.
var ErrNoBinary = errors.New("coredns binary not found (hack/install-deps.sh installs it into $(go env GOPATH)/bin)")

// Config is what a Server is built from.
type Config struct {
	// Binary is the coredns executable. Default: "coredns" on PATH, else
	// $GOPATH/bin/coredns or ~/go/bin/coredns.
	Binary string
	// Dir holds the Corefile, the kubeconfig and coredns.log (required).
	Dir string
	// Listen is CoreDNS's address, host:port (default 0.0.0.0:DefaultPort).
	// A specific host is bound with the bind plugin.
	Listen string
	// ReadyAddress and HealthAddress are where /ready and /health are
	// served (default 127.0.0.1:DefaultReadyPort, 127.0.0.1:DefaultHealthPort;
	// HealthAddress "-" turns health off).
	ReadyAddress  string
	HealthAddress string
	// MetricsAddress is where CoreDNS serves /metrics (the prometheus
	// plugin), host:port; empty: no metrics.
	MetricsAddress string
	// ClusterDomain defaults to DefaultClusterDomain.
	ClusterDomain string
	// Upstream is where other names are forwarded: a resolv.conf path or
	// addresses. Default /etc/resolv.conf when it names a nameserver;
	// "-": no forwarding.
	Upstream string
	// HostsFile, when set, is a hosts(5) file served before the cluster
	// names and re-read when it changes (the gateway's host names).
	HostsFile string
	// AllowNets, when set, are the only client networks answered (CoreDNS's
	// acl plugin), so a host-wide listener is no open resolver.
	AllowNets []string
	// APIServer, CAPEM, CertPEM and KeyPEM are how CoreDNS reaches the
	// apiserver (required): a client certificate issued by the cluster CA,
	// see IssueCredentials.
	APIServer              string
	CAPEM, CertPEM, KeyPEM []byte
	// RestartBackoff is the first wait before restarting a CoreDNS that
	// died (default 1s, doubling to 30s).
	RestartBackoff time.Duration
	Logger         *slog.Logger
}

// IssueCredentials fills cfg's apiserver credentials from the cluster's
// PKI: a client certificate for User.
func IssueCredentials(cfg *Config, apiserverURL string, b *pki.Bundle) error {
	certPEM, keyPEM, err := b.IssueClientCert(User, nil, 0)
	if err != nil {
		return fmt.Errorf("dns: client certificate: %w", err)
	}
	cfg.APIServer, cfg.CAPEM, cfg.CertPEM, cfg.KeyPEM = apiserverURL, b.CAPEM, certPEM, keyPEM
	return nil
}

// FindBinary looks for the coredns executable on PATH, then in the Go
// install directories.
func FindBinary() (string, error) {
	if p, ok := supervisor.FindGoProgram(binaryName); ok {
		return p, nil
	}
	return "", ErrNoBinary
}

func (c *Config) complete() error {
	if c.Dir == "" {
		return errors.New("dns: a directory is required")
	}
	if c.APIServer == "" || len(c.CAPEM) == 0 || len(c.CertPEM) == 0 || len(c.KeyPEM) == 0 {
		return errors.New("dns: apiserver URL and credentials are required")
	}
	if c.Binary == "" {
		p, err := FindBinary()
		if err != nil {
			return err
		}
		c.Binary = p
	}
	if c.Listen == "" {
		c.Listen = net.JoinHostPort("0.0.0.0", strconv.Itoa(DefaultPort))
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("dns: listen address %q: %w", c.Listen, err)
	}
	if c.ReadyAddress == "" {
		c.ReadyAddress = net.JoinHostPort("127.0.0.1", strconv.Itoa(DefaultReadyPort))
	}
	switch c.HealthAddress {
	case "":
		c.HealthAddress = net.JoinHostPort("127.0.0.1", strconv.Itoa(DefaultHealthPort))
	case "-":
		c.HealthAddress = ""
	}
	if c.MetricsAddress != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddress); err != nil {
			return fmt.Errorf("dns: metrics address %q: %w", c.MetricsAddress, err)
		}
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = DefaultClusterDomain
	}
	switch c.Upstream {
	case "":
		if hasNameserver("/etc/resolv.conf") {
			c.Upstream = "/etc/resolv.conf"
		}
	case "-":
		c.Upstream = ""
	}
	if c.RestartBackoff <= 0 {
		c.RestartBackoff = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Server supervises one CoreDNS process.
type Server struct {
	cfg                                   Config
	corefilePath, kubeconfigPath, logPath string
}

// New validates cfg and fills its defaults. It returns an error wrapping
// ErrNoBinary when no coredns binary is found and none is configured.
func New(cfg Config) (*Server, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	return &Server{
		cfg:            cfg,
		corefilePath:   filepath.Join(cfg.Dir, "Corefile"),
		kubeconfigPath: filepath.Join(cfg.Dir, "coredns.kubeconfig"),
		logPath:        filepath.Join(cfg.Dir, "coredns.log"),
	}, nil
}

// Config is the server's completed configuration.
func (s *Server) Config() Config { return s.cfg }

// LogPath is CoreDNS's log file.
func (s *Server) LogPath() string { return s.logPath }

// Start writes the Corefile and kubeconfig, runs CoreDNS and restarts it
// (with backoff) whenever it exits, until ctx ends; then it stops CoreDNS
// (SIGTERM, SIGKILL after 5s) and returns nil. A CoreDNS that an earlier
// run in the same Dir left running (SIGKILLed before it could stop it)
// is ended first.
func (s *Server) Start(ctx context.Context) error {
	if err := s.writeFiles(); err != nil {
		return err
	}
	proc, err := supervisor.New(supervisor.Config{
		Name: "coredns", Path: s.cfg.Binary, Args: []string{"-conf", s.corefilePath}, Dir: s.cfg.Dir,
		LogPath: s.logPath, RestartBackoff: s.cfg.RestartBackoff, Logger: s.cfg.Logger,
		PIDFile: filepath.Join(s.cfg.Dir, "coredns.supervisor.pid"),
	})
	if err != nil {
		return err
	}
	return proc.Start(ctx)
}

// WaitReady polls CoreDNS's /ready until it answers 200 (its kubernetes
// plugin has synced with the apiserver) or ctx ends.
func (s *Server) WaitReady(ctx context.Context) error {
	if err := supervisor.WaitHTTP(ctx, "http://"+s.cfg.ReadyAddress+"/ready", 200*time.Millisecond); err != nil {
		return fmt.Errorf("coredns not ready (see %s): %w", s.logPath, err)
	}
	return nil
}

func (s *Server) writeFiles() error {
	if err := os.MkdirAll(s.cfg.Dir, 0o700); err != nil {
		return fmt.Errorf("dns dir: %w", err)
	}
	kc, err := kubeconfig(s.cfg)
	if err != nil {
		return err
	}
	if err := pki.WriteFileAtomic(s.kubeconfigPath, kc); err != nil {
		return fmt.Errorf("coredns kubeconfig: %w", err)
	}
	if err := pki.WriteFileAtomic(s.corefilePath, []byte(corefile(s.cfg, s.kubeconfigPath))); err != nil {
		return fmt.Errorf("corefile: %w", err)
	}
	return nil
}

// kubeconfig is CoreDNS's kubeconfig: one cluster, user and context, the
// certificates embedded.
func kubeconfig(cfg Config) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[kubeconfigContext] = &clientcmdapi.Cluster{Server: cfg.APIServer, CertificateAuthorityData: cfg.CAPEM}
	kc.AuthInfos[User] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertPEM, ClientKeyData: cfg.KeyPEM}
	kc.Contexts[kubeconfigContext] = &clientcmdapi.Context{Cluster: kubeconfigContext, AuthInfo: User}
	kc.CurrentContext = kubeconfigContext
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, fmt.Errorf("encode coredns kubeconfig: %w", err)
	}
	return data, nil
}

// hasNameserver reports whether a resolv.conf names at least one server.
func hasNameserver(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(data)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "nameserver" {
			return true
		}
	}
	return false
}
