package prometheus

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"log/slog"
	"net"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/hostservice"
	"github.com/minik8s/minik8s/pkg/pki"
	"github.com/minik8s/minik8s/pkg/supervisor"
)

// Names and defaults.
const (
	// User is the name in Prometheus' client certificate: the identity it
	// reads the API and scrapes through the apiserver with.
	User = "system:minik8s:prometheus"
	// DefaultPort is Prometheus' port on its host, and the port of its
	// Service.
	DefaultPort = 9090
	// DefaultNodeExporterPort is where each node's node exporter listens.
	DefaultNodeExporterPort = 9100
	// DefaultScrapeInterval and DefaultRetention are the cluster's
	// (Prometheus' own are 1m and 15d).
	DefaultScrapeInterval = 15 * time.Second
	DefaultRetention      = 7 * 24 * time.Hour
	// ServiceNamespace and ServiceName name the Service pods reach
	// Prometheus by.
	ServiceNamespace = "kube-system"
	ServiceName      = "prometheus"

	// Files under Config.Dir.
	ConfigFile = "prometheus.yml"
	LogFile    = "prometheus.log"
	DataDir    = "data"
	tlsDir     = "tls"
	pidFile    = "prometheus.supervisor.pid"
)

// ErrNoBinary is returned when no prometheus executable with Kubernetes
// service discovery is found.
var ErrNoBinary = errors.New("no prometheus with Kubernetes service discovery on PATH or in $(go env GOPATH)/bin " +
	"(Debian's package is built without it; make deps builds one into $(go env GOPATH)/bin)")

// FindBinary looks for a prometheus executable that discovers Kubernetes
// targets: on PATH, then in the Go install directories, where make deps
// builds one. Debian's prometheus is passed over: Debian builds it
// without Kubernetes service discovery.
func FindBinary() (string, error) {
	var candidates []string
	if p, err := exec.LookPath("prometheus"); err == nil {
		candidates = append(candidates, p)
	}
	if gp := os.Getenv("GOPATH"); gp != "" {
		candidates = append(candidates, filepath.Join(filepath.SplitList(gp)[0], "bin", "prometheus"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates, filepath.Join(home, "go", "bin", "prometheus"))
	}
	candidates = append(candidates, "/root/go/bin/prometheus")
	for _, p := range candidates {
		if discoversKubernetes(p) {
			return p, nil
		}
	}
	return "", ErrNoBinary
}

// discoversKubernetes reports whether the Go program at path was built
// with client-go, which Prometheus' Kubernetes service discovery is built
// on. (Debian's build records no modules at all.)
func discoversKubernetes(path string) bool {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(info.Deps, func(m *debug.Module) bool { return m.Path == "k8s.io/client-go" })
}

// Config is one Prometheus.
type Config struct {
	// Dir holds prometheus.yml, the certificates, the data, the log and
	// the pid file (required).
	Dir string
	// APIServer is the apiserver's URL, where Prometheus discovers its
	// targets and scrapes the apiserver and, through it, the kubelets
	// (required).
	APIServer string
	// Bundle is the cluster's CA: Prometheus trusts it and it issues
	// Prometheus' client certificate (required).
	Bundle *pki.Bundle
	// Binary is the prometheus executable (default FindBinary).
	Binary string
	// Listen is Prometheus' --web.listen-address, host:port (default
	// ":DefaultPort"). Readiness is checked on loopback when the host is
	// empty or unspecified.
	Listen string
	// ScrapeInterval is how often every target is scraped (default
	// DefaultScrapeInterval).
	ScrapeInterval time.Duration
	// Retention is how long samples are kept (default DefaultRetention).
	Retention time.Duration
	// NodeExporterPort is where the node exporter listens on each node's
	// InternalIP (default DefaultNodeExporterPort).
	NodeExporterPort int
	// RestartBackoff is the first wait before restarting a Prometheus
	// that died (default 1s, doubling to 30s).
	RestartBackoff time.Duration
	Logger         *slog.Logger
	// Ready, when set, is called once, when Prometheus first answers
	// GET /-/ready with 200.
	Ready func()
}

func (c *Config) complete() error {
	if c.Dir == "" {
		return errors.New("prometheus: a directory is required")
	}
	// Prometheus runs in Dir: the paths it is given must not be relative.
	dir, err := filepath.Abs(c.Dir)
	if err != nil {
		return fmt.Errorf("prometheus: directory %q: %w", c.Dir, err)
	}
	c.Dir = dir
	if c.APIServer == "" || c.Bundle == nil {
		return errors.New("prometheus: the apiserver's URL and the cluster's CA are required")
	}
	if _, err := apiserverAddress(c.APIServer); err != nil {
		return err
	}
	if c.Binary == "" {
		p, err := FindBinary()
		if err != nil {
			return err
		}
		c.Binary = p
	}
	if c.Listen == "" {
		c.Listen = ":" + strconv.Itoa(DefaultPort)
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("prometheus: listen address %q: %w", c.Listen, err)
	}
	if c.ScrapeInterval == 0 {
		c.ScrapeInterval = DefaultScrapeInterval
	}
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	// Prometheus' durations count whole milliseconds.
	if c.ScrapeInterval < time.Millisecond || c.Retention < time.Millisecond {
		return fmt.Errorf("prometheus: scrape interval %s and retention %s must be at least 1ms", c.ScrapeInterval, c.Retention)
	}
	if c.NodeExporterPort == 0 {
		c.NodeExporterPort = DefaultNodeExporterPort
	}
	if c.NodeExporterPort < 0 || c.NodeExporterPort > 65535 {
		return fmt.Errorf("prometheus: node exporter port %d", c.NodeExporterPort)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Run writes Prometheus' files, runs it and restarts it whenever it
// exits, until ctx ends; then it stops it (SIGTERM, SIGKILL after 5s) and
// returns nil. A Prometheus an earlier run in the same Dir left running
// is ended first. Ready is called once Prometheus first answers.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.complete(); err != nil {
		return err
	}
	log := cfg.Logger.With("component", "prometheus")
	if err := os.MkdirAll(filepath.Join(cfg.Dir, DataDir), 0o700); err != nil {
		return fmt.Errorf("prometheus dir: %w", err)
	}
	tls, err := writeIdentity(filepath.Join(cfg.Dir, tlsDir), cfg.Bundle)
	if err != nil {
		return err
	}
	yml, err := configFile(cfg, tls)
	if err != nil {
		return err
	}
	configPath := filepath.Join(cfg.Dir, ConfigFile)
	if err := pki.WriteFileAtomic(configPath, yml); err != nil {
		return fmt.Errorf("prometheus config: %w", err)
	}
	proc, err := supervisor.New(supervisor.Config{
		Name: "prometheus", Path: cfg.Binary, Dir: cfg.Dir, Logger: cfg.Logger, // it adds component=prometheus
		Args: []string{
			"--config.file=" + configPath,
			"--web.listen-address=" + cfg.Listen,
			"--storage.tsdb.path=" + filepath.Join(cfg.Dir, DataDir),
			"--storage.tsdb.retention.time=" + promDuration(cfg.Retention),
		},
		LogPath: filepath.Join(cfg.Dir, LogFile), PIDFile: filepath.Join(cfg.Dir, pidFile),
		RestartBackoff: cfg.RestartBackoff,
	})
	if err != nil {
		return err
	}
	// Cancelled before the wait: whatever returns, the probe stops.
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Go(func() {
		if supervisor.WaitHTTP(ctx, readyURL(cfg.Listen), 200*time.Millisecond) == nil {
			log.Info("ready", "address", cfg.Listen, "dir", cfg.Dir)
			if cfg.Ready != nil {
				cfg.Ready()
			}
		}
	})
	return proc.Start(ctx)
}

// Service is kube-system/prometheus for hostservice.Publish: port
// DefaultPort, named http, to targetPort on the host Prometheus runs on.
func Service(targetPort int32) hostservice.Service {
	return hostservice.Service{Namespace: ServiceNamespace, Name: ServiceName, ManagedBy: "prometheus.minik8s.io",
		Labels: map[string]string{"app.kubernetes.io/name": "prometheus"},
		Ports:  []hostservice.Port{{Name: "http", Protocol: corev1.ProtocolTCP, Port: DefaultPort, TargetPort: targetPort}}}
}

// tlsFiles are the files of Prometheus' identity.
type tlsFiles struct {
	CA, Cert, Key string
}

// writeIdentity writes the cluster's CA and a client certificate for
// User, new at each start, into dir (all 0600).
func writeIdentity(dir string, b *pki.Bundle) (tlsFiles, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tlsFiles{}, fmt.Errorf("prometheus tls dir: %w", err)
	}
	certPEM, keyPEM, err := b.IssueClientCert(User, nil, 0)
	if err != nil {
		return tlsFiles{}, fmt.Errorf("prometheus: client certificate: %w", err)
	}
	files := tlsFiles{CA: filepath.Join(dir, "ca.crt"), Cert: filepath.Join(dir, "client.crt"), Key: filepath.Join(dir, "client.key")}
	for path, data := range map[string][]byte{files.CA: b.CAPEM, files.Cert: certPEM, files.Key: keyPEM} {
		if err := pki.WriteFileAtomic(path, data); err != nil {
			return tlsFiles{}, fmt.Errorf("prometheus: %w", err)
		}
	}
	return files, nil
}

// apiserverAddress is the host:port of the apiserver at url.
func apiserverAddress(url string) (string, error) {
	u, err := neturl.Parse(url)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("prometheus: apiserver URL %q: want https://host:port", url)
	}
	if u.Port() != "" {
		return u.Host, nil
	}
	port := "443"
	if u.Scheme == "http" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// localAddress is listen as reached from this host: loopback for an
// empty or unspecified host.
func localAddress(listen string) string {
	host, port, _ := net.SplitHostPort(listen)
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, port)
}

func readyURL(listen string) string { return "http://" + localAddress(listen) + "/-/ready" }
