package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/kubelet/network"
)

// TestService: a user runs four web pods on two nodes behind a NodePort
// Service. Pods on either node reach it by ClusterIP and every pod
// answers; the NodePort answers from the host's LAN and from the other
// node; a Service without endpoints refuses at once, and so does a port
// the Service does not define; a deleted Service stops answering.
func TestService(t *testing.T) {
	serviceStory(t, newCluster(t, 2))
}

// serviceStory is TestService's story on c, a cluster of two nodes,
// whichever mode their service proxies run in.
func serviceStory(t *testing.T, c *cluster) {
	k := c.kubectl
	ctx := context.Background()
	n1, n2 := c.nodes[c.tag+"-n1"], c.nodes[c.tag+"-n2"]
	var webs []string
	for i, n := range []*testNode{n1, n1, n2, n2} {
		name := fmt.Sprintf("web-%d", i)
		webs = append(webs, name)
		c.apply(webPod(name, n.name))
	}
	for i, n := range []*testNode{n1, n2} {
		c.apply(clientPod(fmt.Sprintf("client-%d", i+1), n.name))
	}
	ips := map[string]string{}
	for _, w := range webs {
		ips[w] = c.waitPod("default", w, 2*time.Minute, "Running", running).Status.PodIP
	}
	for _, cl := range []string{"client-1", "client-2"} {
		c.waitPod("default", cl, 2*time.Minute, "Running", running)
	}

	c.apply(`apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: empty}
spec:
  ports: [{name: http, port: 80, targetPort: 8080}]
`)
	svc, err := c.client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clusterIP, nodePort := svc.Spec.ClusterIP, svc.Spec.Ports[0].NodePort
	t.Logf("service web: %s:80, nodePort %d, endpoints %v", clusterIP, nodePort, ips)

	// ClusterIP from a pod on each node: 30 requests reach every pod.
	for _, cl := range []string{"client-1", "client-2"} {
		counts := map[string]int{}
		c.waitFor(time.Minute, cl+" reaching all endpoints through "+clusterIP, func(context.Context) (bool, error) {
			out, stderr, _ := k.Run(t, "exec", cl, "--", "sh", "-c",
				"for i in $(seq 30); do timeout 2 wget -qO- http://"+clusterIP+"/; done")
			counts = countHosts(out)
			if len(counts) != len(webs) {
				t.Logf("%s -> %s: %v (%s)", cl, clusterIP, counts, lastLine(stderr))
			}
			return len(counts) == len(webs), nil
		})
		t.Logf("%s -> %s: %v", cl, clusterIP, counts)
	}

	// NodePort from the host (over the LAN) and from the other node.
	for _, from := range []struct{ name, netns string }{{"the host", ""}, {"node " + n2.name, n2.netns}} {
		addr := net.JoinHostPort(n1.ip.String(), fmt.Sprint(nodePort))
		counts := map[string]int{}
		for range 30 {
			body, err := httpGet(from.netns, addr)
			if err != nil {
				t.Errorf("NodePort %s from %s: %v", addr, from.name, err)
				break
			}
			counts[strings.TrimSpace(body)]++
		}
		t.Logf("%s -> NodePort %s: %v", from.name, addr, counts)
		if len(counts) != len(webs) {
			t.Errorf("NodePort %s from %s reached %v, want all of %v", addr, from.name, counts, webs)
		}
	}

	// A Service without endpoints refuses at once.
	empty, err := c.client.CoreV1().Services("default").Get(ctx, "empty", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, stderr, err := k.Run(t, "exec", "client-1", "--", "timeout", "10", "wget", "-qO-", "http://"+empty.Spec.ClusterIP+"/")
	if took := time.Since(start); err == nil || !strings.Contains(stderr, "refused") || took > 5*time.Second {
		t.Errorf("service without endpoints: err %v after %v, stderr %q; want connection refused at once", err, took, stderr)
	}

	// A port the Service does not define is refused, from a pod and from
	// a node, not sent onto the pod network to fail there.
	_, stderr, err = k.Run(t, "exec", "client-2", "--", "timeout", "10", "wget", "-qO-", "http://"+clusterIP+":81/")
	if err == nil || !strings.Contains(stderr, "refused") {
		t.Errorf("ClusterIP %s on port 81 from a pod: err %v, stderr %q; want connection refused", clusterIP, err, stderr)
	}
	if _, err := httpGet(n1.netns, net.JoinHostPort(clusterIP, "81")); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("ClusterIP %s on port 81 from node %s: %v; want connection refused", clusterIP, n1.name, err)
	}

	// Deleted, the Service stops answering.
	k.OK(t, "delete", "service", "web")
	c.waitFor(30*time.Second, "the ClusterIP to stop answering", func(context.Context) (bool, error) {
		_, _, err := k.Run(t, "exec", "client-2", "--", "timeout", "2", "wget", "-qO-", "http://"+clusterIP+"/")
		return err != nil, nil
	})
	if _, err := httpGet("", net.JoinHostPort(n1.ip.String(), fmt.Sprint(nodePort))); err == nil {
		t.Errorf("NodePort %d still answers after the service was deleted", nodePort)
	}
}

// webPod is pod name, labelled app: web, on node: an HTTP server on port
// 8080 that answers its hostname (the pod's name).
func webPod(name, node string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, labels: {app: web}}
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: busybox
    command: ["sh", "-c", "mkdir -p /tmp/www && hostname > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"]
`, name, node)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func countHosts(out string) map[string]int {
	counts := map[string]int{}
	for _, l := range strings.Fields(out) {
		counts[l]++
	}
	return counts
}

// httpGet fetches http://addr/ from the network namespace netns (the
// test's own when empty), on a fresh connection.
func httpGet(netns, addr string) (string, error) { return httpFetch(netns, addr, addr, "/") }

// httpFetch GETs path from addr with Host host, from the network
// namespace netns, on a fresh connection made on the calling thread (so
// in netns): the body of a 200, else an error; a connection that is
// dropped fails with a timeout.
func httpFetch(netns, addr, host, path string) (string, error) {
	var body string
	err := network.InNetNS(netns, func() error {
		conn, err := net.DialTimeout("tcp", addr, 3*time.Second)
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, host); err != nil {
			return err
		}
		b, err := io.ReadAll(conn)
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		resp := string(b)
		if !strings.HasPrefix(resp, "HTTP/1.") || !strings.Contains(resp, " 200 ") {
			return fmt.Errorf("response %q", resp)
		}
		// A CGI script's own headers may end in a bare "\n\n".
		var ok bool
		if _, body, ok = strings.Cut(resp, "\r\n\r\n"); !ok {
			_, body, _ = strings.Cut(resp, "\n\n")
		}
		return nil
	})
	return body, err
}

// TestServiceFollowsPods: a pod that turns unready stops receiving the
// Service's traffic and gets it back when ready again; scaling the
// Deployment up adds the new pods to the rotation. sessionAffinity
// ClientIP keeps a client on one pod, and a pod reaches itself through a
// Service (hairpin).
func TestServiceFollowsPods(t *testing.T) {
	c := newCluster(t, 1)
	k := c.kubectl
	ctx := context.Background()
	c.apply(`apiVersion: apps/v1
kind: Deployment
metadata: {name: rd}
spec:
  replicas: 2
  selector: {matchLabels: {app: rd}}
  template:
    metadata: {labels: {app: rd}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: busybox
        command: ["sh", "-c", "mkdir -p /www && hostname > /www/index.html && touch /www/ready && exec httpd -f -p 8080 -h /www"]
        readinessProbe: {exec: {command: ["test", "-e", "/www/ready"]}, periodSeconds: 1, failureThreshold: 1}
---
apiVersion: v1
kind: Service
metadata: {name: rd}
spec:
  selector: {app: rd}
  ports: [{port: 80, targetPort: 8080}]
`)
	c.apply(clientPod("client", ""))
	c.waitPod("default", "client", 2*time.Minute, "Running", running)
	svc, err := c.client.CoreV1().Services("default").Get(ctx, "rd", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// hostsAnswering polls until 20 requests reach exactly want pods.
	hostsAnswering := func(what string, want int) map[string]int {
		t.Helper()
		var counts map[string]int
		c.waitFor(time.Minute, what, func(context.Context) (bool, error) {
			out, _, _ := k.Run(t, "exec", "client", "--", "sh", "-c",
				"for i in $(seq 20); do timeout 2 wget -qO- http://"+svc.Spec.ClusterIP+"/; done")
			counts = countHosts(out)
			return len(counts) == want, nil
		})
		t.Logf("%s: %v", what, counts)
		return counts
	}
	hostsAnswering("both pods answering", 2)

	pods, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=rd"})
	if err != nil || len(pods.Items) != 2 {
		t.Fatalf("pods: %v %d", err, len(pods.Items))
	}
	unready := pods.Items[0].Name
	k.OK(t, "exec", unready, "--", "rm", "/www/ready")
	if counts := hostsAnswering("only the ready pod answering", 1); counts[unready] > 0 {
		t.Errorf("unready pod %s still answered: %v", unready, counts)
	}
	k.OK(t, "exec", unready, "--", "touch", "/www/ready")
	hostsAnswering("the pod back in rotation", 2)

	k.OK(t, "scale", "deployment", "rd", "--replicas=3")
	hostsAnswering("the new pod in rotation", 3)

	// sessionAffinity ClientIP: one client keeps its pod.
	c.apply(`apiVersion: v1
kind: Service
metadata: {name: sticky}
spec:
  selector: {app: rd}
  sessionAffinity: ClientIP
  ports: [{port: 80, targetPort: 8080}]
`)
	sticky, err := c.client.CoreV1().Services("default").Get(ctx, "sticky", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var counts map[string]int
	c.waitFor(time.Minute, "the sticky Service answering", func(context.Context) (bool, error) {
		out, _, _ := k.Run(t, "exec", "client", "--", "sh", "-c",
			"for i in $(seq 20); do timeout 2 wget -qO- http://"+sticky.Spec.ClusterIP+"/; done")
		counts = countHosts(out)
		n := 0
		for _, v := range counts {
			n += v
		}
		return n == 20, nil
	})
	if len(counts) != 1 {
		t.Errorf("sessionAffinity ClientIP: 20 requests of one client reached %v, want one pod", counts)
	}

	// Hairpin: a pod reaches itself through a Service that selects only it.
	k.OK(t, "label", "pod", unready, "solo=yes")
	c.apply(`apiVersion: v1
kind: Service
metadata: {name: solo}
spec:
  selector: {solo: "yes"}
  ports: [{port: 80, targetPort: 8080}]
`)
	solo, err := c.client.CoreV1().Services("default").Get(ctx, "solo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.waitFor(time.Minute, unready+" reaching itself through its Service", func(context.Context) (bool, error) {
		out, _, _ := k.Run(t, "exec", unready, "--", "timeout", "2", "wget", "-qO-", "http://"+solo.Spec.ClusterIP+"/")
		return strings.TrimSpace(out) == unready, nil
	})
}
