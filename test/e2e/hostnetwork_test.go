package e2e

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/proxy"
)

// TestHostNetwork: as the conformance suite does on a one-node cluster,
// a user runs a hostNetwork pod, which shares its node's network
// namespace and has the node's address, next to three web pods that
// answer with their names over HTTP (8080) and UDP (8081). From the
// hostNetwork pod each web pod's IP answers over TCP and UDP. A NodePort
// Service with sessionAffinity ClientIP, reached at the node's
// InternalIP and NodePort from the hostNetwork pod and from a regular
// pod, always answers from one backend per client.
func TestHostNetwork(t *testing.T) {
	hostNetworkStory(t, newCluster(t, 1))
}

// TestHostNetworkIPTables: the same story with the node's service proxy
// in iptables mode.
func TestHostNetworkIPTables(t *testing.T) {
	hostNetworkStory(t, newClusterProxyMode(t, 1, string(proxy.ModeIPTables)))
}

func hostNetworkStory(t *testing.T, c *cluster) {
	k := c.kubectl
	ctx := context.Background()
	n1 := c.nodes[c.tag+"-n1"]
	// udpname: the UDP server and client busybox lacks, on a hostPath.
	tools := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(tools, "udpname"), "./udpname")
	build.Env = append(build.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build udpname: %v\n%s", err, out)
	}
	webs := []string{"web-1", "web-2", "web-3"}
	for _, w := range webs {
		c.apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, labels: {app: aff}}
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: busybox
    command: ["sh", "-c", "/tools/udpname -listen :8081 & mkdir -p /tmp/www && hostname > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"]
    volumeMounts: [{name: tools, mountPath: /tools}]
  volumes: [{name: tools, hostPath: {path: %s}}]
`, w, n1.name, tools))
	}
	c.apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: hostnet}
spec:
  nodeName: %s
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: sh
    image: busybox
    command: ["sleep", "3600"]
    volumeMounts: [{name: tools, mountPath: /tools}]
  volumes: [{name: tools, hostPath: {path: %s}}]
`, n1.name, tools))
	c.apply(clientPod("client", n1.name))
	c.apply(`apiVersion: v1
kind: Service
metadata: {name: aff}
spec:
  type: NodePort
  selector: {app: aff}
  sessionAffinity: ClientIP
  ports: [{name: http, port: 80, targetPort: 8080}]
`)
	ips := map[string]string{}
	for _, w := range webs {
		ips[w] = c.waitPod("default", w, 2*time.Minute, "Running", running).Status.PodIP
	}
	hostnet := c.waitPod("default", "hostnet", 2*time.Minute, "Running", running)
	c.waitPod("default", "client", 2*time.Minute, "Running", running)

	// The hostNetwork pod is the node, network-wise.
	if hostnet.Status.PodIP != n1.ip.String() {
		t.Errorf("hostnet's podIP is %s, want the node's %s", hostnet.Status.PodIP, n1.ip)
	}
	if addrs := k.OK(t, "exec", "hostnet", "--", "ip", "addr"); !strings.Contains(addrs, "inet "+n1.ip.String()+"/") {
		t.Errorf("hostnet does not have the node's address %s:\n%s", n1.ip, addrs)
	}

	// Node to pod, as "Networking Granular Checks: Pods should function
	// for node-pod communication" does: every web pod's IP, over TCP and
	// UDP.
	for _, w := range webs {
		for _, proto := range []string{"tcp", "udp"} {
			cmd := []string{"timeout", "2", "wget", "-qO-", "http://" + net.JoinHostPort(ips[w], "8080") + "/"}
			if proto == "udp" {
				cmd = []string{"/tools/udpname", "-dial", net.JoinHostPort(ips[w], "8081")}
			}
			out, stderr, err := k.Run(t, append([]string{"exec", "hostnet", "--"}, cmd...)...)
			if err != nil || strings.TrimSpace(out) != w {
				t.Errorf("hostnet -> %s %s (%s): %q, %v %s; want %s", proto, ips[w], w, out, err, lastLine(stderr), w)
			}
		}
	}

	// The NodePort at the node's InternalIP, as the Node reports it (as
	// "Services should have session affinity work for NodePort service"
	// finds it).
	node, err := c.client.CoreV1().Nodes().Get(ctx, n1.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var internalIP string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			internalIP = a.Address
		}
	}
	svc, err := c.client.CoreV1().Services("default").Get(ctx, "aff", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + net.JoinHostPort(internalIP, fmt.Sprint(svc.Spec.Ports[0].NodePort)) + "/"
	for _, from := range []string{"hostnet", "client"} {
		c.waitFor(time.Minute, from+" reaching "+url, func(context.Context) (bool, error) {
			_, _, err := k.Run(t, "exec", from, "--", "timeout", "2", "wget", "-qO-", url)
			return err == nil, nil
		})
		out, stderr, _ := k.Run(t, "exec", from, "--", "sh", "-c", "for i in $(seq 20); do timeout 2 wget -qO- "+url+"; done")
		counts := countHosts(out)
		t.Logf("%s -> %s: %v (%s)", from, url, counts, lastLine(stderr))
		total := 0
		for _, n := range counts {
			total += n
		}
		if len(counts) != 1 || total != 20 {
			t.Errorf("%s -> %s with sessionAffinity ClientIP reached %v, want one backend 20 times", from, url, counts)
		}
	}
}
