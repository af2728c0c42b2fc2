package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/gateway"
)

// A program on a node's host, published at that node's pod gateway (the
// gateway's nginx on n1), answers a pod on another node from the start:
// n1 runs no pod of its own, so nothing but the node itself has put its
// gateway address on its bridge.
func TestHostServiceFromAnotherNodeBeforeAnyLocalPod(t *testing.T) {
	c := newClusterWithAddons(t, 2)
	ctx := context.Background()
	n1, n2 := c.nodes[c.tag+"-n1"], c.nodes[c.tag+"-n2"]
	c.apply(clientPod("client", n2.name))
	c.waitPod("default", "client", 2*time.Minute, "Running", running)
	gw, err := c.client.CoreV1().Services("kube-system").Get(ctx, gateway.ServiceName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Any answer of nginx's will do (404 for an unknown host): the point
	// is that the address answers at all.
	out, stderr, err := c.kubectl.Run(t, "exec", "client", "--", "sh", "-c", "timeout 10 wget -S -O /dev/null http://"+gw.Spec.ClusterIP+"/ 2>&1; true")
	if err != nil {
		t.Fatalf("exec: %v: %s", err, stderr)
	}
	if !strings.Contains(out, "HTTP/1.1 ") {
		t.Errorf("the gateway at %s (n1's pod gateway) did not answer a pod on n2: %q", gw.Spec.ClusterIP, out)
	}
	pods, err := c.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n1.name})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Fatalf("n1 ran pods (%d), so its bridge may have had its address from them", len(pods.Items))
	}
}
