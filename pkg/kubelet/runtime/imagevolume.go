package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/mount"
	"github.com/containerd/containerd/snapshots"
	"github.com/moby/sys/mountinfo"
	"github.com/opencontainers/image-spec/identity"
	"golang.org/x/sys/unix"
)

var _ ImageVolumer = (*Containerd)(nil)

// ImageVolumer is a Runtime that mounts images as volumes (a pod's image
// volumes): the root filesystem of an image, read-only, on a host
// directory the kubelet then binds into containers.
type ImageVolumer interface {
	// MountImage mounts the root filesystem of the present image ref
	// read-only on the directory target, through a read-only snapshot
	// named key. Mounting a key already mounted on target does nothing,
	// so a restarted kubelet can call it again.
	MountImage(ctx context.Context, ref, key, target string) error
	// UnmountImage unmounts target and removes the snapshot key. What is
	// already gone is not an error.
	UnmountImage(ctx context.Context, key, target string) error
}

// labelGCRoot keeps a snapshot from containerd's garbage collector: an
// image volume's view is referenced by no container or image.
const labelGCRoot = "containerd.io/gc.root"

// MountImage creates a View snapshot of the image's unpacked layers (its
// chain ID) and mounts it on target, read-only.
func (r *Containerd) MountImage(ctx context.Context, ref, key, target string) error {
	ctx = r.nsCtx(ctx)
	if ok, err := mountinfo.Mounted(target); err == nil && ok {
		return nil
	}
	img, err := r.getImage(ctx, ref)
	if err != nil {
		return err
	}
	if err := r.unpack(ctx, img); err != nil {
		return err
	}
	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		return fmt.Errorf("image %s: layers: %w", img.Name(), err)
	}
	sn := r.client.SnapshotService(r.snapshotter())
	labels := map[string]string{labelGCRoot: time.Now().UTC().Format(time.RFC3339), labelImageRef: img.Name()}
	if r.cfg.Node != "" {
		labels[LabelNode] = r.cfg.Node
	}
	mounts, err := sn.View(ctx, key, identity.ChainID(diffIDs).String(), snapshots.WithLabels(labels))
	if errdefs.IsAlreadyExists(err) {
		mounts, err = sn.Mounts(ctx, key)
	}
	if err != nil {
		return fmt.Errorf("image %s: view snapshot %s: %w", img.Name(), key, err)
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		return err
	}
	if err := mount.All(mounts, target); err != nil {
		return fmt.Errorf("image %s: mount on %s: %w", img.Name(), target, err)
	}
	// An overlay of lower layers only is read-only already, a single
	// layer is a bind mount: make the mount point itself read-only too.
	if err := unix.Mount("", target, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		_ = unix.Unmount(target, unix.MNT_DETACH)
		return fmt.Errorf("image %s: remount %s read-only: %w", img.Name(), target, err)
	}
	return nil
}

// UnmountImage unmounts an image volume and removes its snapshot.
func (r *Containerd) UnmountImage(ctx context.Context, key, target string) error {
	ctx = r.nsCtx(ctx)
	for {
		ok, err := mountinfo.Mounted(target)
		if errors.Is(err, os.ErrNotExist) || err == nil && !ok {
			break
		}
		if err != nil {
			return fmt.Errorf("image volume %s: %w", target, err)
		}
		if err := unix.Unmount(target, 0); err != nil {
			// Busy: detach it; it goes when its last user does.
			if err2 := unix.Unmount(target, unix.MNT_DETACH); err2 != nil {
				return fmt.Errorf("unmount %s: %w", target, err)
			}
		}
	}
	if err := r.client.SnapshotService(r.snapshotter()).Remove(ctx, key); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("remove snapshot %s: %w", key, err)
	}
	return nil
}
