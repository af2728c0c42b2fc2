package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/snapshots"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestImageVolume mounts the busybox image as a volume, whole and by a
// subPath: its files are there, read-only; the volume survives a kubelet
// restart, and deleting the pod leaves neither a mount nor a snapshot.
func TestImageVolume(t *testing.T) {
	n := newNode(t)
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "imgvol", UID: types.UID("uid-imgvol-" + randomHex(t, 4))},
		Spec: corev1.PodSpec{NodeName: "local-e2e", RestartPolicy: corev1.RestartPolicyAlways,
			Volumes: []corev1.Volume{
				// No pullPolicy: Always for busybox (:latest), which the
				// built-in image satisfies without a registry.
				{Name: "volume", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox"}}},
				{Name: "never", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox", PullPolicy: corev1.PullNever}}},
			},
			Containers: []corev1.Container{{Name: "c", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sleep", "3600"},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "volume", MountPath: "/img"},
					{Name: "never", MountPath: "/bins", SubPath: "bin"},
				}}}},
	}
	if err := n.p.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	s := n.waitStatus("default", "imgvol", time.Minute, "the pod to run", func(s *corev1.PodStatus) bool {
		return len(s.ContainerStatuses) == 1 && s.ContainerStatuses[0].State.Running != nil
	})
	if out, code := n.exec("default", "imgvol", "c", "ls", "/img/bin/busybox"); code != 0 || out != "/img/bin/busybox\n" {
		t.Errorf("ls /img/bin/busybox: %q, exit %d", out, code)
	}
	if out, code := n.exec("default", "imgvol", "c", "ls", "/bins/busybox"); code != 0 || out != "/bins/busybox\n" {
		t.Errorf("ls /bins/busybox (subPath bin): %q, exit %d", out, code)
	}
	for _, f := range []string{"/img/written", "/img/bin/busybox", "/bins/written"} {
		if out, code := n.exec("default", "imgvol", "c", "sh", "-c", "echo x > "+f); code == 0 || !strings.Contains(out, "Read-only file system") {
			t.Errorf("writing %s: exit %d, %q; want a read-only file system", f, code, out)
		}
	}
	key := "minik8s/image-volume/" + string(pod.UID) + "/volume"
	if got := n.snapshots(t, string(pod.UID)); len(got) != 2 || !strings.Contains(strings.Join(got, " "), key) {
		t.Errorf("snapshots of the pod's image volumes: %v", got)
	}

	// A kubelet restart adopts the pod; its volumes stay as they are.
	n.restart()
	api := pod.DeepCopy()
	api.Status = *s
	if err := n.p.UpdatePod(ctx, api); err != nil {
		t.Fatal(err)
	}
	if out, code := n.exec("default", "imgvol", "c", "ls", "/img/bin/busybox"); code != 0 || out != "/img/bin/busybox\n" {
		t.Errorf("after the restart, ls /img/bin/busybox: %q, exit %d", out, code)
	}

	if err := n.p.DeletePod(ctx, withGrace(api, 0)); err != nil {
		t.Fatal(err)
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	podDir := filepath.Join(n.cfg.RootDir, "pods", string(pod.UID))
	if strings.Contains(string(mountinfo), podDir) {
		t.Errorf("a mount under %s is left", podDir)
	}
	if _, err := os.Stat(podDir); !os.IsNotExist(err) {
		t.Errorf("pod dir left: %v", err)
	}
	if got := n.snapshots(t, string(pod.UID)); len(got) != 0 {
		t.Errorf("snapshots left: %v", got)
	}
}

// TestImageVolumeMissingImage: an image volume whose image is not here
// and may not be pulled keeps the container waiting, with the reason a
// container image would give.
func TestImageVolumeMissingImage(t *testing.T) {
	n := newNode(t)
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "noimg", UID: types.UID("uid-noimg-" + randomHex(t, 4))},
		Spec: corev1.PodSpec{NodeName: "local-e2e", RestartPolicy: corev1.RestartPolicyAlways,
			Volumes: []corev1.Volume{{Name: "volume", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{
				Reference: "example.invalid/absent:1.0", PullPolicy: corev1.PullNever}}}},
			Containers: []corev1.Container{{Name: "c", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sleep", "3600"}, VolumeMounts: []corev1.VolumeMount{{Name: "volume", MountPath: "/img"}}}}},
	}
	if err := n.p.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	n.waitStatus("default", "noimg", time.Minute, "the container to wait with ErrImageNeverPull", func(s *corev1.PodStatus) bool {
		return len(s.ContainerStatuses) == 1 && s.ContainerStatuses[0].State.Waiting != nil &&
			s.ContainerStatuses[0].State.Waiting.Reason == "ErrImageNeverPull"
	})
	if err := n.p.DeletePod(ctx, withGrace(pod, 0)); err != nil {
		t.Fatal(err)
	}
}

// snapshots are the keys of the node's snapshots that name uid.
func (n *node) snapshots(t *testing.T, uid string) []string {
	t.Helper()
	client, err := containerd.New(n.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := namespaces.WithNamespace(context.Background(), n.rtCfg.Namespace)
	var keys []string
	err = client.SnapshotService(containerd.DefaultSnapshotter).Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if strings.Contains(info.Name, uid) {
			keys = append(keys, info.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestImageVolumeReleasedWhenDone: a pod that ran to completion holds
// its image volumes no longer, before it is deleted.
func TestImageVolumeReleasedWhenDone(t *testing.T) {
	n := newNode(t)
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "imgdone", UID: types.UID("uid-imgdone-" + randomHex(t, 4))},
		Spec: corev1.PodSpec{NodeName: "local-e2e", RestartPolicy: corev1.RestartPolicyNever,
			Volumes: []corev1.Volume{{Name: "volume", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{
				Reference: "busybox", PullPolicy: corev1.PullIfNotPresent}}}},
			Containers: []corev1.Container{{Name: "c", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"ls", "/img/bin/busybox"}, VolumeMounts: []corev1.VolumeMount{{Name: "volume", MountPath: "/img"}}}}},
	}
	if err := n.p.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	n.waitStatus("default", "imgdone", time.Minute, "Succeeded", func(s *corev1.PodStatus) bool { return s.Phase == corev1.PodSucceeded })
	podDir := filepath.Join(n.cfg.RootDir, "pods", string(pod.UID))
	deadline := time.Now().Add(30 * time.Second)
	for {
		mountinfo, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(mountinfo), podDir) && len(n.snapshots(t, string(pod.UID))) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the finished pod still holds its image volume: snapshots %v", n.snapshots(t, string(pod.UID)))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := n.p.DeletePod(ctx, withGrace(pod, 0)); err != nil {
		t.Fatal(err)
	}
}
