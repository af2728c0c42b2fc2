package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/proxy"
)

// TestTrafficPolicies: a user runs a web pod on each of two nodes. A
// Service with internalTrafficPolicy Local keeps a client on node 1 (and
// node 1 itself) on node 1's pod. A NodePort Service with
// externalTrafficPolicy Local answers on each node from that node's pod
// only, and the pod sees the client's own address: the request was not
// masqueraded; a pod reaches its own node's NodePort as it would the
// ClusterIP, on any node.
// When node 2's pod goes, node 2's NodePort drops what
// arrives (it does not refuse it), and node 1's keeps answering.
func TestTrafficPolicies(t *testing.T) {
	trafficPolicyStory(t, newCluster(t, 2))
}

// TestTrafficPoliciesIPTables: the same story with the nodes' service
// proxies in iptables mode.
func TestTrafficPoliciesIPTables(t *testing.T) {
	trafficPolicyStory(t, newClusterProxyMode(t, 2, string(proxy.ModeIPTables)))
}

// trafficPolicyStory is TestTrafficPolicies' story on c, a cluster of
// two nodes.
func trafficPolicyStory(t *testing.T, c *cluster) {
	k := c.kubectl
	ctx := context.Background()
	n1, n2 := c.nodes[c.tag+"-n1"], c.nodes[c.tag+"-n2"]
	// Each web pod answers / with its name and /cgi-bin/ip with the
	// address the request came from.
	for i, n := range []*testNode{n1, n2} {
		c.apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: web-%[1]d, labels: {app: tp}}
spec:
  nodeName: %[2]s
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: busybox
    command:
    - sh
    - -c
    - |
      mkdir -p /www/cgi-bin
      echo web-%[1]d > /www/index.html
      printf '#!/bin/sh\necho Content-Type: text/plain\necho\necho "$REMOTE_ADDR"\n' > /www/cgi-bin/ip
      chmod +x /www/cgi-bin/ip
      exec httpd -f -p 8080 -h /www
`, i+1, n.name))
	}
	c.apply(clientPod("client", n1.name))
	c.apply(`apiVersion: v1
kind: Service
metadata: {name: internal}
spec:
  selector: {app: tp}
  internalTrafficPolicy: Local
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: external}
spec:
  type: NodePort
  selector: {app: tp}
  externalTrafficPolicy: Local
  ports: [{name: http, port: 80, targetPort: 8080}]
`)
	for _, p := range []string{"web-1", "web-2", "client"} {
		c.waitPod("default", p, 2*time.Minute, "Running", running)
	}
	internal, err := c.client.CoreV1().Services("default").Get(ctx, "internal", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	external, err := c.client.CoreV1().Services("default").Get(ctx, "external", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clusterIP, nodePort := internal.Spec.ClusterIP, external.Spec.Ports[0].NodePort
	t.Logf("internal %s:80, external NodePort %d", clusterIP, nodePort)

	// internalTrafficPolicy Local: 20 requests from the client on node
	// 1 reach web-1 only, every time.
	c.waitFor(time.Minute, "the client reaching "+clusterIP+" 20 times", func(context.Context) (bool, error) {
		out, stderr, _ := k.Run(t, "exec", "client", "--", "sh", "-c",
			"for i in $(seq 20); do timeout 2 wget -qO- http://"+clusterIP+"/; done")
		counts := countHosts(out)
		t.Logf("client -> %s: %v (%s)", clusterIP, counts, lastLine(stderr))
		if len(counts) > 1 || (len(counts) == 1 && counts["web-1"] == 0) {
			t.Fatalf("client on %s reached %v through the internal-Local Service, want web-1 only", n1.name, counts)
		}
		return counts["web-1"] == 20, nil
	})
	// And from node 1 itself.
	for range 10 {
		body, err := httpGet(n1.netns, net.JoinHostPort(clusterIP, "80"))
		if err != nil || strings.TrimSpace(body) != "web-1" {
			t.Errorf("node %s -> %s: %q, %v; want web-1", n1.name, clusterIP, body, err)
		}
	}

	// externalTrafficPolicy Local: node 1's NodePort, from node 2,
	// answers from web-1 only, which sees node 2's address.
	n1Port := net.JoinHostPort(n1.ip.String(), fmt.Sprint(nodePort))
	n2Port := net.JoinHostPort(n2.ip.String(), fmt.Sprint(nodePort))
	host := c.lan.prefix.Addr().As4()
	host[3] = 254 // the host's address on the LAN (newLAN)
	for _, tc := range []struct {
		from, netns, addr, want string
		source                  netip.Addr
	}{
		{"node " + n2.name, n2.netns, n1Port, "web-1", n2.ip},
		{"the host", "", n2Port, "web-2", netip.AddrFrom4(host)},
	} {
		c.waitFor(time.Minute, tc.from+" reaching NodePort "+tc.addr, func(context.Context) (bool, error) {
			_, err := httpGet(tc.netns, tc.addr)
			return err == nil, nil
		})
		counts := map[string]int{}
		for range 20 {
			body, err := httpGet(tc.netns, tc.addr)
			if err != nil {
				t.Errorf("%s -> NodePort %s: %v", tc.from, tc.addr, err)
				break
			}
			counts[strings.TrimSpace(body)]++
		}
		t.Logf("%s -> NodePort %s: %v", tc.from, tc.addr, counts)
		if len(counts) != 1 || counts[tc.want] != 20 {
			t.Errorf("%s -> NodePort %s reached %v, want %s only", tc.from, tc.addr, counts, tc.want)
		}
		body, err := httpFetch(tc.netns, tc.addr, tc.addr, "/cgi-bin/ip")
		// httpd listens on IPv6 too: "[::ffff:a.b.c.d]".
		seen, perr := netip.ParseAddr(strings.Trim(strings.TrimSpace(body), "[]"))
		t.Logf("%s -> NodePort %s: %s saw the request from %s", tc.from, tc.addr, tc.want, seen.Unmap())
		if err != nil || perr != nil || seen.Unmap() != tc.source {
			t.Errorf("%s -> NodePort %s: the pod saw the request from %q (%v), want the client's %s (not masqueraded)",
				tc.from, tc.addr, body, errors.Join(err, perr), tc.source)
		}
	}

	// Pods take the short circuit: the client reaches its own node's
	// NodePort as it would the ClusterIP, so either pod answers. (Another
	// node's NodePort sees the client masqueraded by the pod network, as
	// an outside client.)
	c.waitFor(time.Minute, "the client reaching both pods through NodePort "+n1Port, func(context.Context) (bool, error) {
		out, _, _ := k.Run(t, "exec", "client", "--", "sh", "-c",
			"for i in $(seq 20); do timeout 2 wget -qO- http://"+n1Port+"/; done")
		counts := countHosts(out)
		t.Logf("client -> NodePort %s: %v", n1Port, counts)
		return counts["web-1"] > 0 && counts["web-2"] > 0, nil
	})

	// Without a pod on node 2, its NodePort drops: the connection
	// times out instead of being refused. Node 1's still answers.
	k.OK(t, "delete", "pod", "web-2", "--wait=false")
	c.waitFor(time.Minute, "node "+n2.name+"'s NodePort dropping", func(context.Context) (bool, error) {
		_, err := httpGet("", n2Port)
		var ne net.Error
		return err != nil && errors.As(err, &ne) && ne.Timeout(), nil
	})
	if _, err := httpGet("", n2Port); err == nil || strings.Contains(err.Error(), "refused") {
		t.Errorf("NodePort %s without a local endpoint: %v, want a timeout", n2Port, err)
	}
	if body, err := httpGet("", n1Port); err != nil || strings.TrimSpace(body) != "web-1" {
		t.Errorf("NodePort %s after web-2 went: %q, %v; want web-1", n1Port, body, err)
	}
}
