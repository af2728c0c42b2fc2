package integration

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/minik8s/minik8s/pkg/bootstrap"
	"github.com/minik8s/minik8s/pkg/cli"
	"github.com/minik8s/minik8s/pkg/clusterconfig"
	"github.com/minik8s/minik8s/pkg/controlplane"
)

// A joining node learns the cluster's ranges and domain from the cluster
// itself, with nothing but its own credential; a node flag that disagrees
// is refused before the node registers.
func TestAgentTakesClusterSettings(t *testing.T) {
	c := startClusterWith(t, func(cfg *controlplane.Config) {
		cfg.ClusterCIDR, cfg.ServiceCIDR, cfg.ClusterDomain = "10.42.0.0/16", "10.43.0.0/16", "example.internal"
	})
	ctx := ctxT(t)
	rc, err := bootstrap.Join(ctx, bootstrap.Config{Server: c.cp.URL, Token: c.cp.NodeToken, NodeName: "joiner", Dir: t.TempDir(), Logger: quietLog()})
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	got, found, err := clusterconfig.Read(ctx, kubernetes.NewForConfigOrDie(rc))
	want := clusterconfig.Settings{ClusterCIDR: "10.42.0.0/16", ServiceCIDR: "10.43.0.0/16", ClusterDomain: "example.internal"}
	if err != nil || !found || got != want {
		t.Fatalf("the node reads %+v (found %v, err %v), want %+v", got, found, err, want)
	}

	if os.Geteuid() != 0 {
		t.Skip("the rest runs `minik8s agent` with the local provider, which needs root")
	}
	for _, tc := range []struct{ flag, value, want string }{
		{"--cluster-cidr", "10.244.0.0/16", "--cluster-cidr 10.244.0.0/16 disagrees with the cluster's 10.42.0.0/16"},
		{"--service-cluster-ip-range", "10.96.0.0/12", "--service-cluster-ip-range 10.96.0.0/12 disagrees with the cluster's 10.43.0.0/16"},
		{"--cluster-domain", "cluster.local", "--cluster-domain cluster.local disagrees with the cluster's example.internal"},
	} {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := cli.Run(actx, []string{"agent", "--server", c.cp.URL, "--token", c.cp.NodeToken, "--node-name", "refused",
			"--node-ip", "127.0.0.1", "--root-dir", t.TempDir(), tc.flag, tc.value})
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("agent %s %s: %v, want an error saying %q", tc.flag, tc.value, err, tc.want)
		}
	}
	if _, err := c.client.CoreV1().Nodes().Get(ctx, "refused", metav1.GetOptions{}); err == nil {
		t.Error("a refused agent registered its node")
	}
}

// The node that runs the control plane (minik8s up) gets the
// control-plane role once it registers, as kubeadm's and k3s' do, and
// kubectl shows it.
func TestControlPlaneNodeRole(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	done := make(chan error, 1)
	go func() { done <- controlplane.MarkControlPlaneNode(ctx, c.client, "master") }()
	if _, err := c.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "master"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	k := newKubectl(t, c)
	if out := k.ok(t, "get", "nodes", "master", "--no-headers"); !strings.Contains(out, "control-plane") {
		t.Errorf("kubectl get nodes shows %q, want the control-plane role", out)
	}
}
