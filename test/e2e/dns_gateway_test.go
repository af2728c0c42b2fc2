package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/gateway"
	"github.com/minik8s/minik8s/pkg/kubelet/network"
)

// webApp is a Deployment of busybox httpd pods that answer "<name>
// <hostname>" on port 8080 (and "<name> dir" at /dir/, to which httpd
// redirects /dir), and a Service <name> on port 80.
func webApp(name string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: %[2]d
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: busybox
        command: ["sh", "-c", "mkdir -p /www/dir && echo %[1]s $(hostname) > /www/index.html && echo %[1]s dir > /www/dir/index.html && exec httpd -f -p 8080 -h /www"]
        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: %[1]s}
spec:
  selector: {app: %[1]s}
  ports: [{name: http, port: 80, targetPort: 8080}]
`, name, replicas)
}

// TestDNSAndGateway: pods find Services by name through the cluster DNS
// (the real CoreDNS), and the seeds' DNSRecord routes minik8s.com/path1
// and /path2 to two Services, from pods and from another host; an update
// adds a path without disturbing the others; a deleted record's name
// stops resolving. An Ingress is served by the same gateway.
func TestDNSAndGateway(t *testing.T) {
	c := newClusterWithAddons(t, 2)
	k := c.kubectl
	ctx := context.Background()
	n2 := c.nodes[c.tag+"-n2"]
	// The README's examples: web (3 pods), and a, b with the DNSRecord
	// that routes minik8s.com/path1 and /path2 to them.
	for _, ex := range []string{"service-clusterip.yaml", "dns-gateway.yaml"} {
		k.OK(t, "apply", "-f", filepath.Join("..", "..", "examples", ex))
	}
	c.apply(webApp("c", 2))
	c.apply(`apiVersion: v1
kind: Service
metadata: {name: a-pods}
spec:
  clusterIP: None
  selector: {app: a}
  ports: [{name: http, port: 8080}]
`)
	c.apply(clientPod("client", n2.name))
	c.waitPod("default", "client", 2*time.Minute, "Running", running)
	for app, replicas := range map[string]int32{"a": 2, "b": 2, "c": 2, "web": 3} {
		c.waitFor(2*time.Minute, "deployment "+app+" available", func(ctx context.Context) (bool, error) {
			d, err := c.client.AppsV1().Deployments("default").Get(ctx, app, metav1.GetOptions{})
			return err == nil && d.Status.AvailableReplicas == replicas, nil
		})
	}
	svcA, err := c.client.CoreV1().Services("default").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	exec := func(cmd string) (string, error) {
		out, stderr, err := k.Run(t, "exec", "client", "--", "sh", "-c", cmd)
		if err != nil {
			return out, fmt.Errorf("%s: %v: %s %s", cmd, err, strings.TrimSpace(out), strings.TrimSpace(stderr))
		}
		return out, nil
	}
	// get is wget from the client pod, on the cluster DNS, following
	// redirects: the body and the responses' headers. No response may
	// name nginx's own port, which pods cannot reach.
	get := func(url string) (body, headers string, err error) {
		cmd := "timeout 5 wget -q -S -O- " + url
		body, headers, err = k.Run(t, "exec", "client", "--", "sh", "-c", cmd)
		if err != nil {
			return body, headers, fmt.Errorf("%s: %v: %s %s", cmd, err, strings.TrimSpace(body), strings.TrimSpace(headers))
		}
		if strings.Contains(headers, ":"+strconv.Itoa(gateway.DefaultPort)) {
			return body, headers, fmt.Errorf("%s: a response names nginx's port:\n%s", url, headers)
		}
		return body, headers, nil
	}
	fetch := func(url string) (string, error) {
		body, _, err := get(url)
		return body, err
	}
	eventually := func(what string, cond func() error) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			err := cond()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s: %v", what, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	answersFrom := func(url, app string) func() error {
		return func() error {
			out, err := fetch(url)
			if err != nil {
				return err
			}
			if !strings.HasPrefix(out, app+" ") {
				return fmt.Errorf("%s answered %q, want %s", url, out, app)
			}
			return nil
		}
	}

	t.Run("service names resolve in pods", func(t *testing.T) {
		eventually("nslookup of the full name", func() error {
			out, err := exec("timeout 10 nslookup a.default.svc.cluster.local")
			if err == nil && !strings.Contains(out, svcA.Spec.ClusterIP) {
				err = fmt.Errorf("%q lacks %s", out, svcA.Spec.ClusterIP)
			}
			return err
		})
		// The pod's resolver (search path, ndots 5) finds the short forms.
		for _, name := range []string{"a", "a.default", "a.default.svc", "a.default.svc.cluster.local"} {
			eventually("http://"+name+"/", answersFrom("http://"+name+"/", "a"))
		}
		pods, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=a"})
		if err != nil {
			t.Fatal(err)
		}
		eventually("the headless service's pod IPs", func() error {
			out, err := exec("timeout 10 nslookup a-pods.default.svc.cluster.local")
			if err != nil {
				return err
			}
			for _, p := range pods.Items {
				if !strings.Contains(out, p.Status.PodIP) {
					return fmt.Errorf("headless lookup %q lacks pod %s (%s)", out, p.Name, p.Status.PodIP)
				}
			}
			return nil
		})
		out, err := exec("timeout 10 nslookup nosuch.default.svc.cluster.local")
		if err == nil || !strings.Contains(out+err.Error(), "NXDOMAIN") {
			t.Errorf("a missing name: %q, %v; want NXDOMAIN", out, err)
		}
	})

	t.Run("the example's NodePort answers on every node", func(t *testing.T) {
		for _, n := range c.nodes {
			body, err := httpGet("", net.JoinHostPort(n.ip.String(), "30080"))
			if err != nil || !strings.HasPrefix(body, "web ") {
				t.Errorf("NodePort 30080 of %s: %q, %v", n.name, body, err)
			}
		}
	})

	t.Run("pods reach the apiserver as default/kubernetes", func(t *testing.T) {
		env := k.OK(t, "exec", "client", "--", "env")
		if !strings.Contains(env, "KUBERNETES_SERVICE_HOST=10.96.0.1\n") || !strings.Contains(env, "KUBERNETES_SERVICE_PORT=443\n") {
			t.Errorf("pod environment lacks the kubernetes service:\n%s", env)
		}
		eventually("kubernetes.default resolving", func() error {
			out, err := exec("timeout 10 nslookup kubernetes.default.svc.cluster.local")
			if err == nil && !strings.Contains(out, "10.96.0.1\n") {
				err = fmt.Errorf("%q lacks 10.96.0.1", out)
			}
			return err
		})
		// What an in-cluster client does: TLS to the service address,
		// verifying the cluster CA and the name kubernetes.default.svc.
		eventually("GET /version through 10.96.0.1:443 from a node", func() error {
			body, err := apiserverGet(n2.netns, c, "10.96.0.1:443", "/version")
			if err == nil && !strings.Contains(body, `"gitVersion"`) {
				err = fmt.Errorf("/version answered %q", body)
			}
			return err
		})
	})

	t.Run("a DNSRecord routes host and paths to services", func(t *testing.T) {
		// dns-gateway.yaml's record: /path1 -> a, /path2 -> b, as the
		// seeds' users type them, and with the trailing slash.
		eventually("minik8s.com/path1 from a pod", answersFrom("http://minik8s.com/path1", "a"))
		eventually("minik8s.com/path2 from a pod", answersFrom("http://minik8s.com/path2", "b"))
		for _, p := range []struct{ path, app string }{{"/path1/", "a"}, {"/path2/", "b"}} {
			if err := answersFrom("http://minik8s.com"+p.path, p.app)(); err != nil {
				t.Error(err)
			}
		}
		// From another host (node n2's own namespace), on the cluster DNS.
		eventually("minik8s.com/path1 from a node", func() error {
			body, err := hostGet(n2.netns, "minik8s.com", "/path1")
			if err == nil && !strings.HasPrefix(body, "a ") {
				err = fmt.Errorf("answered %q", body)
			}
			return err
		})
		if out := k.OK(t, "get", "dnsrecords"); !strings.Contains(out, "minik8s.com") {
			t.Errorf("kubectl get dnsrecords:\n%s", out)
		}
		eventually("the record's status", func() error {
			out := k.OK(t, "describe", "dnsrecord", "gateway")
			if !strings.Contains(out, "Routed") {
				return fmt.Errorf("describe lacks the Routed condition:\n%s", out)
			}
			return nil
		})

		// Update: a third path; the first two keep answering.
		c.apply(`apiVersion: minik8s.io/v1
kind: DNSRecord
metadata: {name: gateway}
spec:
  host: minik8s.com
  paths:
  - {path: /path1, service: a, port: 80}
  - {path: /path2, service: b, port: http}
  - {path: /path3, service: c, port: 80}
`)
		eventually("minik8s.com/path3 after the update", answersFrom("http://minik8s.com/path3", "c"))
		// httpd redirects its /dir to /dir/: the client is sent to
		// /path3/dir/, on the port it came to. Awaited too: right after a
		// reload an old nginx worker, with the configuration before
		// /path3, may still take the redirected request's new connection
		// (404) before it has quit.
		eventually("minik8s.com/path3/dir redirected to /path3/dir/", func() error {
			body, headers, err := get("http://minik8s.com/path3/dir")
			if err != nil || body != "c dir\n" || !strings.Contains(headers, "Location: /path3/dir/\n") {
				return fmt.Errorf("minik8s.com/path3/dir: %q, %v, headers:\n%s", body, err, headers)
			}
			return nil
		})
		for _, p := range []struct{ path, app string }{{"/path1/", "a"}, {"/path2/", "b"}} {
			if err := answersFrom("http://minik8s.com"+p.path, p.app)(); err != nil {
				t.Errorf("after the update: %v", err)
			}
		}

		// Deleted, the name stops resolving.
		k.OK(t, "delete", "dnsrecord", "gateway")
		eventually("minik8s.com to stop resolving", func() error {
			if out, err := exec("timeout 10 nslookup minik8s.com"); err == nil {
				return fmt.Errorf("minik8s.com still resolves: %q", out)
			}
			return nil
		})
	})

	t.Run("an Ingress is served by the same gateway", func(t *testing.T) {
		c.apply(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop}
spec:
  rules:
  - host: shop.example.test
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: b, port: {number: 80}}}}
`)
		eventually("shop.example.test from a pod", answersFrom("http://shop.example.test/", "b"))
		eventually("the Ingress's address", func() error {
			ing, err := c.client.NetworkingV1().Ingresses("default").Get(ctx, "shop", metav1.GetOptions{})
			if err != nil || len(ing.Status.LoadBalancer.Ingress) == 0 {
				return fmt.Errorf("no address yet: %v", err)
			}
			return nil
		})
	})
}

// hostGet resolves host on the cluster DNS and fetches path from it,
// from the network namespace netns, as a program on that host would.
func hostGet(netns, host, path string) (string, error) {
	var ip string
	err := network.InNetNS(netns, func() (err error) {
		// A query of our own: Go's resolver would dial from other
		// goroutines, outside this thread's namespace.
		ip, err = lookupA(net.JoinHostPort(clusterDNSIP, "53"), host)
		return err
	})
	if err != nil {
		return "", err
	}
	return httpFetch(netns, net.JoinHostPort(ip, "80"), host, path)
}

// lookupA asks server for host's A record over UDP, from the calling
// goroutine's thread.
func lookupA(server, host string) (string, error) {
	name, err := dnsmessage.NewName(host + ".")
	if err != nil {
		return "", err
	}
	q := dnsmessage.Message{Header: dnsmessage.Header{ID: 7, RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}}}
	packed, err := q.Pack()
	if err != nil {
		return "", err
	}
	conn, err := net.DialTimeout("udp", server, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := conn.Write(packed); err != nil {
		return "", err
	}
	buf := make([]byte, 1500)
	n, err := conn.Read(buf)
	if err != nil {
		return "", err
	}
	var resp dnsmessage.Message
	if err := resp.Unpack(buf[:n]); err != nil {
		return "", err
	}
	for _, a := range resp.Answers {
		if r, ok := a.Body.(*dnsmessage.AResource); ok {
			return net.IP(r.A[:]).String(), nil
		}
	}
	return "", fmt.Errorf("%s: no A record (rcode %v)", host, resp.RCode)
}

// apiserverGet is a GET of path from the apiserver at addr, from the
// network namespace netns, verified as kubernetes.default.svc with the
// cluster CA and authenticated as the admin.
func apiserverGet(netns string, c *cluster, addr, path string) (string, error) {
	cert, err := tls.X509KeyPair(c.cp.Bundle.AdminCertPEM, c.cp.Bundle.AdminKeyPEM)
	if err != nil {
		return "", err
	}
	var body string
	err = network.InNetNS(netns, func() error {
		raw, err := net.DialTimeout("tcp", addr, 3*time.Second)
		if err != nil {
			return err
		}
		conn := tls.Client(raw, &tls.Config{ServerName: "kubernetes.default.svc", RootCAs: c.cp.Bundle.CAPool, Certificates: []tls.Certificate{cert}})
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.0\r\nHost: kubernetes.default.svc\r\n\r\n", path); err != nil {
			return err
		}
		b, err := io.ReadAll(conn)
		if err != nil && len(b) == 0 {
			return err
		}
		resp := string(b)
		if !strings.HasPrefix(resp, "HTTP/1.0 200") && !strings.HasPrefix(resp, "HTTP/1.1 200") {
			return fmt.Errorf("response %q", resp)
		}
		_, body, _ = strings.Cut(resp, "\r\n\r\n")
		return nil
	})
	return body, err
}
