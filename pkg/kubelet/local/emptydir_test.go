package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// A memory-backed emptyDir is a tmpfs sized as Kubernetes sizes it (the
// node's allocatable memory, the pod's limit when all its containers
// have one, the volume's sizeLimit, whichever is least), open to all;
// the tmpfs goes when the pod finishes or is deleted.
func TestMemoryEmptyDir(t *testing.T) {
	const gi = 1 << 30
	mem := func(name string, limit *resource.Quantity) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: limit}}}
	}
	for _, tc := range []struct {
		name     string
		limits   []string // the containers' memory limits; "" none
		vol      corev1.Volume
		wantSize int64
	}{
		{name: "node allocatable", limits: []string{""}, vol: mem("m", nil), wantSize: 4 * gi},
		{name: "size limit", limits: []string{""}, vol: mem("m", ptr.To(resource.MustParse("64Mi"))), wantSize: 64 << 20},
		{name: "size limit over the node's", limits: []string{""}, vol: mem("m", ptr.To(resource.MustParse("8Gi"))), wantSize: 4 * gi},
		{name: "pod limit", limits: []string{"1Gi", "512Mi"}, vol: mem("m", nil), wantSize: gi + gi/2},
		{name: "one container without a limit", limits: []string{"1Gi", ""}, vol: mem("m", nil), wantSize: 4 * gi},
		{name: "size limit under the pod's", limits: []string{"1Gi"}, vol: mem("m", ptr.To(resource.MustParse("100Mi"))), wantSize: 100 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			e.p.node.allocatable = corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(4*gi, resource.BinarySI)}
			var names []string
			for i := range tc.limits {
				names = append(names, "c"+itoa(i))
			}
			pod := testPod("mem", names...)
			pod.Spec.RestartPolicy = corev1.RestartPolicyNever
			for i, l := range tc.limits {
				if l != "" {
					pod.Spec.Containers[i].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(l)}
				}
			}
			pod.Spec.Volumes = []corev1.Volume{tc.vol, {Name: "disk", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			w := e.worker(pod)
			if s := e.sync(w); s.Phase != corev1.PodPending && s.Phase != corev1.PodRunning {
				t.Fatalf("phase %s", s.Phase)
			}
			dir := e.p.volumeDir(pod.UID, pluginEmptyDir, "m")
			size, ok := e.mounts.size(dir)
			if !ok || size != tc.wantSize {
				t.Errorf("tmpfs on %s: %v, size %d, want %d", dir, ok, size, tc.wantSize)
			}
			if _, ok := e.mounts.size(e.p.volumeDir(pod.UID, pluginEmptyDir, "disk")); ok {
				t.Error("the default medium is a tmpfs too")
			}
			if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o777 {
				t.Errorf("volume directory: %v, %v", info.Mode(), err)
			}
			for _, c := range names {
				e.rt.exit(t, c, 0)
			}
			e.sync(w)
			if s := e.sync(w); s.Phase != corev1.PodSucceeded {
				t.Fatalf("phase %s, want Succeeded", s.Phase)
			}
			if _, ok := e.mounts.size(dir); ok {
				t.Error("the tmpfs of a finished pod is still mounted")
			}
		})
	}

	t.Run("deleted", func(t *testing.T) {
		e := newTestEnv(t)
		pod := testPod("mem", "c")
		pod.Spec.Volumes = []corev1.Volume{mem("m", nil)}
		w := e.worker(pod)
		e.sync(w)
		dir := e.p.volumeDir(pod.UID, pluginEmptyDir, "m")
		if _, ok := e.mounts.size(dir); !ok {
			t.Fatal("no tmpfs")
		}
		del := pod.DeepCopy()
		del.DeletionGracePeriodSeconds = ptr.To[int64](0)
		if err := e.p.DeletePod(context.Background(), del); err != nil {
			t.Fatal(err)
		}
		if _, ok := e.mounts.size(dir); ok {
			t.Error("the tmpfs of a deleted pod is still mounted")
		}
		if _, err := os.Stat(e.p.podDir(pod.UID)); !os.IsNotExist(err) {
			t.Errorf("pod directory: %v", err)
		}
	})
}

// The machine's mounter mounts a tmpfs once, of the size asked, and
// unmounts it.
func TestSysMounterTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "vol")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	m := sysMounter{}
	t.Cleanup(func() { _ = m.unmount(dir) })
	if isMountPoint(dir) {
		t.Fatal("a mount point before mounting")
	}
	for range 2 {
		if err := m.mountTmpfs(dir, 8<<20); err != nil {
			t.Fatal(err)
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.TMPFS_MAGIC || int64(st.Blocks)*st.Bsize != 8<<20 {
		t.Errorf("statfs: type %#x, %d bytes; want tmpfs of 8Mi", st.Type, int64(st.Blocks)*st.Bsize)
	}
	if n := mountsOn(t, dir); n != 1 {
		t.Errorf("%d mounts on %s, want 1", n, dir)
	}
	if err := m.unmount(dir); err != nil {
		t.Fatal(err)
	}
	if n := mountsOn(t, dir); n != 0 || isMountPoint(dir) {
		t.Errorf("%d mounts on %s after unmounting", n, dir)
	}
	if err := m.unmount(dir); err != nil {
		t.Errorf("unmounting nothing: %v", err)
	}
}

// mountsOn counts the mounts on dir in /proc/self/mountinfo.
func mountsOn(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			n++
		}
	}
	return n
}
