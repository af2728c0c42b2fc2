package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minik8s/minik8s/pkg/controlplane"
	"github.com/minik8s/minik8s/pkg/image"
	"github.com/minik8s/minik8s/pkg/kubelet/network"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime/runtimetest"
	"github.com/minik8s/minik8s/pkg/node"
	"github.com/minik8s/minik8s/test/testutil"
)

// cluster is a control plane in the test process and nodes on the
// machine's containerd. Each node lives in a network namespace of its own,
// plugged into a LAN bridge the test creates, so its bridge, routes and
// iptables rules touch nothing of the host's.
type cluster struct {
	t          *testing.T
	tag        string
	containerd string
	cp         controlplane.ControlPlane
	config     *rest.Config
	client     kubernetes.Interface
	kubectl    *testutil.Kubectl
	lan        *lan
	nodes      map[string]*testNode
	logs       *os.File
	// clusterDNS is what kubelets give ClusterFirst pods (newClusterWithAddons).
	clusterDNS []string
	// proxyMode is the nodes' service proxy mode (newClusterProxyMode).
	proxyMode string
	// nodeLease is the kubelets' Lease duration: the tuned node monitor
	// grace period, so healthy nodes renew several times within it.
	nodeLease time.Duration
}

// testNode is one kubelet: its namespace, address and the node.Run
// that serves it.
type testNode struct {
	name, netns string
	ip          netip.Addr
	rootDir     string
	labels      map[string]string
	cancel      context.CancelFunc
	done        chan error
}

// requireNodes skips unless the test can run real pods: root, containerd
// (started when none answers), Debian's CNI plugins and iptables. CI has
// them all (hack/install-deps.sh), so there nothing skips.
func requireNodes(t *testing.T) string {
	t.Helper()
	addr := runtimetest.Containerd(t)
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if _, err := invoke.FindInPath(p, []string{"/usr/lib/cni", "/opt/cni/bin"}); err != nil {
			t.Skipf("needs CNI plugin %s (apt-get install containernetworking-plugins): %v", p, err)
		}
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("needs iptables (apt-get install iptables)")
	}
	return addr
}

// newCluster starts a control plane and n nodes, named <tag>-n1 ...
// Everything is removed when the test ends.
func newCluster(t *testing.T, n int) *cluster {
	t.Helper()
	return newClusterWith(t, n, nil)
}

// newClusterWith is newCluster with the control plane's config adjusted
// by tune (shorter controller periods, as a user could configure them).
func newClusterWith(t *testing.T, n int, tune func(*controlplane.Config)) *cluster {
	t.Helper()
	return startCluster(t, n, tune, false)
}

func startCluster(t *testing.T, n int, tune func(*controlplane.Config), addons bool) *cluster {
	t.Helper()
	addr := requireNodes(t)
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	c := &cluster{t: t, tag: "e" + hex.EncodeToString(b), containerd: addr, nodes: map[string]*testNode{}}
	logs, err := os.Create(filepath.Join(t.TempDir(), "cluster.log"))
	if err != nil {
		t.Fatal(err)
	}
	c.logs = logs
	t.Cleanup(func() {
		if t.Failed() {
			tail, _ := exec.Command("tail", "-n", "60", logs.Name()).Output()
			t.Logf("last lines of the cluster's log:\n%s", tail)
			// The whole log outlives the test's temporary directory.
			kept := filepath.Join(os.TempDir(), "minik8s-e2e-"+c.tag+".log")
			if b, err := os.ReadFile(logs.Name()); err == nil && os.WriteFile(kept, b, 0o644) == nil {
				t.Logf("the cluster's whole log: %s", kept)
			}
		}
		_ = logs.Close()
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Imported once, before the nodes start, so they don't race to do it.
	if err := image.EnsureBuiltin(ctx, addr); err != nil {
		t.Fatalf("built-in images: %v", err)
	}
	c.startControlPlane(tune)
	c.lan = newLAN(t, c.tag)
	if addons {
		c.clusterDNS = []string{clusterDNSIP}
	}
	for i := 1; i <= n; i++ {
		c.addNode(fmt.Sprintf("%s-n%d", c.tag, i), nil)
	}
	// Pods first, then nodes, then the control plane: the kubelets stop
	// the pods they run, so nothing is left on the machine.
	t.Cleanup(c.teardown)
	c.waitNodesReady(n)
	return c
}

func (c *cluster) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(c.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func (c *cluster) startControlPlane(tune func(*controlplane.Config)) {
	t := c.t
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan controlplane.ControlPlane, 1)
	done := make(chan error, 1)
	cfg := controlplane.Config{
		DataDir: t.TempDir(), BindAddress: "127.0.0.1", Port: 0, Logger: c.logger(),
		Ready: func(cp controlplane.ControlPlane) { ready <- cp },
	}
	if tune != nil {
		tune(&cfg)
	}
	c.nodeLease = cfg.Controllers.NodeMonitorGracePeriod
	go func() { done <- controlplane.Run(ctx, cfg) }()
	select {
	case c.cp = <-ready:
	case err := <-done:
		t.Fatalf("control plane exited: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("control plane not ready after a minute")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("control plane did not stop in 30s")
		}
	})
	rc, err := clientcmd.BuildConfigFromFlags("", c.cp.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = 100, 200
	c.config = rc
	c.client = kubernetes.NewForConfigOrDie(rc)
	c.kubectl = testutil.NewKubectl(t, c.cp.KubeconfigPath)
}

// addNode creates the node's namespace on the LAN and starts its kubelet.
func (c *cluster) addNode(name string, labels map[string]string) *testNode {
	t := c.t
	netnsName := "mk8s-" + name
	path, err := network.CreateNamedNetNS(network.DefaultNetNSDir, netnsName)
	if err != nil {
		t.Fatalf("create netns: %v", err)
	}
	t.Cleanup(func() {
		if err := network.RemoveNamedNetNS(network.DefaultNetNSDir, netnsName); err != nil {
			t.Errorf("remove netns %s: %v", netnsName, err)
		}
	})
	n := &testNode{name: name, netns: path, rootDir: t.TempDir(), labels: labels}
	n.ip = c.lan.attach(t, path, len(c.nodes)+1)
	c.nodes[name] = n
	c.startNode(n)
	return n
}

// startNode runs the node's kubelet (again, after stopNode).
func (c *cluster) startNode(n *testNode) {
	t := c.t
	certPEM, keyPEM, err := c.cp.Bundle.IssueClientCert("system:node:"+n.name, []string{"system:nodes"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done = cancel, make(chan error, 1)
	cfg := node.Config{
		NodeName: n.name, NodeIP: n.ip.String(), Labels: n.labels,
		REST: &rest.Config{Host: c.cp.URL, QPS: 50, Burst: 100,
			TLSClientConfig: rest.TLSClientConfig{CAData: c.cp.Bundle.CAPEM, CertData: certPEM, KeyData: keyPEM}},
		ClientCA: c.cp.Bundle.CAPool, ContainerdAddress: c.containerd,
		ClusterCIDR: controlplane.DefaultClusterCIDR, ServiceCIDR: serviceCIDR, RootDir: n.rootDir, ClusterDNS: c.clusterDNS,
		KubeletAddress: net.JoinHostPort(n.ip.String(), "10250"), HostNetNS: n.netns, ProxyMode: c.proxyMode,
		LeaseDuration: c.nodeLease, Logger: c.logger().With("node", n.name),
	}
	go func() { n.done <- node.Run(ctx, cfg) }()
}

// stopNode stops the kubelet as a restart would; its pods keep running.
func (c *cluster) stopNode(n *testNode) {
	c.t.Helper()
	n.cancel()
	select {
	case err := <-n.done:
		if err != nil && err != context.Canceled {
			c.t.Errorf("node %s stopped with: %v", n.name, err)
		}
	case <-time.After(30 * time.Second):
		c.t.Errorf("node %s did not stop in 30s", n.name)
	}
}

func (c *cluster) waitNodesReady(n int) {
	c.t.Helper()
	c.waitFor(2*time.Minute, fmt.Sprintf("%d Ready nodes with pod CIDRs", n), func(ctx context.Context) (bool, error) {
		list, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, nd := range list.Items {
			if nd.Spec.PodCIDR != "" && nodeReady(&nd) {
				ready++
			}
		}
		return ready == n, nil
	})
}

// teardown deletes every pod, waits until the kubelets have stopped
// them, stops the kubelets and checks containerd holds nothing of theirs.
func (c *cluster) teardown() {
	t := c.t
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nss, err := c.client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err == nil {
		// Workloads first, or their controllers replace the pods.
		all, bg := metav1.ListOptions{}, metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationBackground)}
		for _, ns := range nss.Items {
			_ = c.client.BatchV1().CronJobs(ns.Name).DeleteCollection(ctx, bg, all)
			_ = c.client.BatchV1().Jobs(ns.Name).DeleteCollection(ctx, bg, all)
			_ = c.client.AppsV1().Deployments(ns.Name).DeleteCollection(ctx, bg, all)
			_ = c.client.AppsV1().ReplicaSets(ns.Name).DeleteCollection(ctx, bg, all)
			_ = c.client.AppsV1().DaemonSets(ns.Name).DeleteCollection(ctx, bg, all)
			_ = c.client.AppsV1().StatefulSets(ns.Name).DeleteCollection(ctx, bg, all)
		}
		for _, ns := range nss.Items {
			_ = c.client.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(1))}, all)
		}
	}
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods, err := c.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("pods not gone 2 minutes after deletion: %v", err)
	}
	for _, n := range c.nodes {
		c.stopNode(n)
	}
	left := c.containersOf(ctx)
	if len(left) > 0 {
		t.Errorf("containers left behind in containerd: %v", left)
	}
}

// containersOf lists the containerd containers of this cluster's nodes.
func (c *cluster) containersOf(ctx context.Context) []string {
	client, err := containerd.New(c.containerd)
	if err != nil {
		c.t.Fatal(err)
	}
	defer client.Close()
	ctx = namespaces.WithNamespace(ctx, image.Namespace)
	var out []string
	for name := range c.nodes {
		cs, err := client.ContainerService().List(ctx, fmt.Sprintf("labels.%q==%q", runtime.LabelNode, name))
		if err != nil {
			c.t.Fatal(err)
		}
		for _, ct := range cs {
			out = append(out, name+"/"+ct.Labels[runtime.LabelPodName]+"/"+ct.ID)
		}
	}
	return out
}

func (c *cluster) waitFor(timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	c.t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, cond); err != nil {
		c.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// waitPod waits until the pod's state satisfies cond and returns it.
func (c *cluster) waitPod(ns, name string, timeout time.Duration, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	c.t.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := c.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return cond(p), nil
	})
	if err != nil {
		c.t.Fatalf("pod %s/%s: waiting for %s: %v\nlast status: %s", ns, name, what, err, describeStatus(last))
	}
	return last
}

// clientPod is a busybox pod that sleeps, for kubectl exec to run
// clients (wget, nslookup) from; on node when it is not empty.
func clientPod(name, node string) string {
	pin := ""
	if node != "" {
		pin = "\n  nodeName: " + node
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:%s
  terminationGracePeriodSeconds: 1
  containers:
  - {name: sh, image: busybox, command: ["sleep", "3600"]}
`, name, pin)
}

func (c *cluster) apply(manifest string) {
	c.t.Helper()
	if _, stderr, err := c.kubectl.RunWithInput(c.t, manifest, "apply", "-f", "-"); err != nil {
		c.t.Fatalf("kubectl apply: %v\n%s", err, stderr)
	}
}

func describeStatus(p *corev1.Pod) string {
	if p == nil {
		return "(never read)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s node %q ip %s", p.Status.Phase, p.Spec.NodeName, p.Status.PodIP)
	for _, cond := range p.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s(%s)", cond.Type, cond.Status, cond.Message)
	}
	for _, cs := range p.Status.ContainerStatuses {
		fmt.Fprintf(&b, "; %s restarts=%d ready=%v state=%+v last=%+v", cs.Name, cs.RestartCount, cs.Ready, cs.State, cs.LastTerminationState)
	}
	return b.String()
}

func running(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && podReady(p) }

func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }

// lan is an L2 segment: a bridge in the host's namespace, made by the
// test, which the nodes plug into. The apiserver reaches the kubelets
// over it (logs, exec); nothing is routed beyond it.
type lan struct {
	bridge string
	prefix netip.Prefix
	// gateway is the host's address on the LAN (.254).
	gateway netip.Addr
}

func newLAN(t *testing.T, tag string) *lan {
	t.Helper()
	b := make([]byte, 1)
	_, _ = rand.Read(b)
	// 172.30.x.0/24: a private range, picked per run so two runs on one
	// machine do not meet.
	l := &lan{bridge: "mk8s" + tag, prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{172, 30, b[0], 0}), 24)}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: l.bridge}}
	if err := netlink.LinkAdd(br); err != nil {
		t.Fatalf("add LAN bridge: %v", err)
	}
	t.Cleanup(func() {
		if err := netlink.LinkDel(br); err != nil {
			t.Errorf("delete LAN bridge %s: %v", l.bridge, err)
		}
	})
	l.gateway = netip.AddrFrom4([4]byte{172, 30, b[0], 254})
	if err := netlink.AddrAdd(br, &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(l.gateway, 24))}); err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(br); err != nil {
		t.Fatal(err)
	}
	return l
}

// attach plugs the namespace at path into the LAN as eth0 with the
// host-th address of its prefix.
func (l *lan) attach(t *testing.T, path string, host int) netip.Addr {
	t.Helper()
	ip := l.prefix.Addr()
	for range host {
		ip = ip.Next()
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	port := fmt.Sprintf("%s.%d", l.bridge, host)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: port}, PeerName: "eth0", PeerNamespace: netlink.NsFd(fd)}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("add veth: %v", err)
	}
	br, err := netlink.LinkByName(l.bridge)
	if err != nil {
		t.Fatal(err)
	}
	link, err := netlink.LinkByName(port)
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetMaster(link, br); err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		t.Fatal(err)
	}
	err = network.InNetNS(path, func() error {
		eth, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		if err := netlink.AddrAdd(eth, &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(ip, l.prefix.Bits()))}); err != nil {
			return err
		}
		return netlink.LinkSetUp(eth)
	})
	if err != nil {
		t.Fatalf("configure eth0 in %s: %v", path, err)
	}
	return ip
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
