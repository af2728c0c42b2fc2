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
)

func storageExample(name string) string {
	return filepath.Join("..", "..", "examples", "storage", name)
}

// Persistent storage on real nodes: a claim of the default class gets a
// local-path volume on the node of its first pod, which a later pod finds
// there; deleting the claim removes the volume and its directory; a
// static hostPath volume with Retain keeps its data after its claim goes.
func TestPersistentStorage(t *testing.T) {
	c := newCluster(t, 2)
	k := c.kubectl
	ctx := context.Background()

	t.Run("a local-path volume follows its claim", func(t *testing.T) {
		k.OK(t, "apply", "-f", storageExample("pvc-local.yaml"), "-f", storageExample("pod-writes.yaml"))
		writer := c.waitPod("default", "writer", 2*time.Minute, "running", running)
		node := writer.Spec.NodeName

		out := k.OK(t, "get", "pv,pvc", "--no-headers")
		if n := strings.Count(out, "Bound"); n != 2 {
			t.Fatalf("kubectl get pv,pvc: want the volume and the claim Bound:\n%s", out)
		}
		pvc, err := c.client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := pvc.Annotations["volume.kubernetes.io/selected-node"]; got != node {
			t.Errorf("claim's selected node %q, writer on %q", got, node)
		}
		pv, err := c.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pv.Spec.Local == nil {
			t.Fatalf("volume %s is not a local volume: %+v", pv.Name, pv.Spec.PersistentVolumeSource)
		}
		dir := pv.Spec.Local.Path
		if want := filepath.Join(c.nodes[node].rootDir, "local-path", "default_data_"+pv.Name); dir != want {
			t.Errorf("volume directory %s, want %s (under the writer's node's root)", dir, want)
		}
		file := filepath.Join(dir, "hello.txt")
		c.waitFor(time.Minute, "the writer's file on the node", func(context.Context) (bool, error) {
			b, err := os.ReadFile(file)
			return err == nil && strings.Contains(string(b), "written by writer"), nil
		})

		k.OK(t, "delete", "pod", "writer", "--grace-period=1")
		k.OK(t, "apply", "-f", storageExample("pod-reads.yaml"))
		reader := c.waitPod("default", "reader", 2*time.Minute, "finished", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		})
		if reader.Spec.NodeName != node {
			t.Errorf("reader on %q, its volume is on %q", reader.Spec.NodeName, node)
		}
		if logs := k.OK(t, "logs", "reader"); !strings.Contains(logs, "written by writer") {
			t.Errorf("reader read %q, want what writer wrote (%s)", logs, describeStatus(reader))
		}

		k.OK(t, "delete", "pod", "reader")
		k.OK(t, "delete", "pvc", "data")
		c.waitFor(time.Minute, "the volume deleted with its claim", func(ctx context.Context) (bool, error) {
			_, err := c.client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("volume directory %s still there after the volume was deleted: %v", dir, err)
		}
	})

	t.Run("a static hostPath volume keeps its data (Retain)", func(t *testing.T) {
		const hostDir = "/var/lib/minik8s/hostpath-demo"
		if _, err := os.Stat(hostDir); err == nil {
			t.Skipf("%s exists on this machine: not touching it", hostDir)
		}
		t.Cleanup(func() {
			_ = c.client.CoreV1().PersistentVolumes().Delete(context.Background(), "hostpath-demo", metav1.DeleteOptions{})
			_ = os.RemoveAll(hostDir)
		})
		k.OK(t, "apply", "-f", storageExample("pv-hostpath.yaml"))
		c.apply(`apiVersion: v1
kind: Pod
metadata: {name: static-writer}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox
    command: ["sh", "-c", "echo kept > /data/kept.txt"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: static-data}
`)
		c.waitPod("default", "static-writer", 2*time.Minute, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		if out := k.OK(t, "get", "pvc", "static-data", "--no-headers"); !strings.Contains(out, "Bound") || !strings.Contains(out, "hostpath-demo") {
			t.Errorf("kubectl get pvc static-data: %s", out)
		}
		k.OK(t, "delete", "pod", "static-writer")
		k.OK(t, "delete", "pvc", "static-data")
		c.waitFor(time.Minute, "the volume Released", func(ctx context.Context) (bool, error) {
			pv, err := c.client.CoreV1().PersistentVolumes().Get(ctx, "hostpath-demo", metav1.GetOptions{})
			return err == nil && pv.Status.Phase == corev1.VolumeReleased, err
		})
		if b, err := os.ReadFile(filepath.Join(hostDir, "kept.txt")); err != nil || strings.TrimSpace(string(b)) != "kept" {
			t.Errorf("data of the Retain volume: %q, %v", b, err)
		}
	})
}
