package local_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/images"
	"github.com/containerd/containerd/namespaces"
	"github.com/containernetworking/cni/pkg/invoke"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/image"
	"github.com/minik8s/minik8s/pkg/kubelet"
	"github.com/minik8s/minik8s/pkg/kubelet/local"
	"github.com/minik8s/minik8s/pkg/kubelet/network"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime/runtimetest"
)

// node is a local provider on the machine's containerd (a namespace and
// cgroup root of its own) and CNI (a bridge and pod CIDR of its own, in
// the host's network namespace), with everything removed afterwards.
type node struct {
	t       *testing.T
	addr    string
	rtCfg   runtime.Config
	rt      *runtime.Containerd
	net     *network.CNI
	p       *local.Provider
	cfg     local.Config
	logs    *syncBuffer
	podCIDR netip.Prefix
}

func newNode(t *testing.T) *node {
	t.Helper()
	addr := runtimetest.Containerd(t)
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if _, err := invoke.FindInPath(p, []string{"/usr/lib/cni", "/opt/cni/bin"}); err != nil {
			t.Skipf("needs CNI plugin %s (apt-get install containernetworking-plugins): %v", p, err)
		}
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("needs iptables")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	suffix := randomHex(t, 3)
	n := &node{t: t, addr: addr, logs: &syncBuffer{}}
	n.rtCfg = runtime.Config{Address: addr, Namespace: "minik8s-local-test-" + suffix, CgroupRoot: "/minik8s-local-test-" + suffix,
		Logger: slog.New(slog.NewTextHandler(n.logs, nil))}
	client, err := containerd.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := image.EnsureBuiltinIn(ctx, client, n.rtCfg.Namespace); err != nil {
		t.Fatalf("import built-in images: %v", err)
	}
	t.Cleanup(n.cleanup)
	if n.rt, err = runtime.New(ctx, n.rtCfg); err != nil {
		t.Fatal(err)
	}
	n.podCIDR = freePodCIDR(t)
	n.net, err = network.New(network.Config{
		NodeName: "local-e2e-" + suffix, PodCIDR: n.podCIDR.String(), BridgeName: "mk8s" + suffix,
		StateDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(n.logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}, Data: map[string]string{"color": "blue"}}
	n.cfg = local.Config{
		NodeName: "local-e2e", NodeIP: "127.0.0.1", Runtime: n.rt, Network: n.net, Client: fake.NewClientset(cm),
		RootDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(n.logs, nil)),
	}
	n.start()
	return n
}

// start builds the provider, as a (re)starting kubelet does.
func (n *node) start() {
	n.t.Helper()
	p, err := local.New(n.cfg)
	if err != nil {
		n.t.Fatal(err)
	}
	n.p = p
}

// restart is a kubelet restart: provider and runtime client go, the
// containers stay.
func (n *node) restart() {
	n.t.Helper()
	if err := n.p.Close(); err != nil {
		n.t.Fatal(err)
	}
	if err := n.rt.Close(); err != nil {
		n.t.Fatal(err)
	}
	rt, err := runtime.New(context.Background(), n.rtCfg)
	if err != nil {
		n.t.Fatal(err)
	}
	n.rt, n.cfg.Runtime = rt, rt
	n.start()
}

func (n *node) cleanup() {
	t := n.t
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if n.p != nil {
		pods, _ := n.p.GetPods(ctx)
		for _, pod := range pods {
			if err := n.p.DeletePod(ctx, withGrace(pod, 0)); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
		_ = n.p.Close()
	}
	if n.rt != nil {
		if left, err := n.rt.ListContainers(ctx); err != nil || len(left) > 0 {
			t.Errorf("left in containerd: %v %v", left, err)
		}
		_ = n.rt.Close()
	}
	if n.net != nil {
		if alloc, err := n.net.Allocations(); err != nil || len(alloc) > 0 {
			t.Errorf("pod addresses still allocated: %v %v", alloc, err)
		}
		if err := n.net.Uninstall(ctx); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
	if client, err := containerd.New(n.addr); err == nil {
		nsCtx := namespaces.WithNamespace(ctx, n.rtCfg.Namespace)
		imgs, _ := client.ImageService().List(nsCtx)
		for i, img := range imgs {
			var opts []images.DeleteOpt
			if i == len(imgs)-1 {
				opts = append(opts, images.SynchronousDelete())
			}
			_ = client.ImageService().Delete(nsCtx, img.Name, opts...)
		}
		if err := client.NamespaceService().Delete(ctx, n.rtCfg.Namespace); err != nil {
			t.Errorf("delete containerd namespace: %v", err)
		}
		client.Close()
	}
	for _, c := range []string{"memory", "cpu", "cpuacct", "pids", "cpu,cpuacct", "blkio", "devices", "freezer", "systemd", "unified", ""} {
		if dir, err := runtime.CgroupDir(c, n.rtCfg.CgroupRoot); err == nil {
			_ = os.Remove(dir)
		}
	}
	if t.Failed() {
		t.Logf("node logs:\n%s", n.logs.String())
	}
}

func withGrace(pod *corev1.Pod, s int64) *corev1.Pod {
	p := pod.DeepCopy()
	p.DeletionGracePeriodSeconds = &s
	return p
}

// freePodCIDR picks a 10.244.x.0/24 (x >= 200) no interface of the host
// uses.
func freePodCIDR(t *testing.T) netip.Prefix {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		x, _ := rand.Int(rand.Reader, big.NewInt(50))
		p := netip.MustParsePrefix(fmt.Sprintf("10.244.%d.0/24", 200+x.Int64()))
		used := false
		for _, a := range addrs {
			if pfx, err := netip.ParsePrefix(a.String()); err == nil && p.Overlaps(pfx) {
				used = true
			}
		}
		if !used {
			return p
		}
	}
	t.Fatal("no free pod CIDR in 10.244.200-249.0/24")
	return netip.Prefix{}
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// status polls the provider until cond holds for the pod's status.
func (n *node) waitStatus(ns, name string, timeout time.Duration, what string, cond func(*corev1.PodStatus) bool) *corev1.PodStatus {
	n.t.Helper()
	deadline := time.Now().Add(timeout)
	var last *corev1.PodStatus
	for time.Now().Before(deadline) {
		s, err := n.p.GetPodStatus(context.Background(), ns, name)
		if err != nil {
			n.t.Fatal(err)
		}
		if s != nil && cond(s) {
			return s
		}
		last = s
		time.Sleep(100 * time.Millisecond)
	}
	n.t.Fatalf("timed out after %s waiting for %s; status:\n%s", timeout, what, describe(last))
	return nil
}

func describe(s *corev1.PodStatus) string {
	if s == nil {
		return "<none>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s ip %s conditions:", s.Phase, s.PodIP)
	for _, c := range s.Conditions {
		fmt.Fprintf(&b, " %s=%s(%s %s)", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, cs := range append(s.InitContainerStatuses, s.ContainerStatuses...) {
		fmt.Fprintf(&b, "\n  %s restarts=%d ready=%v state=%+v last=%+v", cs.Name, cs.RestartCount, cs.Ready, cs.State, cs.LastTerminationState)
	}
	return b.String()
}

// exec runs cmd in a container and returns its output.
func (n *node) exec(ns, name, container string, cmd ...string) (string, int) {
	n.t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, err := n.p.RunInContainer(ctx, ns, name, container, cmd, &session{stdout: &out})
	if err != nil {
		n.t.Fatalf("exec %v in %s: %v", cmd, container, err)
	}
	return out.String(), code
}

func (n *node) logsOf(ns, name, container string, previous bool) string {
	n.t.Helper()
	r, err := n.p.GetContainerLogs(context.Background(), ns, name, container, kubelet.LogOptions{Previous: previous})
	if err != nil {
		n.t.Fatalf("logs of %s: %v", container, err)
	}
	defer r.Close()
	b, _ := io.ReadAll(r)
	return string(b)
}

// TestMultiContainerPod is the seeds' pod: two busybox containers sharing
// localhost and a hostPath volume, env from the downward API and a
// ConfigMap, a memory limit in the cgroup, a readiness probe over the pod
// network; then a kubelet restart that adopts it and a graceful delete.
func TestMultiContainerPod(t *testing.T) {
	n := newNode(t)
	ctx := context.Background()
	shared := filepath.Join(t.TempDir(), "shared")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: types.UID("uid-web-" + randomHex(t, 4))},
		Spec: corev1.PodSpec{
			NodeName: "local-e2e", RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr.To[int64](30),
			Volumes: []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: shared, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}}},
			Containers: []corev1.Container{
				{
					Name: "c1", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"sh", "-c", `mkdir -p /www && echo "hello from $(hostname)" > /www/index.html && echo c1 up &&
echo shared-by-c1 > /shared/note && trap 'echo c1 got SIGTERM; exit 0' TERM; httpd -f -p 8080 -h /www & wait`},
					Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					VolumeMounts: []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
						PeriodSeconds: 1},
				},
				{
					Name: "c2", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"sleep", "3600"},
					Env: []corev1.EnvVar{
						{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
						{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
						{Name: "COLOR", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "color"}}},
						{Name: "GREETING", Value: "$(POD_NAME) is $(COLOR)"},
					},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
						corev1.ResourceMemory: resource.MustParse("64Mi"), corev1.ResourceCPU: resource.MustParse("500m")}},
					VolumeMounts: []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}},
				},
			},
		},
	}
	var mu sync.Mutex
	notified := 0
	n.p.NotifyPods(ctx, func(*corev1.Pod) { mu.Lock(); notified++; mu.Unlock() })
	start := time.Now()
	if err := n.p.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	s := n.waitStatus("default", "web", time.Minute, "the pod to be ready", func(s *corev1.PodStatus) bool {
		return s.Phase == corev1.PodRunning && hasCondition(s, corev1.PodReady)
	})
	t.Logf("pod ready after %s: %s", time.Since(start).Round(time.Millisecond), describe(s))
	ip, err := netip.ParseAddr(s.PodIP)
	if err != nil || !n.podCIDR.Contains(ip) {
		t.Errorf("pod IP %q is not in %s", s.PodIP, n.podCIDR)
	}
	mu.Lock()
	if notified == 0 {
		t.Error("no status change was notified")
	}
	mu.Unlock()

	// localhost is shared: c2 reaches c1's server.
	if out, code := n.exec("default", "web", "c2", "wget", "-qO-", "localhost:8080"); code != 0 || out != "hello from web\n" {
		t.Errorf("wget from c2: %d %q", code, out)
	}
	// So is the hostPath volume.
	if out, _ := n.exec("default", "web", "c2", "cat", "/shared/note"); out != "shared-by-c1\n" {
		t.Errorf("shared volume: %q", out)
	}
	// Env: downward API, ConfigMap, $(VAR).
	if out, _ := n.exec("default", "web", "c2", "sh", "-c", `echo "$POD_NAME $POD_IP $COLOR / $GREETING"`); out != fmt.Sprintf("web %s blue / web is blue\n", s.PodIP) {
		t.Errorf("env: %q", out)
	}
	// The limits are in c2's cgroup.
	if out, _ := n.exec("default", "web", "c2", "sh", "-c",
		"cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes"); strings.TrimSpace(out) != "67108864" {
		t.Errorf("memory limit in the cgroup: %q", out)
	}
	// /etc/hosts and resolv.conf are the pod's.
	if out, _ := n.exec("default", "web", "c1", "cat", "/etc/hosts"); !strings.Contains(out, s.PodIP+"\tweb") {
		t.Errorf("/etc/hosts:\n%s", out)
	}
	// A failing command's exit code comes back.
	if _, code := n.exec("default", "web", "c2", "sh", "-c", "exit 7"); code != 7 {
		t.Errorf("exit code %d, want 7", code)
	}
	if logs := n.logsOf("default", "web", "c1", false); !strings.Contains(logs, "c1 up\n") {
		t.Errorf("logs of c1: %q", logs)
	}

	// A kubelet restart adopts the pod: nothing restarts.
	before := containerIDs(s)
	n.restart()
	pods, err := n.p.GetPods(ctx)
	if err != nil || len(pods) != 1 || pods[0].UID != pod.UID {
		t.Fatalf("adopted pods: %v %v", pods, err)
	}
	api := pod.DeepCopy()
	api.Status = *s
	if err := n.p.UpdatePod(ctx, api); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // a few syncs
	s = n.waitStatus("default", "web", 30*time.Second, "the adopted pod to be ready", func(s *corev1.PodStatus) bool {
		return hasCondition(s, corev1.PodReady)
	})
	if after := containerIDs(s); after != before || s.PodIP != ip.String() {
		t.Errorf("after the restart: containers %s (before %s), ip %s", after, before, s.PodIP)
	}
	if out, _ := n.exec("default", "web", "c2", "wget", "-qO-", s.PodIP+":8080"); out != "hello from web\n" {
		t.Errorf("wget by pod IP after the restart: %q", out)
	}

	// Graceful deletion: c1 exits on SIGTERM, c2 (sleep as PID 1 ignores
	// it) is killed when the grace period ends.
	start = time.Now()
	final, err := n.p.DeletePodWithStatus(ctx, withGrace(api, 3))
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 3*time.Second || took > 15*time.Second {
		t.Errorf("deletion took %s, want about the 3s grace period", took)
	}
	// How it ended, for the kubelet to write before the object goes.
	exits := map[string]int32{}
	for _, cs := range final.ContainerStatuses {
		if cs.State.Terminated != nil {
			exits[cs.Name] = cs.State.Terminated.ExitCode
		}
	}
	if final.Phase != corev1.PodFailed || len(exits) != 2 || exits["c1"] != 0 || exits["c2"] != 137 {
		t.Errorf("final status: phase %s, exit codes %v; want Failed, c1 0 and c2 137", final.Phase, exits)
	}
	if left, _ := n.rt.ListContainers(ctx); len(left) != 0 {
		t.Errorf("left after delete: %v", left)
	}
	if got, _ := n.p.GetPod(ctx, "default", "web"); got != nil {
		t.Error("the pod is still known")
	}
	if _, err := os.Stat(filepath.Join(n.cfg.RootDir, "pods", string(pod.UID))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pod dir left: %v", err)
	}
}

// TestCrashLoop: a container that keeps failing restarts at once, then
// after 10s, waiting in CrashLoopBackOff between; its previous logs stay
// readable.
func TestCrashLoop(t *testing.T) {
	n := newNode(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "crash", UID: types.UID("uid-crash-" + randomHex(t, 4))},
		Spec: corev1.PodSpec{
			NodeName: "local-e2e", RestartPolicy: corev1.RestartPolicyAlways,
			Containers: []corev1.Container{{Name: "c", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sh", "-c", "echo attempt; echo bye >/dev/termination-log; exit 3"}}},
		},
	}
	if err := n.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	s := n.waitStatus("default", "crash", time.Minute, "CrashLoopBackOff", func(s *corev1.PodStatus) bool {
		w := s.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "CrashLoopBackOff"
	})
	cs := s.ContainerStatuses[0]
	if cs.RestartCount != 1 || !strings.HasPrefix(cs.State.Waiting.Message, "back-off 10s restarting failed container=c pod=crash_default(") {
		t.Errorf("%s", describe(s))
	}
	if lt := cs.LastTerminationState.Terminated; lt == nil || lt.ExitCode != 3 || lt.Reason != "Error" || lt.Message != "bye\n" {
		t.Errorf("lastState %+v", cs.LastTerminationState)
	}
	if s.Phase != corev1.PodRunning || hasCondition(s, corev1.PodReady) {
		t.Errorf("phase %s", s.Phase)
	}
	if logs := n.logsOf("default", "crash", "c", true); logs != "attempt\n" {
		t.Errorf("previous logs %q", logs)
	}
	waitedFrom := time.Now()
	n.waitStatus("default", "crash", 30*time.Second, "the restart after the back-off", func(s *corev1.PodStatus) bool {
		return s.ContainerStatuses[0].RestartCount == 2
	})
	if waited := time.Since(waitedFrom); waited < 5*time.Second {
		t.Errorf("restarted after %s, before the 10s back-off", waited)
	}
	n.waitStatus("default", "crash", 30*time.Second, "the 20s back-off", func(s *corev1.PodStatus) bool {
		w := s.ContainerStatuses[0].State.Waiting
		return w != nil && strings.HasPrefix(w.Message, "back-off 20s")
	})
	if err := n.p.DeletePod(context.Background(), withGrace(pod, 0)); err != nil {
		t.Fatal(err)
	}
}

// TestLivenessProbe: a container whose exec liveness probe starts
// failing is stopped (with the probe's grace period) and started again.
func TestLivenessProbe(t *testing.T) {
	n := newNode(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "live", UID: types.UID("uid-live-" + randomHex(t, 4))},
		Spec: corev1.PodSpec{
			NodeName: "local-e2e", RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr.To[int64](30),
			Containers: []corev1.Container{{Name: "c", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sh", "-c", "touch /tmp/healthy; sleep 2; rm /tmp/healthy; echo unhealthy now; sleep 3600"},
				LivenessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/tmp/healthy"}}},
					PeriodSeconds: 1, FailureThreshold: 2, TerminationGracePeriodSeconds: ptr.To[int64](1),
				}}},
		},
	}
	if err := n.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s := n.waitStatus("default", "live", 45*time.Second, "a restart by the liveness probe", func(s *corev1.PodStatus) bool {
		return s.ContainerStatuses[0].RestartCount == 1 && s.ContainerStatuses[0].State.Running != nil
	})
	// Healthy for 2s, two failures a second apart, 1s to stop (sleep as
	// PID 1 ignores SIGTERM): well under 30s, the pod's grace period.
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("restarted after %s", took)
	}
	if lt := s.ContainerStatuses[0].LastTerminationState.Terminated; lt == nil || lt.ExitCode != 137 {
		t.Errorf("last state %+v", s.ContainerStatuses[0].LastTerminationState)
	}
	if logs := n.logsOf("default", "live", "c", true); logs != "unhealthy now\n" {
		t.Errorf("previous logs %q", logs)
	}
	if err := n.p.DeletePod(context.Background(), withGrace(pod, 0)); err != nil {
		t.Fatal(err)
	}
}

// TestRunToCompletion: restartPolicy Never and OnFailure pods finish.
func TestRunToCompletion(t *testing.T) {
	n := newNode(t)
	mk := func(name string, policy corev1.RestartPolicy, script string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name + "-" + randomHex(t, 4))},
			Spec: corev1.PodSpec{NodeName: "local-e2e", RestartPolicy: policy,
				InitContainers: []corev1.Container{{Name: "init", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"sh", "-c", "echo init done"}}},
				Containers: []corev1.Container{{Name: "c", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"sh", "-c", script}}}},
		}
	}
	ctx := context.Background()
	// The OnFailure pod fails once, then succeeds: its emptyDir keeps
	// the count across the restart.
	onFailure := mk("onfailure", corev1.RestartPolicyOnFailure, `f=/data/tries; n=$(cat $f 2>/dev/null || echo 0); echo $((n+1)) > $f; [ "$n" -ge 1 ]`)
	onFailure.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	onFailure.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pods := []*corev1.Pod{mk("never-fails", corev1.RestartPolicyNever, "exit 4"), onFailure}
	for _, pod := range pods {
		if err := n.p.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	s := n.waitStatus("default", "never-fails", time.Minute, "Failed", func(s *corev1.PodStatus) bool { return s.Phase == corev1.PodFailed })
	if cs := s.ContainerStatuses[0]; cs.RestartCount != 0 || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 4 {
		t.Errorf("%s", describe(s))
	}
	if ic := s.InitContainerStatuses[0]; ic.State.Terminated == nil || ic.State.Terminated.Reason != "Completed" || !ic.Ready {
		t.Errorf("init: %s", describe(s))
	}
	s = n.waitStatus("default", "onfailure", time.Minute, "Succeeded", func(s *corev1.PodStatus) bool { return s.Phase == corev1.PodSucceeded })
	if cs := s.ContainerStatuses[0]; cs.RestartCount != 1 || cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" ||
		cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("%s", describe(s))
	}
	for _, pod := range pods {
		if err := n.p.DeletePod(ctx, withGrace(pod, 0)); err != nil {
			t.Fatal(err)
		}
	}
}

func hasCondition(s *corev1.PodStatus, t corev1.PodConditionType) bool {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func containerIDs(s *corev1.PodStatus) string {
	var ids []string
	for _, cs := range s.ContainerStatuses {
		ids = append(ids, cs.ContainerID)
	}
	return strings.Join(ids, ",")
}

// session is an exec session with only stdout.
type session struct{ stdout io.Writer }

func (s *session) Stdin() io.Reader                { return nil }
func (s *session) Stdout() io.WriteCloser          { return nopWriteCloser{s.stdout} }
func (s *session) Stderr() io.WriteCloser          { return nopWriteCloser{s.stdout} }
func (s *session) TTY() bool                       { return false }
func (s *session) Resize() <-chan kubelet.TermSize { return nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// syncBuffer collects logs from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLifecycleHooks runs hooks in real containers: the postStart exec
// hook runs once the container started; on deletion the app's preStop
// hook runs before its SIGTERM and reaches the sidecar (a restartable
// init container) over localhost, which is stopped only after the app;
// an httpGet preStop hook reaches the sidecar on the pod's address by
// port name; the container's output that ends without a newline is a
// FallbackToLogsOnError message as written.
func TestLifecycleHooks(t *testing.T) {
	n := newNode(t)
	ctx := context.Background()
	shared := filepath.Join(t.TempDir(), "shared")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hooks", UID: types.UID("uid-hooks-" + randomHex(t, 4))},
		Spec: corev1.PodSpec{
			NodeName: "local-e2e", RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr.To[int64](20),
			Volumes: []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: shared, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}}},
			InitContainers: []corev1.Container{{
				Name: "side", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent, RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
				Command:      []string{"sh", "-c", `mkdir -p /www && echo sidecar-up > /www/index.html && httpd -f -vv -p 8080 -h /www & trap 'kill $!; exit 0' TERM; wait`},
				Ports:        []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}},
				VolumeMounts: []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}},
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
					Command: []string{"sh", "-c", "echo side-prestop >> /shared/order"}}}},
			}},
			Containers: []corev1.Container{{
				Name: "app", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
				Command:      []string{"sh", "-c", `trap 'echo app-term >> /shared/order; exit 0' TERM; sleep 600 & wait`},
				VolumeMounts: []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}},
				Lifecycle: &corev1.Lifecycle{
					PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo app-poststart >> /shared/order"}}},
					PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c",
						"sleep 1; wget -q -O- http://127.0.0.1:8080/ >> /shared/order"}}},
				},
			}, {
				Name: "poke", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
				Ports:   []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}},
				Command: []string{"sh", "-c", `trap 'exit 0' TERM; sleep 600 & wait`},
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
					Path: "/prestop-hook", Port: intstr.FromString("web")}}},
			}},
		},
	}
	if err := n.p.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	n.waitStatus("default", "hooks", 2*time.Minute, "Running and Ready", func(s *corev1.PodStatus) bool {
		return s.Phase == corev1.PodRunning && hasCondition(s, corev1.PodReady)
	})
	read := func() string {
		b, _ := os.ReadFile(filepath.Join(shared, "order"))
		return string(b)
	}
	if got := read(); got != "app-poststart\n" {
		t.Fatalf("after the start: %q, want the postStart hook's line", got)
	}
	// The sidecar logs the httpGet hook's request (busybox httpd -vv);
	// its log goes with the pod, so it is read while the pod stops.
	sideLog := filepath.Join(n.cfg.RootDir, "logs", "default_hooks_"+string(pod.UID), "side", "0.log")
	start := time.Now()
	deleted := make(chan error)
	go func() { deleted <- n.p.DeletePod(ctx, withGrace(pod, 20)) }()
	poked := false
wait:
	for {
		select {
		case err := <-deleted:
			if err != nil {
				t.Fatal(err)
			}
			break wait
		case <-time.After(20 * time.Millisecond):
			if b, err := os.ReadFile(sideLog); err == nil && strings.Contains(string(b), "prestop-hook") {
				poked = true
			}
		}
	}
	if !poked {
		b, _ := os.ReadFile(sideLog)
		t.Errorf("the httpGet preStop hook did not reach the sidecar on the pod's address; its log:\n%s", b)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("deleting took %s: a container waited out its grace period", took)
	}
	// The sidecar's hook runs at once, the app's a second later (it
	// still reaches the sidecar), then the app's SIGTERM.
	if got, want := read(), "app-poststart\nside-prestop\nsidecar-up\napp-term\n"; got != want {
		t.Errorf("order of hooks and signals:\n%s\nwant:\n%s", got, want)
	}
	if logs := n.logs.String(); strings.Contains(logs, "preStop hook failed") {
		t.Errorf("a preStop hook failed:\n%s", logs)
	}

	// FallbackToLogsOnError: `echo -n DONE; false` reports "DONE".
	term := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "term", UID: types.UID("uid-term-" + randomHex(t, 4))},
		Spec: corev1.PodSpec{NodeName: "local-e2e", RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"/bin/sh", "-c"}, Args: []string{"/bin/echo -n DONE; /bin/false"},
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError}}},
	}
	if err := n.p.CreatePod(ctx, term); err != nil {
		t.Fatal(err)
	}
	s := n.waitStatus("default", "term", time.Minute, "Failed", func(s *corev1.PodStatus) bool { return s.Phase == corev1.PodFailed })
	if got := s.ContainerStatuses[0].State.Terminated.Message; got != "DONE" {
		t.Errorf("termination message %q, want %q", got, "DONE")
	}
	if err := n.p.DeletePod(ctx, withGrace(term, 0)); err != nil {
		t.Fatal(err)
	}
}

// TestMemoryEmptyDirInContainer runs a container on a memory-backed
// emptyDir: it sees a tmpfs (statfs), open to all, of the volume's
// sizeLimit; the tmpfs is unmounted when the pod is deleted.
func TestMemoryEmptyDirInContainer(t *testing.T) {
	n := newNode(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tmpfs", UID: types.UID("uid-tmpfs-" + randomHex(t, 4))},
		Spec: corev1.PodSpec{NodeName: "local-e2e", RestartPolicy: corev1.RestartPolicyNever,
			Volumes: []corev1.Volume{{Name: "m", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
				Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("16Mi"))}}}},
			Containers: []corev1.Container{{Name: "c", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
				Command:      []string{"sh", "-c", `echo "$(stat -f -c %T /m) $(stat -c %a /m) $(df -k /m | tail -1 | awk '{print $2}')" > /dev/termination-log`},
				VolumeMounts: []corev1.VolumeMount{{Name: "m", MountPath: "/m"}}}}},
	}
	ctx := context.Background()
	if err := n.p.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	s := n.waitStatus("default", "tmpfs", time.Minute, "Succeeded", func(s *corev1.PodStatus) bool { return s.Phase == corev1.PodSucceeded })
	if got := s.ContainerStatuses[0].State.Terminated.Message; got != "tmpfs 777 16384\n" {
		t.Errorf("statfs type, mode and size of the volume: %q, want %q", got, "tmpfs 777 16384\n")
	}
	dir := filepath.Join(n.cfg.RootDir, "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", "m")
	if err := n.p.DeletePod(ctx, withGrace(pod, 0)); err != nil {
		t.Fatal(err)
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mountinfo), " "+dir+" ") {
		t.Errorf("%s is still mounted", dir)
	}
}
