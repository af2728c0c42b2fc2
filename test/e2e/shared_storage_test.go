package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/minik8s/minik8s/pkg/glusterfs"
)

// startSharedStorage runs the shared file system add-on as minik8s up
// does, listening on the host's LAN address, where the kubelets reach it.
// It returns the server's directory.
func (c *cluster) startSharedStorage() string {
	t := c.t
	if _, err := glusterfs.FindServer(); err != nil {
		t.Skipf("needs GlusterFS (make deps installs glusterfs-client): %v", err)
	}
	if _, err := glusterfs.FindClient(); err != nil {
		t.Skipf("needs GlusterFS (make deps installs glusterfs-client): %v", err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- glusterfs.Run(ctx, glusterfs.Config{Client: kubernetes.NewForConfigOrDie(c.config), Dir: dir,
			Address: c.lan.gateway.String(), Port: -1, Bundle: c.cp.Bundle, Advertise: c.lan.gateway,
			Logger: c.logger(), Ready: func() { close(ready) }})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("shared storage: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("shared storage did not stop in 30s")
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("shared storage exited: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("shared storage not ready after a minute")
	}
	return dir
}

// Shared volumes: a claim of class shared is a directory of the cluster's
// GlusterFS, which pods on two nodes mount at once and see each other's
// writes in; each node unmounts it after its last pod; a static glusterfs
// volume whose directory is missing leaves its pod Pending with the cause
// as an event, and mounts once the directory is there; deleting the claim
// removes the directory.
func TestSharedStorage(t *testing.T) {
	c := newCluster(t, 2)
	server := c.startSharedStorage()
	k := c.kubectl
	ctx := context.Background()
	var pv *corev1.PersistentVolume

	t.Run("two pods on two nodes share a ReadWriteMany volume", func(t *testing.T) {
		k.OK(t, "apply", "-f", storageExample("pvc-shared.yaml"), "-f", storageExample("shared-log.yaml"))
		var pods []corev1.Pod
		c.waitFor(2*time.Minute, "two shared-log pods running", func(ctx context.Context) (bool, error) {
			list, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=shared-log"})
			if err != nil {
				return false, nil
			}
			pods = nil
			for _, p := range list.Items {
				if running(&p) {
					pods = append(pods, p)
				}
			}
			return len(pods) == 2, nil
		})
		if pods[0].Spec.NodeName == pods[1].Spec.NodeName {
			t.Fatalf("both pods on %s: the anti-affinity should spread them", pods[0].Spec.NodeName)
		}
		out := k.OK(t, "get", "pvc", "shared-data", "--no-headers")
		for _, want := range []string{"Bound", "RWX", "shared"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl get pvc shared-data: want %s:\n%s", want, out)
			}
		}
		pvc, err := c.client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "shared-data", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pv, err = c.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		if pv.Spec.Glusterfs == nil || pv.Spec.NodeAffinity != nil {
			t.Fatalf("volume %s: want a glusterfs volume with no node affinity: %+v", pv.Name, pv.Spec)
		}
		// Each pod reads the other's lines, through its own node's mount.
		for _, p := range pods {
			c.waitFor(time.Minute, p.Name+" sees both pods' lines", func(context.Context) (bool, error) {
				logs, _, err := k.Run(t, "exec", p.Name, "--", "cat", "/shared/log.txt")
				return err == nil && strings.Contains(logs, pods[0].Name+" on "+pods[0].Spec.NodeName) &&
					strings.Contains(logs, pods[1].Name+" on "+pods[1].Spec.NodeName), nil
			})
		}
		for _, p := range pods {
			if ok, err := glusterfs.IsMounted(c.sharedMount(p.Spec.NodeName, pv.Name)); !ok || err != nil {
				t.Errorf("node %s has no mount of %s (%v)", p.Spec.NodeName, pv.Name, err)
			}
		}
		path, err := glusterfs.ParsePath(pv.Spec.Glusterfs.Path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(server, "brick", path.Dir, "log.txt")); err != nil {
			t.Errorf("the file is not on the server: %v", err)
		}

		k.OK(t, "scale", "deployment", "shared-log", "--replicas=0")
		for _, p := range pods {
			mnt := c.sharedMount(p.Spec.NodeName, pv.Name)
			c.waitFor(time.Minute, "node "+p.Spec.NodeName+" unmounts the volume after its last pod", func(context.Context) (bool, error) {
				ok, err := glusterfs.IsMounted(mnt)
				return err == nil && !ok, nil
			})
		}
		// The data outlives every pod.
		c.apply(`apiVersion: v1
kind: Pod
metadata: {name: shared-reader}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox
    command: ["sh", "-c", "wc -l < /shared/log.txt; cat /shared/log.txt"]
    volumeMounts: [{name: shared, mountPath: /shared, readOnly: true}]
  volumes:
  - name: shared
    persistentVolumeClaim: {claimName: shared-data}
`)
		reader := c.waitPod("default", "shared-reader", 2*time.Minute, "finished", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		})
		if logs := k.OK(t, "logs", "shared-reader"); !strings.Contains(logs, pods[0].Name) || !strings.Contains(logs, pods[1].Name) {
			t.Errorf("the reader read %q, want both writers' lines (%s)", logs, describeStatus(reader))
		}
		k.OK(t, "delete", "pod", "shared-reader")
	})

	t.Run("a static volume whose directory is missing waits, with the cause", func(t *testing.T) {
		c.apply(`apiVersion: v1
kind: PersistentVolume
metadata: {name: static-shared}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadOnlyMany]
  persistentVolumeReclaimPolicy: Retain
  glusterfs: {endpoints: glusterfs, endpointsNamespace: kube-system, path: minik8s/static-demo}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: static-shared}
spec:
  storageClassName: ""
  volumeName: static-shared
  accessModes: [ReadOnlyMany]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: static-reader}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox
    command: ["sh", "-c", "cat /data/hello.txt && if touch /data/x; then echo WROTE; fi"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: static-shared, readOnly: true}
`)
		t.Cleanup(func() {
			_ = c.client.CoreV1().PersistentVolumes().Delete(context.Background(), "static-shared", metav1.DeleteOptions{})
		})
		c.waitFor(time.Minute, "a FailedMount event naming the directory", func(ctx context.Context) (bool, error) {
			evs, err := c.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "static-reader").String()})
			if err != nil {
				return false, nil
			}
			for _, e := range evs.Items {
				if e.Reason == "FailedMount" && strings.Contains(e.Message, `no directory "static-demo"`) {
					t.Logf("event: %s", e.Message)
					return true, nil
				}
			}
			return false, nil
		})
		if p, err := c.client.CoreV1().Pods("default").Get(ctx, "static-reader", metav1.GetOptions{}); err != nil || p.Status.Phase != corev1.PodPending {
			t.Fatalf("static-reader should wait Pending: %v %s", err, describeStatus(p))
		}
		// The administrator makes the directory (through a mount, as
		// GlusterFS wants its bricks written).
		dir := filepath.Join(server, "mnt", "static-demo")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("made by the administrator\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p := c.waitPod("default", "static-reader", 2*time.Minute, "finished", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		})
		logs := k.OK(t, "logs", "static-reader")
		if !strings.Contains(logs, "made by the administrator") || strings.Contains(logs, "WROTE") {
			t.Errorf("static-reader: %q, want the file read and the write refused (%s)", logs, describeStatus(p))
		}
		k.OK(t, "delete", "pod", "static-reader")
		k.OK(t, "delete", "pvc", "static-shared")
		if _, err := os.Stat(filepath.Join(dir, "hello.txt")); err != nil {
			t.Errorf("a Retain volume's data went with its claim: %v", err)
		}
	})

	t.Run("deleting the claim removes its directory", func(t *testing.T) {
		if pv == nil {
			t.Skip("no volume: the first subtest failed")
		}
		path, _ := glusterfs.ParsePath(pv.Spec.Glusterfs.Path)
		k.OK(t, "delete", "deployment", "shared-log")
		k.OK(t, "delete", "pvc", "shared-data")
		c.waitFor(time.Minute, "the volume deleted with its claim", func(ctx context.Context) (bool, error) {
			_, err := c.client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if _, err := os.Stat(filepath.Join(server, "brick", path.Dir)); !os.IsNotExist(err) {
			t.Errorf("the volume's directory is still on the server: %v", err)
		}
	})
}

// sharedMount is where node mounts the glusterfs volume pv.
func (c *cluster) sharedMount(node, pv string) string {
	return filepath.Join(c.nodes[node].rootDir, "plugins", "kubernetes.io~glusterfs", pv)
}
