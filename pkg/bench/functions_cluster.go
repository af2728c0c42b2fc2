package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/images"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/platforms"
	"github.com/opencontainers/go-digest"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minik8s/minik8s/pkg/controlplane"
	"github.com/minik8s/minik8s/pkg/image"
	"github.com/minik8s/minik8s/pkg/kubelet/network"
	"github.com/minik8s/minik8s/pkg/node"
	"github.com/minik8s/minik8s/pkg/serverless"
	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
	"github.com/minik8s/minik8s/pkg/serverless/registry"
)

// fnCluster is an in-process control plane, nodes in network namespaces
// of their own plugged into a LAN bridge, the registry on the host's
// loopback and the functions add-on with its router in the first node's
// namespace. Each field is set once its part has started, so close undoes
// exactly what was done.
type fnCluster struct {
	id           string
	dataDir      string
	stopCP       func() error
	client       kubernetes.Interface
	dyn          dynamic.Interface
	bridge       string
	nodes        []*fnNode
	regDir       string
	regAddr      string
	addonsCancel context.CancelFunc
	addonsDone   chan error
	stopInf      context.CancelFunc
	pods         cache.SharedIndexInformer
	deployments  cache.SharedIndexInformer
	tracker      *fnTracker
	routerURL    string
	http         *http.Client
	containerd   *containerd.Client
}

// fnNode is one kubelet in its network namespace.
type fnNode struct {
	name, netnsName, netnsPath, rootDir string
	ip                                  netip.Addr
	cancel                              context.CancelFunc
	done                                chan error
}

func startFnCluster(ctx context.Context, containerdAddress, id string, nodes int, log *slog.Logger) (_ *fnCluster, err error) {
	c := &fnCluster{id: id, tracker: newFnTracker()}
	if c.dataDir, err = os.MkdirTemp("", "minik8s-bench-functions-"); err != nil {
		return nil, err
	}
	cp, stop, err := controlplane.Start(ctx, controlplane.Config{
		DataDir: c.dataDir + "/cp", BindAddress: "127.0.0.1", Port: 0, Logger: log.With("component", "control-plane"),
	})
	if err != nil {
		return c, fmt.Errorf("in-process %w", err)
	}
	c.stopCP = stop
	rc, err := clientcmd.BuildConfigFromFlags("", cp.KubeconfigPath)
	if err != nil {
		return c, fmt.Errorf("kubeconfig: %w", err)
	}
	rc = clientConfig(rc)
	if c.client, err = kubernetes.NewForConfig(rc); err != nil {
		return c, err
	}
	if c.dyn, err = dynamic.NewForConfig(rc); err != nil {
		return c, err
	}

	// The LAN: 172.29.x.0/24, x picked per run so two runs do not meet.
	var b [1]byte
	_, _ = rand.Read(b[:])
	prefix := netip.PrefixFrom(netip.AddrFrom4([4]byte{172, 29, b[0], 0}), 24)
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "mk8sb" + id}}
	if err := netlink.LinkAdd(br); err != nil {
		return c, fmt.Errorf("add LAN bridge %s: %w", br.Name, err)
	}
	c.bridge = br.Name
	if err := netlink.LinkSetUp(br); err != nil {
		return c, fmt.Errorf("LAN bridge %s up: %w", br.Name, err)
	}
	ip := prefix.Addr()
	for i := 1; i <= nodes; i++ {
		ip = ip.Next()
		n := &fnNode{name: fmt.Sprintf("bench-%s-n%d", id, i), netnsName: fmt.Sprintf("mk8s-bench-%s-n%d", id, i), ip: ip}
		c.nodes = append(c.nodes, n)
		if n.netnsPath, err = network.CreateNamedNetNS(network.DefaultNetNSDir, n.netnsName); err != nil {
			n.netnsPath = ""
			return c, err
		}
		if err := attachToLAN(c.bridge, i, n.netnsPath, netip.PrefixFrom(ip, prefix.Bits())); err != nil {
			return c, fmt.Errorf("node %s on the LAN: %w", n.name, err)
		}
		if n.rootDir, err = os.MkdirTemp("", "minik8s-bench-functions-node-"); err != nil {
			return c, err
		}
		certPEM, keyPEM, err := cp.Bundle.IssueClientCert("system:node:"+n.name, []string{"system:nodes"}, 0)
		if err != nil {
			return c, fmt.Errorf("node certificate: %w", err)
		}
		nodeCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		n.cancel, n.done = cancel, make(chan error, 1)
		nodeCfg := node.Config{
			NodeName: n.name, NodeIP: ip.String(),
			REST: &rest.Config{Host: cp.URL, QPS: 50, Burst: 100,
				TLSClientConfig: rest.TLSClientConfig{CAData: cp.Bundle.CAPEM, CertData: certPEM, KeyData: keyPEM}},
			ClientCA: cp.Bundle.CAPool, ContainerdAddress: containerdAddress,
			ClusterCIDR: controlplane.DefaultClusterCIDR, RootDir: n.rootDir,
			KubeletAddress: net.JoinHostPort(ip.String(), "10250"), HostNetNS: n.netnsPath,
			Logger: log.With("node", n.name),
		}
		go func() { n.done <- node.Run(nodeCtx, nodeCfg) }()
	}

	// The registry on a free loopback port and the add-on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return c, err
	}
	c.regAddr = ln.Addr().String()
	_ = ln.Close()
	c.regDir = c.dataDir + "/registry"
	if err := os.MkdirAll(c.regDir, 0o755); err != nil {
		return c, err
	}
	regReady, fnReady := make(chan struct{}), make(chan struct{})
	reg, err := registry.New(registry.Config{Dir: c.regDir, Address: c.regAddr, Logger: log,
		Ready: func() { close(regReady) }})
	if err != nil {
		return c, err
	}
	first := c.nodes[0]
	addonsCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.addonsCancel, c.addonsDone = cancel, make(chan error, 2)
	go func() { c.addonsDone <- reg.Start(addonsCtx) }()
	go func() {
		c.addonsDone <- serverless.Run(addonsCtx, serverless.Config{Client: c.client, Dynamic: c.dyn, Registry: c.regAddr,
			NetNS: first.netnsPath, Address: first.ip, NodeName: first.name,
			Tick: benchTick, StableWindow: benchStableWindow, Logger: log, Ready: func() { close(fnReady) }})
	}()
	c.routerURL = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(serverless.DefaultRouterPort))
	c.http = netnsHTTPClient(first.netnsPath, 64)

	// Watches of the function's pods and Deployment, where the phases of
	// a cold start are read, and of the nodes.
	infCtx, stopInf := context.WithCancel(context.WithoutCancel(ctx))
	c.stopInf = stopInf
	byFunction := informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = fnmeta.FunctionLabel + "=" + benchFunction
	})
	factory := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace("default"), byFunction)
	c.pods = factory.Core().V1().Pods().Informer()
	c.deployments = factory.Apps().V1().Deployments().Informer()
	nodeInf := informers.NewSharedInformerFactory(c.client, 0).Core().V1().Nodes().Informer()
	for _, inf := range []cache.SharedIndexInformer{c.pods, c.deployments, nodeInf} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    c.tracker.observe,
			UpdateFunc: func(_, obj any) { c.tracker.observe(obj) },
			DeleteFunc: c.tracker.forgetObject,
		}); err != nil {
			return c, err
		}
		go inf.Run(infCtx.Done())
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.pods.HasSynced, c.deployments.HasSynced, nodeInf.HasSynced) {
		return c, fmt.Errorf("watches: %w", context.Cause(ctx))
	}
	err = c.waitUntil(ctx, 2*time.Minute, func() bool {
		ready := 0
		for _, obj := range nodeInf.GetStore().List() {
			if n, ok := obj.(*corev1.Node); ok && c.isOurs(n.Name) && n.Spec.PodCIDR != "" && nodeIsReady(n) {
				ready++
			}
		}
		return ready == len(c.nodes)
	})
	if err != nil {
		return c, fmt.Errorf("%d nodes Ready with a pod CIDR: %w", len(c.nodes), err)
	}
	for what, ch := range map[string]chan struct{}{"registry": regReady, "function router": fnReady} {
		select {
		case <-ch:
		case err := <-c.addonsDone:
			c.addonsDone <- err // for close
			return c, fmt.Errorf("functions add-on or registry stopped: %v", err)
		case <-time.After(time.Minute):
			return c, fmt.Errorf("%s not ready after a minute", what)
		case <-ctx.Done():
			return c, ctx.Err()
		}
	}
	return c, nil
}

func (c *fnCluster) isOurs(nodeName string) bool {
	for _, n := range c.nodes {
		if n.name == nodeName {
			return true
		}
	}
	return false
}

func (c *fnCluster) describeNodes() string {
	parts := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		parts[i] = fmt.Sprintf("%s (netns %s, %s)", n.name, n.netnsName, n.ip)
	}
	return fmt.Sprintf("%d: %s", len(c.nodes), strings.Join(parts, ", "))
}

// attachToLAN plugs the namespace at path into the bridge as eth0 with
// address addr.
func attachToLAN(bridge string, port int, path string, addr netip.Prefix) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	name := fmt.Sprintf("%s.%d", bridge, port)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: "eth0", PeerNamespace: netlink.NsFd(fd)}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("add veth %s: %w", name, err)
	}
	br, err := netlink.LinkByName(bridge)
	if err != nil {
		return err
	}
	link, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	if err := netlink.LinkSetMaster(link, br); err != nil {
		return err
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return err
	}
	return network.InNetNS(path, func() error {
		eth, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		ipn := &net.IPNet{IP: addr.Addr().AsSlice(), Mask: net.CIDRMask(addr.Bits(), 32)}
		if err := netlink.AddrAdd(eth, &netlink.Addr{IPNet: ipn}); err != nil {
			return err
		}
		return netlink.LinkSetUp(eth)
	})
}

// netnsHTTPClient opens its connections inside the network namespace at
// path.
func netnsHTTPClient(path string, conns int) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{
		Timeout: 2 * time.Minute,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, nw, addr string) (conn net.Conn, err error) {
				err = network.InNetNS(path, func() error {
					conn, err = dialer.DialContext(ctx, nw, addr)
					return err
				})
				return conn, err
			},
			MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute,
		},
	}
}

// waitUntil waits, on the watches' events, until cond holds; it fails
// early when a node stops.
func (c *fnCluster) waitUntil(ctx context.Context, timeout time.Duration, cond func() bool) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-c.tracker.changed:
		case <-tick.C:
		case <-timer.C:
			return fmt.Errorf("not after %s", timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
		for _, n := range c.nodes {
			select {
			case err := <-n.done:
				n.done <- err // for close
				return fmt.Errorf("node %s stopped: %v", n.name, err)
			default:
			}
		}
	}
	return nil
}

// close stops the add-on and the registry, deletes the function's pods
// and waits until they are gone, stops the nodes and the control plane, removes the
// network namespaces, the bridge, the directories, what containerd holds
// of the nodes and the images they pulled from the registry.
func (c *fnCluster) close(ctx context.Context, client *containerd.Client) error {
	var errs []error
	if c.http != nil {
		c.http.CloseIdleConnections()
	}
	// The add-on first: its router closes its connections to the
	// instances while they still answer, so that no socket of the node's
	// namespace outlives the pods waiting for a peer that is gone (which
	// would keep the namespace, and its end of the LAN, alive a while).
	// With the function controller stopped, nothing replaces what is
	// deleted next; the registry's images go with its directory.
	if c.addonsCancel != nil {
		c.addonsCancel()
		for range 2 {
			select {
			case err := <-c.addonsDone:
				if err != nil && !errors.Is(err, context.Canceled) {
					errs = append(errs, fmt.Errorf("functions add-on or registry: %w", err))
				}
			case <-time.After(30 * time.Second):
				errs = append(errs, errors.New("functions add-on or registry did not stop in 30s"))
			}
		}
	}
	if c.client != nil && c.pods != nil && c.pods.HasSynced() {
		// Workloads first, or their controllers replace the pods.
		sel := metav1.ListOptions{LabelSelector: fnmeta.FunctionLabel + "=" + benchFunction}
		_ = c.client.AppsV1().Deployments("default").DeleteCollection(ctx, metav1.DeleteOptions{}, sel)
		_ = c.client.AppsV1().ReplicaSets("default").DeleteCollection(ctx, metav1.DeleteOptions{}, sel)
		grace := int64(2)
		if err := c.client.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace}, sel); err != nil {
			errs = append(errs, fmt.Errorf("delete the function's pods: %w", err))
		} else if err := c.waitUntil(ctx, 2*time.Minute, func() bool { return len(c.pods.GetStore().ListKeys()) == 0 }); err != nil {
			errs = append(errs, fmt.Errorf("the function's pods removed by the kubelets: %w", err))
		}
	}
	if c.stopInf != nil {
		c.stopInf()
	}
	for _, n := range c.nodes {
		if n.cancel == nil {
			continue
		}
		n.cancel()
		select {
		case err := <-n.done:
			if err != nil && !errors.Is(err, context.Canceled) {
				errs = append(errs, fmt.Errorf("node %s: %w", n.name, err))
			}
		case <-time.After(30 * time.Second):
			errs = append(errs, fmt.Errorf("node %s did not stop in 30s", n.name))
		}
		if client != nil {
			if left, err := removeNodeContainers(ctx, client, n.name); err != nil {
				errs = append(errs, err)
			} else if len(left) > 0 {
				errs = append(errs, fmt.Errorf("containers the kubelet of %s left behind (removed now): %s", n.name, strings.Join(left, ", ")))
			}
		}
	}
	if client != nil && c.regAddr != "" {
		if _, err := deleteRegistryImages(ctx, client, c.regAddr); err != nil {
			errs = append(errs, err)
		}
	}
	if c.stopCP != nil {
		if err := c.stopCP(); err != nil {
			errs = append(errs, err)
		}
	}
	// The LAN's veths, host ends first: a namespace may outlive its
	// unmounting a while (sockets of its that the kernel still closes),
	// and its veth with it.
	for i, n := range c.nodes {
		if link, err := netlink.LinkByName(fmt.Sprintf("%s.%d", c.bridge, i+1)); err == nil && c.bridge != "" {
			if err := netlink.LinkDel(link); err != nil {
				errs = append(errs, fmt.Errorf("delete %s's LAN veth: %w", n.name, err))
			}
		}
	}
	for _, n := range c.nodes {
		if n.netnsPath != "" {
			if err := network.RemoveNamedNetNS(network.DefaultNetNSDir, n.netnsName); err != nil {
				errs = append(errs, err)
			}
		}
		if n.rootDir != "" {
			if err := os.RemoveAll(n.rootDir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if c.bridge != "" {
		if link, err := netlink.LinkByName(c.bridge); err == nil {
			if err := netlink.LinkDel(link); err != nil {
				errs = append(errs, fmt.Errorf("delete LAN bridge %s: %w", c.bridge, err))
			}
		}
	}
	if c.dataDir != "" {
		if err := os.RemoveAll(c.dataDir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// pulledImages is what deleteRegistryImages removed.
type pulledImages struct {
	names []string
	// bytes is the size of the images' layers; keptBytes that of the
	// layers containerd still holds afterwards (shared with other images).
	bytes, keptBytes int64
}

// deleteRegistryImages deletes, synchronously (content and snapshots
// garbage-collected before it returns), the images of containerd's
// minik8s namespace pulled from the registry at regAddr.
func deleteRegistryImages(ctx context.Context, client *containerd.Client, regAddr string) (pulledImages, error) {
	ctx = namespaces.WithNamespace(ctx, image.Namespace)
	var out pulledImages
	list, err := client.ImageService().List(ctx)
	if err != nil {
		return out, fmt.Errorf("list images: %w", err)
	}
	type layer struct {
		digest digest.Digest
		size   int64
	}
	var layers []layer
	cs := client.ContentStore()
	for _, img := range list {
		if !strings.HasPrefix(img.Name, regAddr+"/") {
			continue
		}
		if m, err := images.Manifest(ctx, cs, img.Target, platforms.Default()); err == nil {
			for _, l := range m.Layers {
				layers = append(layers, layer{l.Digest, l.Size})
				out.bytes += l.Size
			}
		}
		if err := client.ImageService().Delete(ctx, img.Name, images.SynchronousDelete()); err != nil && !errdefs.IsNotFound(err) {
			return out, fmt.Errorf("delete image %s: %w", img.Name, err)
		}
		out.names = append(out.names, img.Name)
	}
	for _, l := range layers {
		if _, err := cs.Info(ctx, l.digest); err == nil {
			out.keptBytes += l.size
		}
	}
	return out, nil
}
