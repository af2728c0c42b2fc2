package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/kubelet/network"
	"github.com/minik8s/minik8s/pkg/proxy"
)

// TestServiceIPTables: TestService's story on nodes whose service
// proxies program iptables, as on a machine where nft is unusable:
// ClusterIP from pods on both nodes reaches every endpoint, the NodePort
// answers from the host and from the other node, a Service without
// endpoints refuses at once, a deleted Service stops answering. The
// nodes hold MINIK8S- chains and no nftables table: the one their
// proxies wrote before they restarted in iptables mode is gone.
func TestServiceIPTables(t *testing.T) {
	c := newClusterProxyMode(t, 2, string(proxy.ModeIPTables))
	serviceStory(t, c)

	empty, err := c.client.CoreV1().Services("default").Get(context.Background(), "empty", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reject := fmt.Sprintf("-A MINIK8S-SERVICES -d %s/32 -p tcp -m tcp --dport 80", empty.Spec.ClusterIP)
	for _, n := range c.nodes {
		var save, nft []byte
		var nftErr error
		err := network.InNetNS(n.netns, func() (err error) {
			if _, err := exec.LookPath("nft"); err == nil {
				nft, nftErr = exec.Command("nft", "list", "table", "ip", proxy.TableName).CombinedOutput()
			}
			save, err = exec.Command("iptables-save").CombinedOutput()
			return err
		})
		if err != nil {
			t.Fatalf("iptables-save on %s: %v: %s", n.name, err, save)
		}
		if !strings.Contains(string(save), reject) || !strings.Contains(string(save), "-j MINIK8S-SERVICES") {
			t.Errorf("node %s: iptables lacks the proxy's chains (%q):\n%s", n.name, reject, save)
		}
		if nft != nil && nftErr == nil {
			t.Errorf("node %s has the nftables table in iptables mode:\n%s", n.name, nft)
		}
	}
}

// newClusterProxyMode is newCluster with every node's service proxy in
// mode. The nodes come up as newCluster's do (the framework adds them
// before a constructor can set anything) and restart at once in mode,
// as a user switching modes would restart them; the proxy then removes
// what the other mode left.
func newClusterProxyMode(t *testing.T, n int, mode string) *cluster {
	t.Helper()
	c := newCluster(t, n)
	for _, nd := range c.nodes {
		c.stopNode(nd)
	}
	c.proxyMode = mode
	for _, nd := range c.nodes {
		c.startNode(nd)
	}
	c.waitNodesReady(n)
	return c
}
