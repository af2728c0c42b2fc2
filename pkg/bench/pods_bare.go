package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/images"
	"github.com/containerd/containerd/images/archive"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/oci"
	"github.com/containerd/platforms"

	"github.com/minik8s/minik8s/pkg/image"
)

// bareEnv runs the benchmark's image straight on containerd, without a
// kubelet, in a containerd namespace of its own holding a copy of the image
// (unpacked, so a start only prepares a snapshot, as a pod's does).
type bareEnv struct {
	client  *containerd.Client
	address string
	ns      string
	ref     string
}

// newBareEnv creates the namespace and copies the image into it from
// minik8s' namespace (export, import, unpack; the blobs themselves are
// shared by containerd).
func newBareEnv(ctx context.Context, client *containerd.Client, address, ref, ns string) (_ *bareEnv, err error) {
	b := &bareEnv{client: client, address: address, ns: ns, ref: ref}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close(context.WithoutCancel(ctx)))
		}
	}()
	if err := client.NamespaceService().Create(namespaces.WithNamespace(ctx, ns), ns, map[string]string{"minik8s.io/bench": "pods"}); err != nil {
		return b, fmt.Errorf("containerd namespace %s: %w", ns, err)
	}
	var tarball bytes.Buffer
	src := namespaces.WithNamespace(ctx, image.Namespace)
	if err := client.Export(src, &tarball, archive.WithImage(client.ImageService(), ref), archive.WithPlatform(platforms.DefaultStrict())); err != nil {
		return b, fmt.Errorf("export %s from namespace %s: %w", ref, image.Namespace, err)
	}
	if _, err := image.Import(ctx, client, ns, &tarball); err != nil {
		return b, fmt.Errorf("copy %s into namespace %s: %w", ref, ns, err)
	}
	return b, nil
}

// start is what `ctr run -d IMAGE ID sleep 3600` does, through the client
// library: a container with a new snapshot of the image and a spec from its
// config, a task with no I/O, started; it returns once the task reports
// running.
func (b *bareEnv) start(ctx context.Context, id string) error {
	ctx = namespaces.WithNamespace(ctx, b.ns)
	img, err := b.client.GetImage(ctx, b.ref)
	if err != nil {
		return err
	}
	ct, err := b.client.NewContainer(ctx, id,
		containerd.WithImage(img),
		containerd.WithNewSnapshot(id, img),
		containerd.WithNewSpec(oci.WithImageConfig(img), oci.WithProcessArgs(podCommand...)),
	)
	if err != nil {
		return fmt.Errorf("container %s: %w", id, err)
	}
	task, err := ct.NewTask(ctx, cio.NullIO)
	if err != nil {
		return fmt.Errorf("task %s: %w", id, err)
	}
	if err := task.Start(ctx); err != nil {
		return fmt.Errorf("start task %s: %w", id, err)
	}
	st, err := task.Status(ctx)
	if err != nil {
		return fmt.Errorf("task %s status: %w", id, err)
	}
	if st.Status != containerd.Running {
		return fmt.Errorf("task %s is %s after its start, not running", id, st.Status)
	}
	return nil
}

// ctrRun runs the ctr binary: `ctr run -d` returns once the task started.
func (b *bareEnv) ctrRun(ctx context.Context, ctr, id string) error {
	args := append([]string{"--address", b.address, "--namespace", b.ns, "run", "-d", b.ref, id}, podCommand...)
	out, err := exec.CommandContext(ctx, ctr, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", ctr, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// close removes everything in the namespace (tasks, containers with their
// snapshots, the image and what it references) and the namespace itself.
func (b *bareEnv) close(ctx context.Context) error {
	ctx = namespaces.WithNamespace(ctx, b.ns)
	var errs []error
	cs, err := b.client.Containers(ctx)
	if err != nil {
		return fmt.Errorf("list containers of namespace %s: %w", b.ns, err)
	}
	for _, ct := range cs {
		errs = append(errs, removeContainer(ctx, ct))
	}
	is := b.client.ImageService()
	imgs, err := is.List(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	for i, img := range imgs {
		var opts []images.DeleteOpt
		if i == len(imgs)-1 {
			opts = append(opts, images.SynchronousDelete()) // garbage-collect now: content and snapshots go too
		}
		if err := is.Delete(ctx, img.Name, opts...); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete image %s: %w", img.Name, err))
		}
	}
	if err := b.client.NamespaceService().Delete(ctx, b.ns); err != nil && !errdefs.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete containerd namespace %s: %w", b.ns, err))
	}
	errs = append(errs, removeNamespaceCgroups(cgroupRoot, b.ns))
	return errors.Join(errs...)
}

// cgroupRoot is where the cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// removeNamespaceCgroups removes the cgroup containerd's default spec puts
// a namespace's containers under (cgroupsPath /<namespace>/<id>): runc
// removes each container's, never the namespace's. It looks in the unified
// hierarchy (cgroup v2) and in each of root's v1 hierarchies; a cgroup that
// still holds anything is not removed (rmdir fails) and is reported.
func removeNamespaceCgroups(root, ns string) error {
	dirs := []string{filepath.Join(root, ns)}
	entries, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("cgroups of namespace %s: %w", ns, err)
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != ns {
			dirs = append(dirs, filepath.Join(root, e.Name(), ns))
		}
	}
	var errs []error
	for _, d := range dirs {
		if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// removeContainer kills and deletes the container's task, if any, then the
// container and its snapshot.
func removeContainer(ctx context.Context, ct containerd.Container) error {
	if task, err := ct.Task(ctx, nil); err == nil {
		if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("delete task %s: %w", ct.ID(), err)
		}
	} else if !errdefs.IsNotFound(err) {
		return fmt.Errorf("task of %s: %w", ct.ID(), err)
	}
	if err := ct.Delete(ctx, containerd.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("delete container %s: %w", ct.ID(), err)
	}
	return nil
}
