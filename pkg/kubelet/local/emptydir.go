package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
)

// mounter mounts and unmounts the tmpfs of memory-backed emptyDirs;
// tests replace it.
type mounter interface {
	// mountTmpfs mounts a tmpfs of size bytes (0: the kernel's default)
	// on dir, unless one is mounted there already.
	mountTmpfs(dir string, size int64) error
	// unmount unmounts what is mounted on dir; nothing when nothing is.
	unmount(dir string) error
}

// sysMounter is the machine's mount(2).
type sysMounter struct{}

func (sysMounter) mountTmpfs(dir string, size int64) error {
	if isMemoryMount(dir) {
		return nil
	}
	opts := ""
	if size > 0 {
		opts = fmt.Sprintf("size=%d", size)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

func (sysMounter) unmount(dir string) error {
	if !isMountPoint(dir) {
		return nil
	}
	if err := unix.Unmount(dir, 0); err != nil {
		// Busy (a process of the node still in it): detach it; it goes
		// when the last user does.
		if err2 := unix.Unmount(dir, unix.MNT_DETACH); err2 != nil {
			return fmt.Errorf("unmount %s: %w", dir, err)
		}
	}
	return nil
}

// isMountPoint says whether dir is on another device than its parent, as
// Kubernetes' IsLikelyNotMountPoint tells.
func isMountPoint(dir string) bool {
	var st, parent unix.Stat_t
	if unix.Lstat(dir, &st) != nil || unix.Lstat(filepath.Dir(dir), &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
}

// isMemoryMount says whether dir is a mount point of a tmpfs.
func isMemoryMount(dir string) bool {
	var fsst unix.Statfs_t
	return isMountPoint(dir) && unix.Statfs(dir, &fsst) == nil && fsst.Type == unix.TMPFS_MAGIC
}

// setupEmptyDir makes an emptyDir: a directory open to all (setgid and
// the pod's fsGroup's with one), on a tmpfs of its own for medium
// Memory, as Kubernetes' emptyDir plugin does.
func (p *Provider) setupEmptyDir(pod *corev1.Pod, v *corev1.Volume, gid *int64) error {
	dir := p.volumeDir(pod.UID, pluginEmptyDir, v.Name)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	if v.EmptyDir.Medium == corev1.StorageMediumMemory {
		if err := p.mounter.mountTmpfs(dir, p.memoryEmptyDirSize(pod, v.EmptyDir)); err != nil {
			return err
		}
	}
	mode := fs.FileMode(0o777)
	if gid != nil {
		if err := os.Chown(dir, -1, int(*gid)); err != nil {
			return err
		}
		mode |= fs.ModeSetgid
	}
	// Also clears the sticky bit a fresh tmpfs has.
	return os.Chmod(dir, mode)
}

// memoryEmptyDirSize is the size of a memory-backed emptyDir's tmpfs, as
// Kubernetes sizes it: the node's allocatable memory, or less, the pod's
// memory limit when every container has one, or less still, the
// volume's sizeLimit.
func (p *Provider) memoryEmptyDirSize(pod *corev1.Pod, src *corev1.EmptyDirVolumeSource) int64 {
	var size int64
	if m, ok := p.allocatable()[corev1.ResourceMemory]; ok {
		size = m.Value()
	}
	smaller := func(v int64) {
		if v > 0 && (size == 0 || v <= size) {
			size = v
		}
	}
	if allHaveMemoryLimits(pod) {
		limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
		if m, ok := limits[corev1.ResourceMemory]; ok {
			smaller(m.Value())
		}
	}
	if src.SizeLimit != nil {
		smaller(src.SizeLimit.Value())
	}
	return size
}

// unmountEmptyDirs unmounts the tmpfs of the pod's memory-backed
// emptyDirs (their contents go with them), when the pod is done or
// deleted.
func (p *Provider) unmountEmptyDirs(uid types.UID) error {
	root := filepath.Join(p.podDir(uid), "volumes", pluginEmptyDir)
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if err := p.mounter.unmount(filepath.Join(root, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// allHaveMemoryLimits says whether every container of the pod, init
// containers too, has a memory limit: only then has the pod one.
func allHaveMemoryLimits(pod *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if _, ok := cs[i].Resources.Limits[corev1.ResourceMemory]; !ok {
				return false
			}
		}
	}
	return true
}
