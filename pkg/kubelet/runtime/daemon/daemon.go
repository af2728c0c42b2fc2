package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/containerd"
)

// Defaults of Config, the paths a packaged containerd uses, so that `ctr` and
// other tools find the daemon minik8s starts.
const (
	DefaultAddress = "/run/containerd/containerd.sock"
	DefaultRoot    = "/var/lib/containerd"
	DefaultState   = "/run/containerd"
	DefaultDir     = "/run/minik8s/containerd"
)

// Config says where the daemon listens and keeps its data.
type Config struct {
	// Address is the containerd gRPC socket. Default DefaultAddress.
	Address string
	// Root and State are containerd's persistent and runtime directories.
	Root, State string
	// Dir holds the generated config.toml, containerd.log and the lock that
	// serialises concurrent Ensure calls (parallel test packages). Default DefaultDir.
	Dir string
	// Binary is the containerd executable. Default "containerd" from PATH.
	Binary string
	// ReadyTimeout bounds the wait for a started daemon to answer. Default 30s.
	ReadyTimeout time.Duration
}

func (c *Config) setDefaults() {
	if c.Address == "" {
		c.Address = DefaultAddress
	}
	if c.Root == "" {
		c.Root = DefaultRoot
	}
	if c.State == "" {
		c.State = DefaultState
	}
	if c.Dir == "" {
		c.Dir = DefaultDir
	}
	if c.Binary == "" {
		c.Binary = "containerd"
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = 30 * time.Second
	}
}

// Daemon is a containerd that answers on Address.
type Daemon struct {
	// Address is the socket it answers on.
	Address string
	// Started is true when Ensure started it; false when one was already running.
	Started bool
	// Pid of the started daemon (0 when not Started).
	Pid int
	// LogPath is the started daemon's log file.
	LogPath string

	exited chan struct{}
}

// configTOML is the whole daemon configuration: the defaults of containerd
// (runc through the io.containerd.runc.v2 shim, cgroupfs, the overlayfs
// snapshotter) with the CRI plugin disabled, since minik8s' kubelet drives
// containerd through its Go client and does its own CNI.
const configTOML = `version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]

[grpc]
  address = %q
`

// Running reports whether a containerd answers on address.
func Running(ctx context.Context, address string) bool {
	if _, err := os.Stat(address); err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	client, err := containerd.New(address, containerd.WithTimeout(2*time.Second))
	if err != nil {
		return false
	}
	defer client.Close()
	_, err = client.Version(ctx)
	return err == nil
}

// Ensure returns the containerd answering on cfg.Address, starting one when
// none does. A started daemon runs in its own session with its output in
// Dir/containerd.log, so it outlives the calling process (containers keep
// running across a kubelet restart); Stop ends it.
func Ensure(ctx context.Context, cfg Config) (*Daemon, error) {
	cfg.setDefaults()
	if Running(ctx, cfg.Address) {
		return &Daemon{Address: cfg.Address}, nil
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("containerd dir: %w", err)
	}
	unlock, err := lock(ctx, filepath.Join(cfg.Dir, "lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Someone holding the lock may have started one meanwhile.
	if Running(ctx, cfg.Address) {
		return &Daemon{Address: cfg.Address}, nil
	}
	bin, err := exec.LookPath(cfg.Binary)
	if err != nil {
		return nil, fmt.Errorf("no containerd running on %s and none to start (install the containerd package; hack/install-deps.sh does): %w", cfg.Address, err)
	}
	confPath := filepath.Join(cfg.Dir, "config.toml")
	if err := os.WriteFile(confPath, fmt.Appendf(nil, configTOML, cfg.Root, cfg.State, cfg.Address), 0o644); err != nil {
		return nil, fmt.Errorf("write containerd config: %w", err)
	}
	logPath := filepath.Join(cfg.Dir, "containerd.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("containerd log: %w", err)
	}
	defer logFile.Close()
	// A stale socket from a daemon that died keeps a new one from listening.
	_ = os.Remove(cfg.Address)

	cmd := exec.Command(bin, "--config", confPath, "--address", cfg.Address)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Env = append(os.Environ(), "PATH="+pathWithSbin())
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	d := &Daemon{Address: cfg.Address, Started: true, Pid: cmd.Process.Pid, LogPath: logPath, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(d.exited)
	}()

	deadline := time.Now().Add(cfg.ReadyTimeout)
	for !Running(ctx, cfg.Address) {
		select {
		case <-d.exited:
			return nil, fmt.Errorf("containerd exited at start: %s", tail(logPath))
		case <-ctx.Done():
			_ = d.Stop(context.Background())
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = d.Stop(context.Background())
			return nil, fmt.Errorf("containerd did not answer on %s within %s: %s", cfg.Address, cfg.ReadyTimeout, tail(logPath))
		}
	}
	return d, nil
}

// Stop ends a daemon that Ensure started (SIGTERM, then SIGKILL after 10s);
// it does nothing for one that was already running. Containers keep running:
// their shims do not depend on the daemon.
func (d *Daemon) Stop(ctx context.Context) error {
	if d == nil || !d.Started {
		return nil
	}
	if err := syscall.Kill(d.Pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop containerd: %w", err)
	}
	select {
	case <-d.exited:
		return nil
	case <-time.After(10 * time.Second):
	case <-ctx.Done():
	}
	_ = syscall.Kill(d.Pid, syscall.SIGKILL)
	<-d.exited
	return nil
}

// lock takes an exclusive flock on path, waiting for ctx.
func lock(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("containerd lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("containerd lock: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pathWithSbin is PATH with the sbin directories, where Debian installs runc.
func pathWithSbin() string {
	path := os.Getenv("PATH")
	for _, dir := range []string{"/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/bin", "/bin"} {
		if !strings.Contains(":"+path+":", ":"+dir+":") {
			path += ":" + dir
		}
	}
	return strings.TrimPrefix(path, ":")
}

// tail returns the last lines of a log file, for error messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return "log " + path + ":\n" + strings.Join(lines, "\n")
}
