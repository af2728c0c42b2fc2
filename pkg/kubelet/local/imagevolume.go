package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

// pluginImage holds the pod's image volumes: each a read-only mount of
// an image's root filesystem, bound into the containers that mount it.
const pluginImage = "kubernetes.io~image"

// imageVolumeKey names the runtime's snapshot of a pod's image volume;
// it is derived from the pod and the volume alone, so a restarted
// kubelet finds it again.
func imageVolumeKey(uid types.UID, volume string) string {
	return "minik8s/image-volume/" + string(uid) + "/" + volume
}

// imageVolumes pulls and mounts the image volumes container c mounts
// before it is created, as Kubernetes does when it starts a container:
// each image as its volume's pullPolicy says (defaulted like a
// container's), with the pull's events and back-off; a failure leaves c
// waiting (ErrImagePull, ImagePullBackOff, ...) and false is returned.
func (w *podWorker) imageVolumes(ctx context.Context, pod *corev1.Pod, c *corev1.Container) bool {
	for _, vm := range c.VolumeMounts {
		v := podVolume(pod, vm.Name)
		if v == nil || v.Image == nil {
			continue
		}
		if !w.pull(ctx, pod, c.Name, "", v.Image.Reference, defaultPullPolicy(v.Image.Reference, v.Image.PullPolicy)) {
			return false
		}
		if err := w.p.mountImageVolume(ctx, pod, v); err != nil {
			if ctx.Err() != nil {
				return false
			}
			msg := fmt.Sprintf("failed to mount image volume %q: %v", v.Name, err)
			w.setWaiting(c.Name, "CreateContainerError", msg)
			w.p.event(pod, c.Name, corev1.EventTypeWarning, "Failed", "Error: %s", msg)
			return false
		}
	}
	return true
}

func podVolume(pod *corev1.Pod, name string) *corev1.Volume {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}

// mountImageVolume mounts the (present) image of volume v read-only on
// its directory under the pod's, unless it is mounted already.
func (p *Provider) mountImageVolume(ctx context.Context, pod *corev1.Pod, v *corev1.Volume) error {
	iv, ok := p.rt.(runtime.ImageVolumer)
	if !ok {
		return errors.New("the container runtime cannot mount images as volumes")
	}
	dir := p.volumeDir(pod.UID, pluginImage, v.Name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	return iv.MountImage(ctx, v.Image.Reference, imageVolumeKey(pod.UID, v.Name), dir)
}

// unmountImageVolumes unmounts the pod's image volumes and removes their
// snapshots, once its containers are gone or done. The directories stay
// (empty) until the pod's are removed.
func (p *Provider) unmountImageVolumes(ctx context.Context, uid types.UID) error {
	root := filepath.Join(p.podDir(uid), "volumes", pluginImage)
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	iv, ok := p.rt.(runtime.ImageVolumer)
	if !ok {
		return nil
	}
	var errs []error
	for _, e := range entries {
		if err := iv.UnmountImage(ctx, imageVolumeKey(uid, e.Name()), filepath.Join(root, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
