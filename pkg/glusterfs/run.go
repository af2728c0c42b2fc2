package glusterfs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/hostservice"
	"github.com/minik8s/minik8s/pkg/pki"
)

// Config is the shared file system's add-on on the control-plane host.
type Config struct {
	// Client is an admin client of the cluster (required).
	Client kubernetes.Interface
	// Dir holds the server's files and data (required).
	Dir string
	// Address and Port are where the server listens (0.0.0.0 and
	// DefaultPort when unset; Port -1: a free one).
	Address string
	Port    int
	// Bundle is the cluster's CA (required).
	Bundle *pki.Bundle
	// Advertise is the address nodes reach the server at, published in
	// kube-system/glusterfs; when it is not set, NodeName's pod-bridge
	// gateway (hostservice).
	Advertise netip.Addr
	NodeName  string
	Logger    *slog.Logger
	// Ready, when set, is called once volumes can be provisioned.
	Ready func()
}

// Run serves the shared file system until ctx ends: the server, a mount
// of the whole volume for the provisioner, the Service nodes find it by,
// the StorageClass "shared" and the provisioner.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Client == nil {
		return errors.New("glusterfs: a client is required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	port := cfg.Port
	switch port {
	case 0:
		port = DefaultPort
	case -1:
		port = 0
	}
	srv, err := NewServer(ServerConfig{Dir: cfg.Dir, Address: cfg.Address, Port: port, Bundle: cfg.Bundle, Logger: log})
	if err != nil {
		return err
	}
	// Cancelled before the wait: whatever returns, the server stops.
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	serving := make(chan struct{})
	errc := make(chan error, 1)
	wg.Go(func() {
		errc <- srv.Start(ctx, func() { close(serving) })
		cancel()
	})
	select {
	case <-serving:
	case <-ctx.Done():
		return <-errc
	}

	sc := srv.Config()
	local := Server{Host: sc.Address, Port: sc.Port}
	if ip := net.ParseIP(local.Host); ip == nil || ip.IsUnspecified() {
		local.Host = "127.0.0.1"
	}
	root := filepath.Join(sc.Dir, "mnt")
	mount := MountConfig{Server: local, Path: Path{Volume: VolumeName}, TLS: sc.ProvisionerTLS(), Target: root}
	if err := keepMounted(ctx, mount, log); err != nil {
		return err
	}
	defer func() {
		if err := Unmount(root); err != nil {
			log.Warn("glusterfs: unmount the provisioner's mount", "err", err)
		}
	}()
	wg.Go(func() {
		// A client that died (the server restarted past its ping timeout,
		// a crash) is mounted again.
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			check, done := context.WithTimeout(ctx, 10*time.Second)
			defer done()
			if Check(check, root) == nil || ctx.Err() != nil {
				return
			}
			log.Warn("glusterfs: the provisioner's mount does not answer; mounting again", "dir", root)
			_ = Unmount(root)
			_ = keepMounted(ctx, mount, log)
		}, 10*time.Second)
	})

	if err := ensureClass(ctx, cfg.Client); err != nil {
		return err
	}
	wg.Go(func() {
		_ = hostservice.Publish(ctx, hostservice.PublishConfig{Client: cfg.Client, Address: cfg.Advertise, NodeName: cfg.NodeName, Logger: log,
			Service: hostservice.Service{Namespace: EndpointsNamespace, Name: EndpointsName, ManagedBy: "glusterfs.minik8s.io",
				Labels: map[string]string{"app.kubernetes.io/name": "minik8s-glusterfs"},
				Ports:  []hostservice.Port{{Name: "glusterfs", Protocol: corev1.ProtocolTCP, Port: int32(sc.Port), TargetPort: int32(sc.Port)}}}})
	})
	kc := kit.NewContext(cfg.Client)
	kc.Logger = log
	prov, err := NewProvisioner(kc, root)
	if err != nil {
		return err
	}
	if cfg.Ready != nil {
		cfg.Ready()
	}
	err = kit.Run(ctx, kc, kit.Part{Name: "glusterfs-provisioner", Start: prov.Start})
	cancel()
	return errors.Join(err, <-errc)
}

// keepMounted mounts m, trying again every few seconds until it works or
// ctx ends.
func keepMounted(ctx context.Context, m MountConfig, log *slog.Logger) error {
	for {
		if ok, _ := IsMounted(m.Target); ok {
			if Check(ctx, m.Target) == nil {
				return nil
			}
			_ = Unmount(m.Target)
		}
		err := Mount(ctx, m)
		if err == nil {
			return nil
		}
		log.Warn("glusterfs: mount the volume for the provisioner", "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("glusterfs: mount the volume: %w", err)
		case <-time.After(3 * time.Second):
		}
	}
}

// ensureClass creates the StorageClass "shared" when there is none; one
// that exists is the administrator's to change.
func ensureClass(ctx context.Context, client kubernetes.Interface) error {
	_, err := client.StorageV1().StorageClasses().Create(ctx, Class(), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("storageclass %s: %w", ClassName, err)
	}
	return nil
}
