package registry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minik8s/minik8s/pkg/pki"
	"github.com/minik8s/minik8s/pkg/supervisor"
)

// Names and defaults.
const (
	// DefaultPort is the registry's port on its host.
	DefaultPort = 5000
	// ServiceName is the registry's Service in kube-system.
	ServiceName = "minik8s-registry"

	binaryName = "registry"
)

// Config describes the registry.
type Config struct {
	// Dir holds config.yml, the data, the log and the pid file (required).
	Dir string
	// Address is where the registry listens, host:port ("127.0.0.1:5000",
	// ":5000"); default ":DefaultPort".
	Address string
	// Binary is the registry executable (default FindBinary).
	Binary string
	// NetNS is the network namespace to run the registry in; empty: ours.
	// Readiness is checked from ours, so Address must be reachable from
	// here.
	NetNS  string
	Logger *slog.Logger
	// Ready, when set, is called once, when the registry first answers
	// GET /v2/ with 200.
	Ready func()
}

// Registry supervises one distribution registry.
type Registry struct {
	cfg        Config
	log        *slog.Logger
	configPath string
	logPath    string
	probeURL   string
	secret     string
}

// FindBinary looks for the registry executable on PATH, then in the Go
// install directories.
func FindBinary() (string, error) {
	if p, ok := supervisor.FindGoProgram(binaryName); ok {
		return p, nil
	}
	return "", errors.New("registry binary not found on PATH or in $(go env GOPATH)/bin (make deps installs it)")
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Registry, error) {
	if cfg.Dir == "" {
		return nil, errors.New("registry: a directory is required")
	}
	if cfg.Address == "" {
		cfg.Address = ":" + strconv.Itoa(DefaultPort)
	}
	host, port, err := net.SplitHostPort(cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("registry: address %q: %w", cfg.Address, err)
	}
	if cfg.Binary == "" {
		p, err := FindBinary()
		if err != nil {
			return nil, err
		}
		cfg.Binary = p
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	// The secret signs upload state; a fresh one per run only costs
	// uploads that a restart interrupts.
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	return &Registry{
		cfg:        cfg,
		log:        cfg.Logger.With("component", "registry"),
		configPath: filepath.Join(cfg.Dir, "config.yml"),
		logPath:    filepath.Join(cfg.Dir, "registry.log"),
		probeURL:   "http://" + net.JoinHostPort(probeHost(host), port) + "/v2/",
		secret:     hex.EncodeToString(secret),
	}, nil
}

// probeHost is the host to check readiness on: loopback for a registry
// listening on all addresses.
func probeHost(host string) string {
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if ip != nil && ip.To4() == nil {
			return "::1"
		}
		return "127.0.0.1"
	}
	return host
}

// DataDir is where the registry stores images.
func (r *Registry) DataDir() string { return filepath.Join(r.cfg.Dir, "data") }

// LogPath is the registry's log file.
func (r *Registry) LogPath() string { return r.logPath }

// Start writes config.yml, runs the registry and restarts it whenever it
// exits, until ctx ends; then it stops it and returns nil. Ready is
// called once the registry first answers.
func (r *Registry) Start(ctx context.Context) error {
	if err := os.MkdirAll(r.DataDir(), 0o700); err != nil {
		return fmt.Errorf("registry dir: %w", err)
	}
	if err := pki.WriteFileAtomic(r.configPath, []byte(r.config())); err != nil {
		return fmt.Errorf("registry config: %w", err)
	}
	proc, err := supervisor.New(supervisor.Config{
		Name: "registry", Path: r.cfg.Binary, Args: []string{"serve", r.configPath}, Dir: r.cfg.Dir,
		LogPath: r.logPath, PIDFile: filepath.Join(r.cfg.Dir, "registry.supervisor.pid"),
		NetNS: r.cfg.NetNS, Logger: r.cfg.Logger, // it adds component=registry
		// distribution v3 exports traces to localhost:4318 unless told not to.
		Env: []string{"OTEL_TRACES_EXPORTER=none"},
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	if r.cfg.Ready != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if supervisor.WaitHTTP(ctx, r.probeURL, 100*time.Millisecond) == nil {
				r.log.Info("ready", "address", r.cfg.Address)
				r.cfg.Ready()
			}
		}()
	}
	return proc.Start(ctx)
}

// config is the registry's config.yml: filesystem storage under
// DataDir with deletes allowed, plain HTTP, no auth. Its access log is
// off: every blob request would be a line. The storage health check is
// off too: the storage is a local directory, and the check would only
// add periodic writes.
func (r *Registry) config() string {
	return fmt.Sprintf(`version: 0.1
log:
  level: info
  formatter: text
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %q
  delete:
    enabled: true
http:
  addr: %q
  secret: %q
health:
  storagedriver:
    enabled: false
`, r.DataDir(), r.cfg.Address, r.secret)
}

// RemoveRepository removes what is left of a repository in the storage
// of the registry at dir, once its manifests are deleted through the API,
// so the catalog no longer lists it. Blobs stay until a garbage
// collection. A missing repository is no error. (The registry keeps no
// cache of blob descriptors, see config, so it cannot remember links
// that this removes.)
func RemoveRepository(dir, repository string) error {
	clean := path.Clean(repository)
	if clean != repository || clean == "." || strings.HasPrefix(clean, "/") || strings.HasPrefix(clean, "..") {
		return fmt.Errorf("repository %q: not a repository name", repository)
	}
	return os.RemoveAll(filepath.Join(dir, "data", "docker", "registry", "v2", "repositories", filepath.FromSlash(clean)))
}
