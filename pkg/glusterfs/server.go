package glusterfs

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minik8s/minik8s/pkg/pki"
	"github.com/minik8s/minik8s/pkg/supervisor"
)

// DefaultPort is where the server listens by default (glusterd's own is
// 24007; bricks take 49152 and up).
const DefaultPort = 24017

// Certificate names: the server's CN, and the CN of the provisioner's
// client certificate. Node certificates (system:node:<name>) are let in
// too.
const (
	ServerCN      = "system:minik8s:glusterfs"
	ProvisionerCN = "system:minik8s:glusterfs-provisioner"
	nodeCNPattern = "system:node:*"
)

// FindServer is the brick daemon, glusterfsd (Debian's glusterfs-common,
// which glusterfs-client pulls in).
func FindServer() (string, error) { return findProgram("glusterfsd") }

// ServerConfig is where and how the server runs.
type ServerConfig struct {
	// Dir holds the brick (Dir/brick, the data), the volume file, the
	// certificates and the logs (required).
	Dir string
	// Address is the IP the server listens on (default 0.0.0.0); Port its
	// port (0: a free one, chosen at New).
	Address string
	Port    int
	// Bundle is the cluster's CA, which signs the server's certificate
	// and the provisioner's (required).
	Bundle *pki.Bundle
	Logger *slog.Logger
}

// ServerProcess is the running server.
type ServerProcess struct {
	cfg  ServerConfig
	proc *supervisor.Process
	log  *slog.Logger
}

// NewServer writes the server's certificates and volume file and
// prepares its supervision; Start runs it.
func NewServer(cfg ServerConfig) (*ServerProcess, error) {
	if cfg.Dir == "" || cfg.Bundle == nil {
		return nil, errors.New("glusterfs server: a directory and the cluster's CA are required")
	}
	bin, err := FindServer()
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	if strings.ContainsAny(dir, " \t\n") {
		return nil, fmt.Errorf("glusterfs server: directory %q has white space, which volume files cannot hold", dir)
	}
	cfg.Dir = dir
	if cfg.Address == "" {
		cfg.Address = "0.0.0.0"
	}
	if cfg.Port == 0 {
		if cfg.Port, err = freePort(cfg.Address); err != nil {
			return nil, err
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	for _, d := range []string{cfg.brick(), cfg.tlsDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	if err := writeServerTLS(cfg.Bundle, cfg.tlsDir()); err != nil {
		return nil, err
	}
	volfile := filepath.Join(cfg.Dir, "server.vol")
	text := serverVolfile(cfg.brick(), cfg.Address, cfg.Port, cfg.ServerTLS(), []string{nodeCNPattern, ProvisionerCN})
	if err := pki.WriteFileAtomic(volfile, []byte(text)); err != nil {
		return nil, err
	}
	proc, err := supervisor.New(supervisor.Config{
		Name: "glusterfsd", Path: bin, Dir: cfg.Dir, Logger: cfg.Logger,
		Args: []string{"--no-daemon", "--volfile=" + volfile, "--volfile-id=" + VolumeName, "--brick-name=" + VolumeName,
			"--log-file=" + filepath.Join(cfg.Dir, "glusterfsd.log")},
		LogPath: filepath.Join(cfg.Dir, "glusterfsd.out"),
		PIDFile: filepath.Join(cfg.Dir, "glusterfsd.supervisor.pid"),
	})
	if err != nil {
		return nil, err
	}
	return &ServerProcess{cfg: cfg, proc: proc, log: cfg.Logger.With("component", "glusterfsd")}, nil
}

func (c ServerConfig) brick() string  { return filepath.Join(c.Dir, "brick") }
func (c ServerConfig) tlsDir() string { return filepath.Join(c.Dir, "tls") }

// ServerTLS is the server's certificate files.
func (c ServerConfig) ServerTLS() TLS {
	d := c.tlsDir()
	return TLS{CertFile: filepath.Join(d, "server.crt"), KeyFile: filepath.Join(d, "server.key"), CAFile: filepath.Join(d, "ca.crt")}
}

// ProvisionerTLS is the provisioner's client certificate files.
func (c ServerConfig) ProvisionerTLS() TLS {
	d := c.tlsDir()
	return TLS{CertFile: filepath.Join(d, "provisioner.crt"), KeyFile: filepath.Join(d, "provisioner.key"), CAFile: filepath.Join(d, "ca.crt")}
}

// Port is the port the server listens on.
func (s *ServerProcess) Port() int { return s.cfg.Port }

// Brick is the directory the volume's data lives in.
func (s *ServerProcess) Brick() string { return s.cfg.brick() }

// Config is the server's completed configuration.
func (s *ServerProcess) Config() ServerConfig { return s.cfg }

// Start runs glusterfsd, restarting it when it dies, until ctx ends;
// ready is called (when set) once it first accepts connections.
func (s *ServerProcess) Start(ctx context.Context, ready func()) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		host := s.cfg.Address
		if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		addr := net.JoinHostPort(host, strconv.Itoa(s.cfg.Port))
		for ctx.Err() == nil {
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				_ = c.Close()
				s.log.Info("ready", "address", addr, "brick", s.cfg.brick())
				if ready != nil {
					ready()
				}
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	return s.proc.Start(ctx)
}

// writeServerTLS writes the CA, the server's certificate and the
// provisioner's client certificate, new at each start.
func writeServerTLS(b *pki.Bundle, dir string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	certPEM, err := b.SignCertificateRequest(&x509.CertificateRequest{Subject: pkix.Name{CommonName: ServerCN}, PublicKey: key.Public()},
		x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, 0)
	if err != nil {
		return err
	}
	provCert, provKey, err := b.IssueClientCert(ProvisionerCN, nil, 0)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"ca.crt": b.CAPEM, "server.crt": certPEM, "server.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		"provisioner.crt": provCert, "provisioner.key": provKey,
	} {
		if err := pki.WriteFileAtomic(filepath.Join(dir, name), data); err != nil {
			return err
		}
	}
	return nil
}

// freePort is a port free on address now.
func freePort(address string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(address, "0"))
	if err != nil {
		return 0, fmt.Errorf("glusterfs server: find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
