package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/minik8s/minik8s/pkg/component"
	"github.com/minik8s/minik8s/pkg/kubelet/network"
	"github.com/minik8s/minik8s/pkg/supervisor"
)

// DefaultNodeExporterPort is where a node's node exporter listens, on the
// node's InternalIP: the port Prometheus' node-exporter job scrapes
// (pkg/prometheus DefaultNodeExporterPort).
const DefaultNodeExporterPort = 9100

// defaultRootDir is the kubelet's root directory when Config.RootDir is
// empty (the local provider's default).
const defaultRootDir = "/var/lib/minik8s/kubelet"

// nodeExporterNames are the node exporter's executable names: Debian's
// package, then upstream's.
var nodeExporterNames = []string{"prometheus-node-exporter", "node_exporter"}

// FindNodeExporter looks for the node exporter on PATH (Debian installs
// /usr/bin/prometheus-node-exporter), then in the Go install directories.
func FindNodeExporter() (string, error) {
	for _, name := range nodeExporterNames {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	for _, name := range nodeExporterNames {
		if p, ok := supervisor.FindGoProgram(name); ok {
			return p, nil
		}
	}
	return "", errors.New("no prometheus-node-exporter on PATH (apt-get install prometheus-node-exporter)")
}

// nodeExporterArgs are the node exporter's flags: it listens on address
// only (the node's InternalIP, so that nodes sharing a host each have
// their own), and leaves out the collectors that fail on every scrape of
// a container host and say so in its log: systemd (no D-Bus in a
// container or netns; Debian's build turns it on) and rapl (the power
// counters are root-only or absent in VMs). The mounts of containers,
// pods and network namespaces are not file systems of the node.
func nodeExporterArgs(address string) []string {
	return []string{
		"--web.listen-address=" + address,
		"--no-collector.systemd",
		"--no-collector.rapl",
		"--collector.filesystem.mount-points-exclude=" +
			`^/(dev|proc|sys|run/credentials/.+|run/containerd/.+|run/netns/.+|var/lib/containerd/.+|var/lib/kubelet/.+|var/lib/minik8s/.+|var/lib/docker/.+|var/lib/containers/storage/.+)($|/)`,
	}
}

// nodeExporterPart runs the node exporter on cfg's NodeIP and
// NodeExporterPort, in the node's network namespace, under pkg/supervisor
// (restarted when it dies, its process group ended with us). It is nil,
// with a warning, when the port is off or there is no node exporter.
func nodeExporterPart(cfg *Config) component.Part {
	port := cfg.NodeExporterPort
	if port == 0 {
		port = DefaultNodeExporterPort
	}
	if port < 0 {
		return nil
	}
	log := cfg.Logger
	path, err := FindNodeExporter()
	if err != nil {
		log.Warn("node exporter is off: Prometheus' node-exporter target of this node stays down", "err", err)
		return nil
	}
	address := net.JoinHostPort(cfg.NodeIP, strconv.Itoa(port))
	root := cfg.RootDir
	if root == "" {
		root = defaultRootDir
	}
	return component.Func("node exporter", func(ctx context.Context) error {
		return runNodeExporter(ctx, path, address, root, cfg.HostNetNS, log)
	})
}

// runNodeExporter runs the node exporter at address until ctx ends. When
// address is taken already (several nodes on one host sharing its network
// namespace and address, or a node exporter of the host's own) there is
// one to scrape at that address: it logs so and runs none, rather than
// restart one that cannot listen.
func runNodeExporter(ctx context.Context, path, address, root, netns string, log *slog.Logger) error {
	inUse, err := addressInUse(address, netns)
	if err != nil {
		return fmt.Errorf("node exporter: %w", err)
	}
	if inUse {
		log.Warn("node exporter not started: its address is in use (another node on this address, or the host's own exporter, serves it)",
			"address", address)
		<-ctx.Done()
		return nil
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("node exporter: %w", err)
	}
	p, err := supervisor.New(supervisor.Config{
		Name: "node-exporter", Path: path, Args: nodeExporterArgs(address), Dir: root,
		LogPath: filepath.Join(root, "node-exporter.log"), PIDFile: filepath.Join(root, "node-exporter.pid"),
		NetNS: netns, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("node exporter: %w", err)
	}
	log.Info("node exporter", "address", address)
	return p.Start(ctx)
}

// addressInUse says whether a TCP listener holds address in the network
// namespace netns (empty: ours).
func addressInUse(address, netns string) (bool, error) {
	var ln net.Listener
	err := network.InNetNS(netns, func() (err error) {
		ln, err = net.Listen("tcp", address)
		return err
	})
	if errors.Is(err, syscall.EADDRINUSE) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return false, ln.Close()
}
