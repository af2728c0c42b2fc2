package integration

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minik8s/minik8s/pkg/controllermanager"
	"github.com/minik8s/minik8s/pkg/controlplane"
)

// cluster is a control plane running inside the test process.
type cluster struct {
	t *testing.T
	// tune adjusts the control plane's config before each start.
	tune    func(*controlplane.Config)
	dataDir string
	cp      controlplane.ControlPlane
	cancel  context.CancelFunc
	done    chan error
	config  *rest.Config
	client  kubernetes.Interface
}

// startCluster runs a control plane on a fresh data dir.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	return startClusterWith(t, nil)
}

// startClusterWith runs a control plane whose config tune adjusts (e.g.
// disabling a built-in controller that the test runs itself).
func startClusterWith(t *testing.T, tune func(*controlplane.Config)) *cluster {
	t.Helper()
	c := &cluster{t: t, dataDir: t.TempDir(), tune: tune}
	c.start()
	t.Cleanup(c.stop)
	return c
}

func (c *cluster) start() {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan controlplane.ControlPlane, 1)
	c.cancel, c.done = cancel, make(chan error, 1)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cpCfg := controlplane.Config{
		DataDir: c.dataDir, BindAddress: "127.0.0.1", Port: 0, Logger: log,
		BookmarkInterval: time.Second,
		Ready:            func(cp controlplane.ControlPlane) { ready <- cp },
	}
	if c.tune != nil {
		c.tune(&cpCfg)
	}
	go func() { c.done <- controlplane.Run(ctx, cpCfg) }()
	select {
	case c.cp = <-ready:
	case err := <-c.done:
		c.t.Fatalf("control plane exited: %v", err)
	case <-time.After(60 * time.Second):
		c.t.Fatal("control plane not ready after 60s")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.cp.KubeconfigPath)
	if err != nil {
		c.t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	c.config = cfg
	c.client = kubernetes.NewForConfigOrDie(cfg)
}

func (c *cluster) stop() {
	if c.cancel == nil {
		return
	}
	c.cancel()
	select {
	case err := <-c.done:
		if err != nil {
			c.t.Errorf("control plane stopped with error: %v", err)
		}
	case <-time.After(30 * time.Second):
		c.t.Error("control plane did not stop in 30s")
	}
	c.cancel = nil
}

// restart stops the control plane and starts it again on the same data dir.
func (c *cluster) restart() {
	c.stop()
	c.start()
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// withoutControllers disables built-in controllers that a test runs
// itself, with its own settings.
func withoutControllers(names ...string) func(*controlplane.Config) {
	return func(cfg *controlplane.Config) { cfg.DisableControllers = append(cfg.DisableControllers, names...) }
}

// apiServerOnly runs no controllers and no scheduler: for tests that
// check that storage does not change unless they change it.
func apiServerOnly(cfg *controlplane.Config) {
	cfg.DisableControllers = append(append(cfg.DisableControllers, "scheduler"), controllermanager.Names()...)
}
