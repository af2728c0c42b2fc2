package integration

import (
	"context"
	"net/netip"
	"net/url"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/controlplane"
)

// A control plane alone (minik8s server) publishes default/kubernetes at
// its advertise address, as kube-apiserver does: in-cluster clients and
// the conformance suite's own set-up look for it.
func TestServerPublishesKubernetesService(t *testing.T) {
	c := startClusterWith(t, func(cfg *controlplane.Config) { cfg.AdvertiseAddress = netip.MustParseAddr("127.0.0.1") })
	u, err := url.Parse(c.cp.URL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	waitFor(t, "default/kubernetes with the apiserver's address and port", func(ctx context.Context) (bool, error) {
		svc, err := c.client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if svc.Spec.ClusterIP != "10.96.0.1" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort.IntValue() != port {
			t.Fatalf("default/kubernetes: %+v", svc.Spec)
		}
		ep, err := c.client.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return len(ep.Subsets) == 1 && len(ep.Subsets[0].Addresses) == 1 && ep.Subsets[0].Addresses[0].IP == "127.0.0.1" &&
			len(ep.Subsets[0].Ports) == 1 && int(ep.Subsets[0].Ports[0].Port) == port, nil
	})
}
