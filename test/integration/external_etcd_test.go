package integration

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minik8s/minik8s/pkg/controlplane"
	"github.com/minik8s/minik8s/pkg/storage/etcd"
)

// An operator who outgrows the embedded etcd points the server at their own.
func TestServerOnExternalEtcd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	external, err := etcd.StartEmbedded(ctx, etcd.EmbedConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer external.Close()

	ready := make(chan controlplane.ControlPlane, 1)
	done := make(chan error, 1)
	go func() {
		done <- controlplane.Run(ctx, controlplane.Config{
			DataDir: t.TempDir(), BindAddress: "127.0.0.1", EtcdServers: []string{external.Endpoint},
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
			Ready:  func(cp controlplane.ControlPlane) { ready <- cp },
		})
	}()
	var cp controlplane.ControlPlane
	select {
	case cp = <-ready:
	case err := <-done:
		t.Fatalf("control plane exited: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("control plane not ready")
	}
	if cp.EtcdEndpoint != "" {
		t.Fatalf("an external etcd was given, yet the control plane reports embedded endpoint %q", cp.EtcdEndpoint)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "outside"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, err := external.Client.Get(ctx, "/registry/configmaps/default/outside")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("object not in the external etcd: %v %v", resp, err)
	}
	cancel()
	<-done
}
