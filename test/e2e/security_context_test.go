package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/namespaces"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/minik8s/minik8s/pkg/image"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

// groupsImage is a busybox image whose /etc/group lists its user app
// (uid 1000, the image's user) in the group extra (50000), for
// supplementalGroupsPolicy Merge and Strict to differ (the built-in busybox
// lists nobody in any group).
const groupsImage = "minik8s.test/e2e/sc-groups:v1"

// importGroupsImage builds groupsImage from this machine's static busybox
// and imports it into the nodes' containerd namespace.
func (c *cluster) importGroupsImage() {
	t := c.t
	bin, err := image.FindBusybox()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	files := []image.File{
		{Path: "bin/busybox", Mode: 0o755, Data: data},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\n")},
		{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\napp:x:1000:\nextra:x:50000:app\n")},
		{Path: "tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Path: "home/app", Mode: fs.ModeDir | 0o755},
		{Path: "proc", Mode: fs.ModeDir | 0o755},
		{Path: "sys", Mode: fs.ModeDir | 0o755},
		{Path: "dev", Mode: fs.ModeDir | 0o755},
	}
	for _, applet := range []string{"sh", "id", "sleep", "cat", "touch", "stat"} {
		files = append(files, image.File{Path: "bin/" + applet, Mode: fs.ModeSymlink | 0o777, Link: "busybox"})
	}
	var buf bytes.Buffer
	if err := image.Write(&buf, image.Image{
		Name:   groupsImage,
		Config: ocispec.ImageConfig{Env: []string{"PATH=/bin"}, Cmd: []string{"sh"}, User: "1000"},
		Files:  files,
	}); err != nil {
		t.Fatal(err)
	}
	client, err := containerd.New(c.containerd)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := image.Import(ctx, client, image.Namespace, &buf); err != nil {
		t.Fatal(err)
	}
}

// removeImage removes an image the test imported from the nodes'
// containerd namespace.
func (c *cluster) removeImage(ref string) {
	client, err := containerd.New(c.containerd)
	if err != nil {
		c.t.Error(err)
		return
	}
	defer client.Close()
	ctx := namespaces.WithNamespace(context.Background(), image.Namespace)
	if err := client.ImageService().Delete(ctx, ref); err != nil && !errdefs.IsNotFound(err) {
		c.t.Errorf("remove image %s: %v", ref, err)
	}
}

// containerProcStatus reads fields of /proc/<pid>/status on the host for
// the init process of a running container of this cluster, found through
// containerd.
func (c *cluster) containerProcStatus(pod, container string, fields ...string) map[string]string {
	t := c.t
	t.Helper()
	client, err := containerd.New(c.containerd)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := namespaces.WithNamespace(context.Background(), image.Namespace)
	var names []string
	for name := range c.nodes {
		names = append(names, name)
	}
	for _, node := range names {
		cs, err := client.Containers(ctx, fmt.Sprintf("labels.%q==%q,labels.%q==%q,labels.%q==%q",
			runtime.LabelNode, node, runtime.LabelPodName, pod, runtime.LabelContainerName, container))
		if err != nil {
			t.Fatal(err)
		}
		for _, ct := range cs {
			task, err := ct.Task(ctx, nil)
			if err != nil {
				continue
			}
			if st, err := task.Status(ctx); err != nil || st.Status != containerd.Running {
				continue
			}
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", task.Pid()))
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]string{}
			for _, line := range strings.Split(string(b), "\n") {
				k, v, _ := strings.Cut(line, ":")
				for _, f := range fields {
					if k == f {
						out[k] = strings.Join(strings.Fields(v), " ")
					}
				}
			}
			return out
		}
	}
	t.Fatalf("no running container %s of pod %s in containerd", container, pod)
	return nil
}

// waitingWith waits until a container of the pod waits with reason and a
// message holding want.
func (c *cluster) waitingWith(pod, container, reason, want string) *corev1.Pod {
	c.t.Helper()
	return c.waitPod("default", pod, time.Minute, reason+" "+want, func(p *corev1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; cs.Name == container && w != nil && w.Reason == reason && strings.Contains(w.Message, want) {
				return true
			}
		}
		return false
	})
}

// The course's Security Context scenario on a one-node cluster: pod and
// container securityContext (the container's wins), as `id` shows it and
// as the host sees the processes; fsGroup on a shared emptyDir;
// supplementalGroupsPolicy Merge and Strict; a read-only root; dropped
// capabilities, no_new_privs and seccomp; runAsNonRoot refused for a root
// image; safe and unsafe sysctls.
func TestSecurityContext(t *testing.T) {
	var c *cluster
	// Registered first, so it runs after the cluster's teardown.
	t.Cleanup(func() {
		if c != nil {
			c.removeImage(groupsImage)
		}
	})
	c = newCluster(t, 1)
	k := c.kubectl
	c.importGroupsImage()
	c.apply(`apiVersion: v1
kind: Pod
metadata: {name: security-context-demo}
spec:
  terminationGracePeriodSeconds: 1
  securityContext: {runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000}
  volumes:
  - {name: sec-ctx-vol, emptyDir: {}}
  containers:
  - name: sec-ctx-demo
    image: busybox
    command: ["sh", "-c", "sleep 1h"]
    volumeMounts: [{name: sec-ctx-vol, mountPath: /data/demo}]
    securityContext: {allowPrivilegeEscalation: false}
  - name: sec-ctx-demo-2
    image: busybox
    command: ["sh", "-c", "sleep 1h"]
    volumeMounts: [{name: sec-ctx-vol, mountPath: /data/demo}]
  - name: sec-ctx-demo-3
    image: busybox
    command: ["sh", "-c", "sleep 1h"]
    volumeMounts: [{name: sec-ctx-vol, mountPath: /data/demo}]
    securityContext: {runAsUser: 2000}
---
apiVersion: v1
kind: Pod
metadata: {name: groups-merge}
spec:
  terminationGracePeriodSeconds: 1
  securityContext: {runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [4000]}
  containers:
  - {name: c, image: ` + groupsImage + `, command: ["sleep", "1h"]}
---
apiVersion: v1
kind: Pod
metadata: {name: groups-strict}
spec:
  terminationGracePeriodSeconds: 1
  securityContext: {runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [4000], supplementalGroupsPolicy: Strict}
  containers:
  - {name: c, image: ` + groupsImage + `, command: ["sleep", "1h"]}
---
apiVersion: v1
kind: Pod
metadata: {name: hardened}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: plain, image: busybox, command: ["sleep", "1h"]}
  - name: locked
    image: busybox
    command: ["sleep", "1h"]
    securityContext:
      readOnlyRootFilesystem: true
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
      seccompProfile: {type: RuntimeDefault}
---
apiVersion: v1
kind: Pod
metadata: {name: nonroot}
spec:
  terminationGracePeriodSeconds: 1
  securityContext: {runAsNonRoot: true}
  containers:
  - {name: root-image, image: busybox, command: ["sleep", "1h"]}
  - {name: app-image, image: ` + groupsImage + `, command: ["sleep", "1h"]}
---
apiVersion: v1
kind: Pod
metadata: {name: sysctls}
spec:
  terminationGracePeriodSeconds: 1
  securityContext:
    sysctls:
    - {name: net.ipv4.ip_local_port_range, value: "20000 30000"}
    - {name: kernel.shm_rmid_forced, value: "1"}
  containers:
  - {name: c, image: busybox, command: ["sleep", "1h"]}
---
apiVersion: v1
kind: Pod
metadata: {name: unsafe-sysctl}
spec:
  terminationGracePeriodSeconds: 1
  securityContext:
    sysctls: [{name: kernel.msgmax, value: "65536"}]
  containers:
  - {name: c, image: busybox, command: ["sleep", "1h"]}
`)

	t.Run("pod and container IDs", func(t *testing.T) {
		pod := c.waitPod("default", "security-context-demo", 2*time.Minute, "Running and Ready", running)
		for _, tc := range []struct {
			container, id string
			uid, gid      string
		}{
			{"sec-ctx-demo", "uid=1000 gid=3000 groups=2000,3000", "1000", "3000"},
			{"sec-ctx-demo-2", "uid=1000 gid=3000 groups=2000,3000", "1000", "3000"},
			{"sec-ctx-demo-3", "uid=2000 gid=3000 groups=2000,3000", "2000", "3000"},
		} {
			if got := strings.TrimSpace(k.OK(t, "exec", "security-context-demo", "-c", tc.container, "--", "id")); got != tc.id {
				t.Errorf("%s: id = %q, want %q", tc.container, got, tc.id)
			}
			// The host's view of the container's process.
			st := c.containerProcStatus("security-context-demo", tc.container, "Uid", "Gid", "Groups")
			want := map[string]string{
				"Uid": strings.Repeat(tc.uid+" ", 3) + tc.uid, "Gid": strings.Repeat(tc.gid+" ", 3) + tc.gid, "Groups": "2000 3000",
			}
			if fmt.Sprint(st) != fmt.Sprint(want) {
				t.Errorf("%s: host /proc status %v, want %v", tc.container, st, want)
			}
		}
		// allowPrivilegeEscalation: false sets no_new_privs; Kubernetes
		// leaves it clear otherwise.
		if st := c.containerProcStatus("security-context-demo", "sec-ctx-demo", "NoNewPrivs"); st["NoNewPrivs"] != "1" {
			t.Errorf("allowPrivilegeEscalation false: NoNewPrivs %q", st["NoNewPrivs"])
		}
		if st := c.containerProcStatus("security-context-demo", "sec-ctx-demo-2", "NoNewPrivs"); st["NoNewPrivs"] != "0" {
			t.Errorf("default: NoNewPrivs %q", st["NoNewPrivs"])
		}
		// The process listing shows the users as well.
		if ps := k.OK(t, "exec", "security-context-demo", "-c", "sec-ctx-demo", "--", "ps"); !strings.Contains(ps, "1000") || strings.Contains(ps, "root") {
			t.Errorf("ps:\n%s", ps)
		}
		// status.containerStatuses[].user, where the kubelet reports it.
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.User == nil {
				t.Logf("%s: no status user reported", cs.Name)
				continue
			}
			if u := cs.User.Linux; u == nil || u.GID != 3000 || fmt.Sprint(u.SupplementalGroups) != "[2000 3000]" {
				t.Errorf("%s: status user %+v", cs.Name, u)
			}
		}
	})

	t.Run("fsGroup on a shared emptyDir", func(t *testing.T) {
		c.waitPod("default", "security-context-demo", 2*time.Minute, "Running and Ready", running)
		k.OK(t, "exec", "security-context-demo", "-c", "sec-ctx-demo", "--", "sh", "-c", "echo hello > /data/demo/testfile")
		// Made by uid 1000 (group 3000), it belongs to the fsGroup: the
		// directory is the group's, setgid.
		if got := strings.TrimSpace(k.OK(t, "exec", "security-context-demo", "-c", "sec-ctx-demo-3", "--", "stat", "-c", "%u %g", "/data/demo/testfile")); got != "1000 2000" {
			t.Errorf("testfile owner and group %q, want 1000 2000", got)
		}
		if got := strings.TrimSpace(k.OK(t, "exec", "security-context-demo", "-c", "sec-ctx-demo-2", "--", "stat", "-c", "%g %A", "/data/demo")); got != "2000 drwxrwsrwx" {
			t.Errorf("/data/demo: %q, want group 2000 with setgid", got)
		}
		// What the other user makes there belongs to the fsGroup too.
		k.OK(t, "exec", "security-context-demo", "-c", "sec-ctx-demo-3", "--", "sh", "-c", "echo more > /data/demo/testfile3")
		if got := strings.TrimSpace(k.OK(t, "exec", "security-context-demo", "-c", "sec-ctx-demo", "--", "stat", "-c", "%u %g", "/data/demo/testfile3")); got != "2000 2000" {
			t.Errorf("testfile3 owner and group %q, want 2000 2000", got)
		}
	})

	t.Run("supplementalGroupsPolicy", func(t *testing.T) {
		c.waitPod("default", "groups-merge", 2*time.Minute, "Running and Ready", running)
		c.waitPod("default", "groups-strict", 2*time.Minute, "Running and Ready", running)
		// Merge adds the image's groups for uid 1000 (extra, 50000).
		if got := strings.TrimSpace(k.OK(t, "exec", "groups-merge", "--", "id", "-G")); got != "3000 4000 50000" {
			t.Errorf("Merge: id -G = %q, want 3000 4000 50000", got)
		}
		if got := strings.TrimSpace(k.OK(t, "exec", "groups-strict", "--", "id", "-G")); got != "3000 4000" {
			t.Errorf("Strict: id -G = %q, want 3000 4000", got)
		}
		if st := c.containerProcStatus("groups-strict", "c", "Groups"); st["Groups"] != "3000 4000" {
			t.Errorf("Strict: host sees groups %q", st["Groups"])
		}
	})

	t.Run("read-only root, capabilities, seccomp", func(t *testing.T) {
		c.waitPod("default", "hardened", 2*time.Minute, "Running and Ready", running)
		if stderr := k.Fails(t, "exec", "hardened", "-c", "locked", "--", "touch", "/x"); !strings.Contains(stderr, "Read-only file system") {
			t.Errorf("touch /x on a read-only root: %q", stderr)
		}
		k.OK(t, "exec", "hardened", "-c", "plain", "--", "touch", "/x")
		// Root without CAP_CHOWN cannot give a file away.
		if stderr := k.Fails(t, "exec", "hardened", "-c", "locked", "--", "chown", "65534", "/dev/termination-log"); !strings.Contains(stderr, "Operation not permitted") {
			t.Errorf("chown without capabilities: %q", stderr)
		}
		k.OK(t, "exec", "hardened", "-c", "plain", "--", "chown", "65534", "/x")
		locked := c.containerProcStatus("hardened", "locked", "CapEff", "CapBnd", "NoNewPrivs", "Seccomp")
		if want := map[string]string{"CapEff": "0000000000000000", "CapBnd": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2"}; fmt.Sprint(locked) != fmt.Sprint(want) {
			t.Errorf("locked: %v, want %v", locked, want)
		}
		plain := c.containerProcStatus("hardened", "plain", "CapEff", "NoNewPrivs", "Seccomp")
		if want := map[string]string{"CapEff": "00000000a80425fb", "NoNewPrivs": "0", "Seccomp": "0"}; fmt.Sprint(plain) != fmt.Sprint(want) {
			t.Errorf("plain: %v, want %v (containerd's default capabilities, no seccomp)", plain, want)
		}
	})

	t.Run("runAsNonRoot", func(t *testing.T) {
		pod := c.waitingWith("nonroot", "root-image", "CreateContainerConfigError", "container has runAsNonRoot and image will run as root")
		want := fmt.Sprintf(`container has runAsNonRoot and image will run as root (pod: "nonroot_default(%s)", container: root-image)`, pod.UID)
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name == "root-image" && cs.State.Waiting.Message != want {
				t.Errorf("message %q, want %q", cs.State.Waiting.Message, want)
			}
		}
		// The image whose user is 1000 runs.
		c.waitPod("default", "nonroot", time.Minute, "app-image running", func(p *corev1.Pod) bool {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == "app-image" && cs.State.Running != nil {
					return true
				}
			}
			return false
		})
		if got := strings.TrimSpace(k.OK(t, "exec", "nonroot", "-c", "app-image", "--", "id", "-u")); got != "1000" {
			t.Errorf("app-image runs as %q", got)
		}
		if got := k.OK(t, "get", "pod", "nonroot"); !strings.Contains(got, "CreateContainerConfigError") {
			t.Errorf("kubectl get pod nonroot:\n%s", got)
		}
		c.waitFor(30*time.Second, "a Failed event", func(ctx context.Context) (bool, error) {
			evs, err := c.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{
				FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "nonroot").String()})
			if err != nil {
				return false, nil
			}
			for _, ev := range evs.Items {
				if ev.Reason == "Failed" && strings.Contains(ev.Message, "image will run as root") {
					return true, nil
				}
			}
			return false, nil
		})
	})

	t.Run("sysctls", func(t *testing.T) {
		c.waitPod("default", "sysctls", 2*time.Minute, "Running and Ready", running)
		got := k.OK(t, "exec", "sysctls", "--", "cat", "/proc/sys/net/ipv4/ip_local_port_range", "/proc/sys/kernel/shm_rmid_forced")
		if strings.Join(strings.Fields(got), " ") != "20000 30000 1" {
			t.Errorf("sysctls in the pod: %q", got)
		}
		// An unsafe sysctl is forbidden: the kubelet rejects the pod
		// before any container starts, in Kubernetes' words.
		const want = `Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted`
		p := c.waitPod("default", "unsafe-sysctl", time.Minute, "rejected", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodFailed
		})
		if p.Status.Reason != "SysctlForbidden" || p.Status.Message != want || len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil {
			t.Errorf("a pod with an unsafe sysctl: %s, want Failed, SysctlForbidden, %q", describeStatus(p), want)
		}
	})
}
