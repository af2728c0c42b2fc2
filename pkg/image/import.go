package image

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/images"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/platforms"
)

// Namespace is the containerd namespace minik8s keeps its images and
// containers in.
const Namespace = "minik8s"

// LocalLabel marks an image that was built or imported on this node rather
// than pulled: there is no registry to pull it from again, so the kubelet
// treats it as present even under imagePullPolicy: Always (`image: busybox`
// with its :latest tag defaults to Always and must still run offline).
const LocalLabel = "minik8s.io/local"

// Import imports an image tarball (OCI layout or docker-archive, as `ctr
// image import` takes) into namespace, labels its images LocalLabel and
// unpacks them into containerd's default snapshotter. It returns the names
// of the images it imported; importing the same tarball again is harmless.
func Import(ctx context.Context, client *containerd.Client, namespace string, tarball io.Reader) ([]string, error) {
	ctx = namespaces.WithNamespace(ctx, namespace)
	imgs, err := client.Import(ctx, tarball)
	if err != nil {
		return nil, fmt.Errorf("import image: %w", err)
	}
	var names []string
	for _, img := range imgs {
		if img.Labels == nil {
			img.Labels = map[string]string{}
		}
		img.Labels[LocalLabel] = "true"
		img, err = client.ImageService().Update(ctx, img, "labels."+LocalLabel)
		if err != nil {
			return names, fmt.Errorf("import image %s: label: %w", img.Name, err)
		}
		if err := containerd.NewImage(client, img).Unpack(ctx, ""); err != nil {
			return names, fmt.Errorf("import image %s: unpack: %w", img.Name, err)
		}
		names = append(names, img.Name)
	}
	return names, nil
}

// Builtin is an image every node has without a registry.
type Builtin struct {
	Ref   string
	Build func(io.Writer) error
}

// Builtins are the images EnsureBuiltin provides: busybox (so manifests that
// say `image: busybox` run offline) and the pause image of pod sandboxes.
func Builtins() []Builtin {
	return []Builtin{{BusyboxRef, BuildBusybox}, {PauseRef, BuildPause}}
}

// EnsureBuiltin builds and imports the built-in images into the minik8s
// namespace of the containerd at containerdAddress, each only when it is
// missing or not unpacked.
func EnsureBuiltin(ctx context.Context, containerdAddress string) error {
	client, err := containerd.New(containerdAddress)
	if err != nil {
		return fmt.Errorf("built-in images: connect to containerd at %s: %w", containerdAddress, err)
	}
	defer client.Close()
	return EnsureBuiltinIn(ctx, client, Namespace)
}

// EnsureBuiltinIn is EnsureBuiltin with a client and a namespace.
func EnsureBuiltinIn(ctx context.Context, client *containerd.Client, namespace string) error {
	nsCtx := namespaces.WithNamespace(ctx, namespace)
	for _, b := range Builtins() {
		img, err := client.GetImage(nsCtx, b.Ref)
		switch {
		case err == nil:
			// Unpacked and with all its content: a layer blob removed
			// behind our back (ctr content rm) breaks exports and
			// re-unpacks, so such an image is imported again.
			unpacked, err := img.IsUnpacked(nsCtx, containerd.DefaultSnapshotter)
			complete, _, _, missing, cerr := images.Check(nsCtx, client.ContentStore(), img.Target(), platforms.Default())
			if err == nil && unpacked && cerr == nil && complete && len(missing) == 0 {
				continue
			}
		case !errdefs.IsNotFound(err):
			return fmt.Errorf("built-in image %s: %w", b.Ref, err)
		}
		var buf bytes.Buffer
		if err := b.Build(&buf); err != nil {
			return fmt.Errorf("built-in image %s: %w", b.Ref, err)
		}
		if _, err := Import(ctx, client, namespace, &buf); err != nil {
			return fmt.Errorf("built-in image %s: %w", b.Ref, err)
		}
	}
	return nil
}
