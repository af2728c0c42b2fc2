package e2e

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minik8s/minik8s/pkg/bootstrap"
	"github.com/minik8s/minik8s/pkg/controllermanager"
	"github.com/minik8s/minik8s/pkg/controlplane"
	"github.com/minik8s/minik8s/pkg/image"
	"github.com/minik8s/minik8s/pkg/kubelet/network"
	"github.com/minik8s/minik8s/pkg/node"
	"github.com/minik8s/minik8s/pkg/pki"
	"github.com/minik8s/minik8s/pkg/scheduler"
	"github.com/minik8s/minik8s/test/testutil"
)

// The control plane crashes and comes back: `minik8s server` runs as a
// process of its own, is killed with SIGKILL while Deployments and a Job
// run, and starts again on the same data dir and port. Nothing is lost and
// nothing restarts: the objects are the same, the containers never
// noticed, the kubelets and the controllers reconnect by themselves and
// carry on.
//
// A Service in front of the Deployment answers throughout: its rules stay
// in the nodes' kernels while the control plane is away, and the Service
// and its EndpointSlice come back as they were.
func TestControlPlaneRestart(t *testing.T) {
	sc := newServerCluster(t, 2)
	c := sc.cluster
	c.deleteWorkloadsAtCleanup()
	ctx := context.Background()
	k := c.kubectl

	c.apply(`apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {color: blue}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: s3cret}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: web, image: busybox, command: ["sh", "-c", "echo up; mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www"]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: work}
spec:
  parallelism: 2
  completions: 2
  template:
    metadata: {labels: {app: work}}
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - {name: work, image: busybox, command: ["sh", "-c", "echo working; exec sleep 600"]}
`)
	c.waitFor(2*time.Minute, "3 web and 2 work pods Running", func(ctx context.Context) (bool, error) {
		web, work := c.podsOf(ctx, "app=web"), c.podsOf(ctx, "app=work")
		return len(web) == 3 && len(work) == 2 && all(web, running) && all(work, running), nil
	})
	svc, err := c.client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var client *testNode
	for _, n := range c.nodes {
		client = n
		break
	}
	webAddr := net.JoinHostPort(svc.Spec.ClusterIP, "80")
	c.waitFor(time.Minute, "the web Service answering from node "+client.name, func(context.Context) (bool, error) {
		_, err := httpGet(client.netns, webAddr)
		return err == nil, nil
	})
	stopAsking := askContinuously(client.netns, webAddr)
	before := c.state(ctx)
	holders := leaseHolders(ctx, t, c.client)

	// The crash. The kubelets keep their pods running without it.
	start := time.Now()
	sc.server.kill()
	time.Sleep(3 * time.Second)
	if got := c.containersOf(ctx); !slices.Equal(sorted(got), before.containers) {
		t.Errorf("containers while the control plane is down:\n%v\nwant those from before:\n%v", got, before.containers)
	}
	sc.server.start()
	sc.server.waitServing(c.client)
	t.Logf("apiserver serving again %v after the kill", since(start))

	// The new process's controller manager and scheduler take over once
	// the dead one's leases expire.
	c.waitFor(time.Minute, "the restarted controllers to hold their leases", func(ctx context.Context) (bool, error) {
		now := leaseHolders(ctx, t, c.client)
		for name, old := range holders {
			if now[name] == "" || now[name] == old {
				return false, nil
			}
		}
		return true, nil
	})
	t.Logf("controller manager and scheduler leading again %v after the kill", since(start))
	restarted := time.Now()
	c.waitNodesReady(2)
	// The kubelets' heartbeats resume: both renew their node Leases.
	c.waitFor(time.Minute, "the nodes' Leases renewed after the restart", func(ctx context.Context) (bool, error) {
		for name := range c.nodes {
			l, err := c.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
			if err != nil || l.Spec.RenewTime == nil || l.Spec.RenewTime.Time.Before(restarted) {
				return false, nil
			}
		}
		return true, nil
	})
	// A few rounds of the controllers, which must find nothing to do.
	time.Sleep(5 * time.Second)

	after := c.state(ctx)
	asked, failures := stopAsking()
	t.Logf("the web Service answered %d requests over the restart, %d failed", asked, len(failures))
	if len(failures) > 0 {
		t.Errorf("the web Service stopped answering during the restart: %d of %d requests failed, first: %v", len(failures), asked, failures[0])
	}
	for key, was := range before.objects {
		now, ok := after.objects[key]
		switch {
		case !ok:
			t.Errorf("%s is gone after the restart", key)
		case now.uid != was.uid:
			t.Errorf("%s has UID %s after the restart, was %s", key, now.uid, was.uid)
		case now.rv < was.rv:
			t.Errorf("%s has resourceVersion %d after the restart, was %d", key, now.rv, was.rv)
		}
	}
	for key := range after.objects {
		if _, ok := before.objects[key]; !ok {
			t.Errorf("%s was created after the restart; want nothing new", key)
		}
	}
	for name, was := range before.pods {
		now, ok := after.pods[name]
		if !ok {
			continue // reported above
		}
		if !running(&now) {
			t.Errorf("pod %s after the restart: %s", name, describeStatus(&now))
		}
		for i, cs := range was.Status.ContainerStatuses {
			if i >= len(now.Status.ContainerStatuses) {
				t.Errorf("pod %s lost its status of container %s", name, cs.Name)
				continue
			}
			if got := now.Status.ContainerStatuses[i]; got.ContainerID != cs.ContainerID || got.RestartCount != cs.RestartCount {
				t.Errorf("pod %s container %s is %s (%d restarts) after the restart, was %s (%d restarts)",
					name, cs.Name, got.ContainerID, got.RestartCount, cs.ContainerID, cs.RestartCount)
			}
		}
	}
	if !slices.Equal(after.containers, before.containers) {
		t.Errorf("containers after the restart:\n%v\nwant those from before:\n%v", after.containers, before.containers)
	}
	t.Logf("after the restart: %d objects checked, among them %d pods with %d containers", len(before.objects), len(before.pods), len(before.containers))
	if cm, err := c.client.CoreV1().ConfigMaps("default").Get(ctx, "settings", metav1.GetOptions{}); err != nil || cm.Data["color"] != "blue" {
		t.Errorf("configmap settings after the restart: %v, %v", cm, err)
	}
	if s, err := c.client.CoreV1().Secrets("default").Get(ctx, "creds", metav1.GetOptions{}); err != nil || string(s.Data["password"]) != "s3cret" {
		t.Errorf("secret creds after the restart (encrypted at rest with the kept key): %v, %v", s, err)
	}
	job, err := c.client.BatchV1().Jobs("default").Get(ctx, "work", metav1.GetOptions{})
	if err != nil || job.Status.Active != 2 || job.Status.Failed != 0 || job.Status.Succeeded != 0 {
		t.Errorf("job work after the restart: %+v, %v; want 2 active", job.Status, err)
	}
	for name := range c.nodes {
		if ev := k.OK(t, "get", "events", "--field-selector", "involvedObject.name="+name); strings.Contains(ev, "NodeNotReady") {
			t.Errorf("node %s went NotReady over the restart:\n%s", name, ev)
		}
	}

	// The controllers act again: a scaled Deployment gets its 4th pod, a
	// deleted pod is replaced.
	k.OK(t, "scale", "deployment", "web", "--replicas=4")
	c.waitFor(time.Minute, "4 web pods Running", func(ctx context.Context) (bool, error) {
		web := active(c.podsOf(ctx, "app=web"))
		return len(web) == 4 && all(web, running), nil
	})
	var victim string
	for name, p := range before.pods {
		if p.Labels["app"] == "web" {
			victim = name
			break
		}
	}
	k.OK(t, "delete", "pod", victim, "--wait=false")
	c.waitFor(time.Minute, victim+" replaced", func(ctx context.Context) (bool, error) {
		web := c.podsOf(ctx, "app=web")
		return len(web) == 4 && all(web, running) && !slices.ContainsFunc(web, func(p corev1.Pod) bool { return p.Name == victim }), nil
	})
	// Each kubelet's watch resumed: a pod bound to either node starts.
	for name := range c.nodes {
		c.apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: on-%s}
spec:
  nodeSelector: {kubernetes.io/hostname: %s}
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: busybox, command: ["sleep", "3600"]}]
`, name, name))
	}
	for name := range c.nodes {
		c.waitPod("default", "on-"+name, time.Minute, "Running", running)
	}

	// The apiserver reaches the kubelets again: logs and exec, of pods
	// started before the crash.
	for name, p := range before.pods {
		if name == victim {
			continue
		}
		want := map[string]string{"web": "up\n", "work": "working\n"}[p.Labels["app"]]
		if got := k.OK(t, "logs", name); got != want {
			t.Errorf("kubectl logs %s after the restart = %q, want %q", name, got, want)
		}
		if got := k.OK(t, "exec", name, "--", "echo", "still here"); got != "still here\n" {
			t.Errorf("kubectl exec %s after the restart = %q", name, got)
		}
	}
}

// clusterState is what a control-plane restart must keep.
type clusterState struct {
	// objects maps "kind namespace/name" to its identity and version.
	objects map[string]objectVersion
	pods    map[string]corev1.Pod
	// containers are containersOf's entries, sorted.
	containers []string
}

type objectVersion struct {
	uid types.UID
	rv  uint64
}

// state reads the workloads, pods, nodes, namespaces, ConfigMaps and
// Secrets the cluster has, and the containers its nodes run.
func (c *cluster) state(ctx context.Context) clusterState {
	c.t.Helper()
	s := clusterState{objects: map[string]objectVersion{}, pods: map[string]corev1.Pod{}}
	core, apps, batch := c.client.CoreV1(), c.client.AppsV1(), c.client.BatchV1()
	opts := metav1.ListOptions{}
	lists := map[string]func() (runtime.Object, error){
		"namespace":  func() (runtime.Object, error) { return core.Namespaces().List(ctx, opts) },
		"node":       func() (runtime.Object, error) { return core.Nodes().List(ctx, opts) },
		"configmap":  func() (runtime.Object, error) { return core.ConfigMaps("default").List(ctx, opts) },
		"secret":     func() (runtime.Object, error) { return core.Secrets("default").List(ctx, opts) },
		"deployment": func() (runtime.Object, error) { return apps.Deployments("").List(ctx, opts) },
		"replicaset": func() (runtime.Object, error) { return apps.ReplicaSets("").List(ctx, opts) },
		"job":        func() (runtime.Object, error) { return batch.Jobs("").List(ctx, opts) },
		"service":    func() (runtime.Object, error) { return core.Services("default").List(ctx, opts) },
		"endpointslice": func() (runtime.Object, error) {
			return c.client.DiscoveryV1().EndpointSlices("default").List(ctx, opts)
		},
		"pod": func() (runtime.Object, error) {
			l, err := core.Pods("").List(ctx, opts)
			if err == nil {
				for _, p := range l.Items {
					s.pods[p.Name] = p
				}
			}
			return l, err
		},
	}
	for kind, list := range lists {
		l, err := list()
		if err != nil {
			c.t.Fatalf("list %ss: %v", kind, err)
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			c.t.Fatal(err)
		}
		for _, item := range items {
			o, err := meta.Accessor(item)
			if err != nil {
				c.t.Fatal(err)
			}
			rv, err := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
			if err != nil {
				c.t.Fatalf("%s %s: resourceVersion %q: %v", kind, o.GetName(), o.GetResourceVersion(), err)
			}
			s.objects[kind+" "+o.GetNamespace()+"/"+o.GetName()] = objectVersion{uid: o.GetUID(), rv: rv}
		}
	}
	s.containers = sorted(c.containersOf(ctx))
	return s
}

// askContinuously GETs http://addr/ from the network namespace netns every
// 100ms until the returned stop is called, which says how many requests
// were made and which failed.
func askContinuously(netns, addr string) (stop func() (int, []error)) {
	done := make(chan struct{})
	var asked int
	var failures []error
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			asked++
			if _, err := httpGet(netns, addr); err != nil {
				failures = append(failures, fmt.Errorf("%s: %w", time.Now().Format(time.StampMilli), err))
			}
		}
	}()
	return func() (int, []error) {
		close(done)
		<-finished
		return asked, failures
	}
}

// leaseHolders returns who holds the controller manager's and the
// scheduler's leader Leases.
func leaseHolders(ctx context.Context, t *testing.T, client kubernetes.Interface) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range []string{controllermanager.LeaseName, scheduler.DefaultLeaseName} {
		l, err := client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil {
			out[name] = *l.Spec.HolderIdentity
		} else {
			out[name] = ""
		}
	}
	return out
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

// serverCluster is a cluster whose control plane is `minik8s server`, a
// process of its own that the test can kill as a crash would. Its nodes
// join it as real nodes do, with the node token and a CSR.
type serverCluster struct {
	*cluster
	server *serverProcess
}

// newServerCluster starts `minik8s server` on a fresh data dir and n
// nodes, named <tag>-n1 ... Everything is removed when the test ends.
func newServerCluster(t *testing.T, n int) *serverCluster {
	t.Helper()
	addr := requireNodes(t)
	bin := minik8sBinary(t)
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	c := &cluster{t: t, tag: "e" + hex.EncodeToString(b), containerd: addr, nodes: map[string]*testNode{}}
	dir := t.TempDir()
	logs, err := os.Create(filepath.Join(dir, "nodes.log"))
	if err != nil {
		t.Fatal(err)
	}
	c.logs = logs
	s := &serverProcess{dataDir: filepath.Join(dir, "server"), port: freePort(t)}
	s.process = &process{t: t, name: "minik8s server", bin: bin,
		args: []string{"server", "--data-dir", s.dataDir, "--bind-address", "127.0.0.1", "--port", strconv.Itoa(s.port)}}
	if s.logs, err = os.Create(filepath.Join(dir, "server.log")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, f := range []*os.File{s.logs, logs} {
				tail, _ := exec.Command("tail", "-n", "40", f.Name()).Output()
				t.Logf("last lines of %s:\n%s", filepath.Base(f.Name()), tail)
			}
		}
		_ = logs.Close()
		_ = s.logs.Close()
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := image.EnsureBuiltin(ctx, addr); err != nil {
		t.Fatalf("built-in images: %v", err)
	}
	s.start()
	t.Cleanup(s.stop)
	// The server writes admin.kubeconfig, then node-token, once it serves.
	tokenPath := filepath.Join(s.dataDir, controlplane.NodeTokenName)
	kubeconfig := filepath.Join(s.dataDir, controlplane.KubeconfigName)
	c.waitFor(time.Minute, "the server's node-token", func(context.Context) (bool, error) {
		if !s.running() {
			return false, errors.New("minik8s server exited")
		}
		_, err := os.Stat(tokenPath)
		return err == nil, nil
	})
	token, err := os.ReadFile(tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	c.cp = controlplane.ControlPlane{URL: "https://127.0.0.1:" + strconv.Itoa(s.port), KubeconfigPath: kubeconfig,
		NodeToken: strings.TrimSpace(string(token)), NodeTokenPath: tokenPath}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = 100, 200
	c.config = rc
	c.client = kubernetes.NewForConfigOrDie(rc)
	c.kubectl = testutil.NewKubectl(t, kubeconfig)
	s.waitServing(c.client)

	c.lan = newLAN(t, c.tag)
	sc := &serverCluster{cluster: c, server: s}
	for i := 1; i <= n; i++ {
		sc.addNode(fmt.Sprintf("%s-n%d", c.tag, i))
	}
	// Pods first, then nodes, then the server; one killed by a failing
	// test is started again so that the pods can be deleted.
	t.Cleanup(func() {
		if !s.running() {
			s.start()
			s.waitServing(c.client)
		}
		c.teardown()
	})
	c.waitNodesReady(n)
	return sc
}

// addNode creates the node's namespace on the LAN, joins the node to the
// cluster with the node token and starts its kubelet with the credential
// it got.
func (sc *serverCluster) addNode(name string) {
	c, t := sc.cluster, sc.t
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
	n := &testNode{name: name, netns: path, rootDir: t.TempDir()}
	n.ip = c.lan.attach(t, path, len(c.nodes)+1)
	c.nodes[name] = n

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rc, err := bootstrap.Join(ctx, bootstrap.Config{Server: c.cp.URL, Token: c.cp.NodeToken, NodeName: name,
		Dir: filepath.Join(n.rootDir, "credential"), Logger: c.logger().With("node", name)})
	if err != nil {
		t.Fatalf("join %s: %v", name, err)
	}
	rc.QPS, rc.Burst = 50, 100
	caPEM, err := os.ReadFile(filepath.Join(sc.server.dataDir, "pki", pki.CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	ca := x509.NewCertPool()
	if !ca.AppendCertsFromPEM(caPEM) {
		t.Fatal("no certificate in the cluster's ca.crt")
	}
	runCtx, stop := context.WithCancel(context.Background())
	n.cancel, n.done = stop, make(chan error, 1)
	cfg := node.Config{
		NodeName: n.name, NodeIP: n.ip.String(), REST: rc, ClientCA: ca, ContainerdAddress: c.containerd,
		ClusterCIDR: controlplane.DefaultClusterCIDR, ServiceCIDR: serviceCIDR, RootDir: n.rootDir,
		KubeletAddress: net.JoinHostPort(n.ip.String(), "10250"), HostNetNS: n.netns,
		Logger: c.logger().With("node", n.name),
	}
	go func() { n.done <- node.Run(runCtx, cfg) }()
}

// serverProcess is one `minik8s server` on a data dir and port, started
// again on both after a kill.
type serverProcess struct {
	*process
	dataDir string
	port    int
}

// waitServing waits until the apiserver answers client.
func (s *serverProcess) waitServing(client kubernetes.Interface) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		if !s.running() {
			s.t.Fatal("minik8s server exited")
		}
		if _, err := client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			s.t.Fatal("minik8s server not serving after a minute")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// minik8sBinary is bin/minik8s when it is newer than every source file
// (`make test` runs `make build` first), else one built now.
func minik8sBinary(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin", "minik8s")
	if st, err := os.Stat(bin); err == nil && !changedSince(root, st.ModTime()) {
		return bin
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(goruntime.GOROOT(), "bin", "go")
	}
	out := filepath.Join(t.TempDir(), "minik8s")
	cmd := exec.Command(goTool, "build", "-o", out, "./cmd/minik8s")
	cmd.Dir = root
	start := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/minik8s: %v\n%s", err, b)
	}
	t.Logf("bin/minik8s missing or older than the sources: built %s in %v", out, since(start))
	return out
}

// changedSince reports whether a file the binary is built from (outside
// tests) changed after t.
func changedSince(root string, t time.Time) bool {
	changed := false
	for _, p := range []string{"cmd", "pkg", "go.mod", "go.sum"} {
		_ = filepath.WalkDir(filepath.Join(root, p), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			if info, err := d.Info(); err == nil && info.ModTime().After(t) {
				changed = true
				return filepath.SkipAll
			}
			return nil
		})
	}
	return changed
}
