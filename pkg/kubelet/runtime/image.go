package runtime

import (
	"context"
	"fmt"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/errdefs"
	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/image"
)

// NormalizeImage returns the full reference of an image as a pull names it:
// "busybox" is docker.io/library/busybox:latest, "registry:5000/app" is
// registry:5000/app:latest.
func NormalizeImage(ref string) (string, error) {
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", fmt.Errorf("%w %q: %v", ErrInvalidImageName, ref, err)
	}
	return named.String(), nil
}

// EnsureImage makes an image present and unpacked as policy says: Never
// uses only what is here, IfNotPresent (and "") pulls when it is missing,
// Always pulls unless the image was built or imported on this node (there
// is no registry to pull it from; see image.LocalLabel).
func (r *Containerd) EnsureImage(ctx context.Context, ref string, policy corev1.PullPolicy) (bool, error) {
	ctx = r.nsCtx(ctx)
	name, err := NormalizeImage(ref)
	if err != nil {
		return false, err
	}
	img, err := r.client.GetImage(ctx, name)
	present := err == nil
	if err != nil && !errdefs.IsNotFound(err) {
		return false, fmt.Errorf("image %s: %w", name, err)
	}
	switch {
	case present && policy != corev1.PullAlways,
		present && img.Labels()[image.LocalLabel] == "true":
		return false, r.unpack(ctx, img)
	case !present && policy == corev1.PullNever:
		return false, fmt.Errorf("%w: %s", ErrImageNeverPull, name)
	}
	opts := []containerd.RemoteOpt{containerd.WithPullUnpack, containerd.WithResolver(r.resolver)}
	if r.cfg.Snapshotter != "" {
		opts = append(opts, containerd.WithPullSnapshotter(r.cfg.Snapshotter))
	}
	if _, err := r.client.Pull(ctx, name, opts...); err != nil {
		return false, &PullError{Image: name, Err: err}
	}
	return true, nil
}

func (r *Containerd) unpack(ctx context.Context, img containerd.Image) error {
	ok, err := img.IsUnpacked(ctx, r.cfg.Snapshotter)
	if err == nil && ok {
		return nil
	}
	if err := img.Unpack(ctx, r.cfg.Snapshotter); err != nil {
		return fmt.Errorf("unpack image %s: %w", img.Name(), err)
	}
	return nil
}

// getImage returns a present image by any form of its reference.
func (r *Containerd) getImage(ctx context.Context, ref string) (containerd.Image, error) {
	name, err := NormalizeImage(ref)
	if err != nil {
		return nil, err
	}
	img, err := r.client.GetImage(ctx, name)
	if errdefs.IsNotFound(err) {
		return nil, fmt.Errorf("image %s is not present (EnsureImage first): %w", name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", name, err)
	}
	return img, nil
}
