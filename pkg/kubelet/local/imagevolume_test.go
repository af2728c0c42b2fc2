package local

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

// TestDefaultPullPolicy: an image volume's pullPolicy, like a
// container's imagePullPolicy, defaults to Always for :latest or no tag
// and to IfNotPresent otherwise; a set policy stays.
func TestDefaultPullPolicy(t *testing.T) {
	for _, tc := range []struct {
		image  string
		policy corev1.PullPolicy
		want   corev1.PullPolicy
	}{
		{"busybox", "", corev1.PullAlways},
		{"busybox:latest", "", corev1.PullAlways},
		{"registry.example:5000/app", "", corev1.PullAlways},
		{"quay.io/crio/artifact:v2", "", corev1.PullIfNotPresent},
		{"registry.example:5000/app:1.0", "", corev1.PullIfNotPresent},
		{"busybox@sha256:" + sha, "", corev1.PullIfNotPresent},
		{"busybox", corev1.PullNever, corev1.PullNever},
		{"busybox:1.36", corev1.PullAlways, corev1.PullAlways},
		{"Not A Reference", "", corev1.PullAlways},
	} {
		if got := defaultPullPolicy(tc.image, tc.policy); got != tc.want {
			t.Errorf("defaultPullPolicy(%q, %q) = %q, want %q", tc.image, tc.policy, got, tc.want)
		}
	}
}

const sha = "0000000000000000000000000000000000000000000000000000000000000000"

// TestImageVolumeSubPathSymlinks: a subPath of an image volume follows
// the image's symlinks inside the image, an absolute one too, never to
// the node's files; the volume is read-only to every container.
func TestImageVolumeSubPathSymlinks(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("img", "c")
	pod.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox"}}}}
	root := e.p.volumeDir(pod.UID, pluginImage, "v")
	// What an image might hold: /etc/conf a directory, /cfg -> /etc/conf
	// and /shadow -> /etc/shadow (absent from the image).
	if err := os.MkdirAll(filepath.Join(root, "etc", "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"cfg": "/etc/conf", "shadow": "/etc/shadow"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	mount := func(sub string) (runtime.Mount, error) {
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/m", SubPath: sub}}
		mounts, err := e.p.containerMounts(context.Background(), pod, &pod.Spec.Containers[0], 0, nil)
		if err != nil {
			return runtime.Mount{}, err
		}
		return mounts[0], nil
	}
	m, err := mount("cfg")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "etc", "conf"); m.HostPath != want || !m.ReadOnly {
		t.Errorf("subPath cfg: %+v, want %s read-only", m, want)
	}
	if m, err := mount("shadow"); err == nil {
		t.Errorf("subPath shadow (-> /etc/shadow, not in the image) mounts %+v", m)
	}
	if m, err := mount(""); err != nil || m.HostPath != root || !m.ReadOnly {
		t.Errorf("whole volume: %+v %v, want %s read-only", m, err, root)
	}
}
