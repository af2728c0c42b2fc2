package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/moby/sys/mountinfo"

	"github.com/minik8s/minik8s/pkg/glusterfs"
	"github.com/minik8s/minik8s/pkg/image"
)

const (
	// storageMount is where a pod mounts the volume measured.
	storageMount = "/data"
	// podBusybox is the busybox binary of the busybox image.
	podBusybox = "/bin/busybox"
)

// storageRun measures the places of one run of `bench storage` on its
// cluster.
type storageRun struct {
	c       *podCluster
	cfg     StorageConfig
	busybox string // on the host
	setup   storageSetup
}

// measureNode runs the script on the host, in a directory of the node's
// root dir: the node's disk, without a container or a volume.
func (s *storageRun) measureNode(ctx context.Context) (StorageRow, error) {
	dir := filepath.Join(s.setup.nodeRoot, "node-disk")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return StorageRow{}, err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(s.cfg.Progress, "node disk: %d runs in %s\n", s.cfg.Runs, dir)
	args := append([]string{"sh", "-c", storageScript}, storageArgs(s.busybox, dir, s.cfg, "-")...)
	out, err := exec.CommandContext(ctx, s.busybox, args...).CombinedOutput()
	res, perr := parseStorageOutput(string(out), s.cfg.SizeMiB, s.cfg.Files)
	if perr != nil {
		return StorageRow{}, fmt.Errorf("node disk: %w (busybox sh: %v)", perr, err)
	}
	row, err := s.row(KeyStorageNode, "node disk", dir, res)
	if err != nil {
		return StorageRow{}, fmt.Errorf("node disk: %w", err)
	}
	return row, nil
}

func (s *storageRun) row(key, name, path string, res storageOutput) (StorageRow, error) {
	if len(res.runs) != s.cfg.Runs {
		return StorageRow{}, fmt.Errorf("%d runs reported, want %d", len(res.runs), s.cfg.Runs)
	}
	row := newStorageRow(key, name, path, res)
	reads := "O_DIRECT"
	if row.Reads == StorageReadsCached {
		reads = "through the page cache"
	}
	fmt.Fprintf(s.cfg.Progress, "%s: write %.1f MB/s, read %.1f MB/s (%s), %.0f file ops/s (medians of %d)\n",
		name, row.WriteMBps, row.ReadMBps, reads, row.FileOpsPerSec, len(row.Runs))
	return row, nil
}

// measureVolume creates the volume type's PersistentVolume and claim, if
// it has them, and a pod that runs the script on the volume; reads the
// results from the pod's termination message; and removes what it made,
// checking that the volume's directory went with it.
func (s *storageRun) measureVolume(ctx context.Context, v storageVolume) (_ StorageRow, err error) {
	client := s.c.client.CoreV1()
	src, pv, pvc := v.build(s.setup)
	var made storageObjects
	defer func() {
		if rerr := s.remove(ctx, made); rerr != nil {
			err = errors.Join(err, fmt.Errorf("clean up: %w", rerr))
		}
	}()
	if pv != nil {
		if _, err := client.PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			return StorageRow{}, fmt.Errorf("create persistentvolume %s: %w", pv.Name, err)
		}
		made.pv = pv.Name
	}
	if pvc != nil {
		if _, err := client.PersistentVolumeClaims(podNamespace).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			return StorageRow{}, fmt.Errorf("create persistentvolumeclaim %s: %w", pvc.Name, err)
		}
		made.pvc = pvc.Name
	}
	pod := storagePod("bench-storage-"+v.key, src, s.cfg)
	fmt.Fprintf(s.cfg.Progress, "%s: pod %s, %d runs\n", v.name, pod.Name, s.cfg.Runs)
	created, err := client.Pods(podNamespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return StorageRow{}, fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	made.pod = pod.Name
	made.podDir = filepath.Join(s.setup.nodeRoot, "pods", string(created.UID))

	var done *corev1.Pod
	err = s.c.waitUntil(ctx, s.cfg.PodTimeout, func() bool {
		obj, ok, _ := s.c.pods.GetStore().GetByKey(podNamespace + "/" + pod.Name)
		p, _ := obj.(*corev1.Pod)
		if ok && p.UID == created.UID && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
			done = p
			return true
		}
		return false
	})
	if err != nil {
		return StorageRow{}, fmt.Errorf("pod %s to finish: %w: %s", pod.Name, err, s.c.describe(pod.Name))
	}
	message := ""
	for _, cs := range done.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			message = t.Message
		}
	}

	// Where the data lived, and what to check is gone afterwards.
	path := filepath.Join(made.podDir, "volumes", "kubernetes.io~empty-dir", pod.Spec.Volumes[0].Name)
	if pvc != nil {
		got, err := client.PersistentVolumeClaims(podNamespace).Get(ctx, pvc.Name, metav1.GetOptions{})
		if err != nil {
			return StorageRow{}, fmt.Errorf("persistentvolumeclaim %s: %w", pvc.Name, err)
		}
		made.pv = got.Spec.VolumeName
		bound, err := client.PersistentVolumes().Get(ctx, got.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return StorageRow{}, fmt.Errorf("persistentvolume %s: %w", got.Spec.VolumeName, err)
		}
		switch {
		case bound.Spec.HostPath != nil:
			path = bound.Spec.HostPath.Path
		case bound.Spec.Local != nil:
			path = bound.Spec.Local.Path
		case bound.Spec.Glusterfs != nil:
			// The data lives in the volume's directory of the server's
			// brick; the node reaches it through its FUSE mount.
			gp, err := glusterfs.ParsePath(bound.Spec.Glusterfs.Path)
			if err != nil || gp.Dir == "" || s.setup.sharedBrick == "" {
				return StorageRow{}, fmt.Errorf("persistentvolume %s: glusterfs path %q is not a directory of the benchmark's server (%v)", bound.Name, bound.Spec.Glusterfs.Path, err)
			}
			path = filepath.Join(s.setup.sharedBrick, gp.Dir)
			made.mount = filepath.Join(nodeGlusterfsMounts(s.setup.nodeRoot), bound.Name)
		}
		made.pvDelete = bound.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete
	}
	made.dir = path

	res, perr := parseStorageOutput(message, s.cfg.SizeMiB, s.cfg.Files)
	if perr != nil || done.Status.Phase == corev1.PodFailed {
		return StorageRow{}, fmt.Errorf("pod %s: phase %s: %w", pod.Name, done.Status.Phase, errors.Join(perr, errors.New(s.c.describe(pod.Name))))
	}
	return s.row(v.key, v.name, path, res)
}

// storagePod runs the script once on the volume src, mounted at
// storageMount, and writes the results to its termination message.
func storagePod(name string, src corev1.VolumeSource, cfg StorageConfig) *corev1.Pod {
	command := append([]string{podBusybox, "sh", "-c", storageScript},
		storageArgs(podBusybox, storageMount, cfg, corev1.TerminationMessagePathDefault)...)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: podNamespace, Labels: storageLabels()},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "bench", Image: image.BusyboxRef, Command: command, ImagePullPolicy: corev1.PullIfNotPresent,
				VolumeMounts:             []corev1.VolumeMount{{Name: "data", MountPath: storageMount}},
				TerminationMessagePath:   corev1.TerminationMessagePathDefault,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: src}},
		},
	}
}

// storageObjects is what measureVolume made, for remove.
type storageObjects struct {
	pod, pvc, pv string
	// podDir is the pod's directory on the node, which the kubelet
	// removes last.
	podDir string
	// pvDelete: the volume goes with its claim (the node's local-path
	// reaper removes its directory, then it); otherwise the benchmark
	// deletes it and its directory.
	pvDelete bool
	// dir is the volume's directory on the node.
	dir string
	// mount is the node's FUSE mount of a shared volume, which the
	// kubelet unmounts once the pod's containers are gone.
	mount string
}

// remove deletes the pod and waits until the kubelet is done with it
// (the object goes at once, the pod having finished; the kubelet then
// removes its containers and its directory), then the claim, then the
// volume, and checks that the volume's directory is gone.
func (s *storageRun) remove(ctx context.Context, o storageObjects) error {
	client := s.c.client.CoreV1()
	var errs []error
	if o.pod != "" {
		grace := int64(1)
		err := client.Pods(podNamespace).Delete(ctx, o.pod, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s: %w", o.pod, err)
		}
		if err := s.c.waitUntil(ctx, 2*time.Minute, func() bool {
			_, ok, _ := s.c.pods.GetStore().GetByKey(podNamespace + "/" + o.pod)
			return !ok
		}); err != nil {
			return fmt.Errorf("pod %s deleted: %w", o.pod, err)
		}
		if err := pollPathGone(ctx, o.podDir); err != nil {
			return fmt.Errorf("pod %s removed by the kubelet: %w", o.pod, err)
		}
		// The kubelet unmounts a shared volume after its last pod, before
		// it removes the pod's directory.
		if o.mount != "" {
			if ok, err := glusterfs.IsMounted(o.mount); ok || err != nil {
				errs = append(errs, fmt.Errorf("the node's glusterfs mount %s is still there after its pod (%v)", o.mount, err))
			}
		}
	}
	if o.pvc != "" {
		if err := client.PersistentVolumeClaims(podNamespace).Delete(ctx, o.pvc, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete persistentvolumeclaim %s: %w", o.pvc, err)
		}
		if err := pollGone(ctx, func(ctx context.Context) error {
			_, err := client.PersistentVolumeClaims(podNamespace).Get(ctx, o.pvc, metav1.GetOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("persistentvolumeclaim %s gone: %w", o.pvc, err)
		}
	}
	if o.pv != "" {
		if !o.pvDelete {
			if err := client.PersistentVolumes().Delete(ctx, o.pv, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete persistentvolume %s: %w", o.pv, err)
			}
		}
		if err := pollGone(ctx, func(ctx context.Context) error {
			_, err := client.PersistentVolumes().Get(ctx, o.pv, metav1.GetOptions{})
			return err
		}); err != nil {
			errs = append(errs, fmt.Errorf("persistentvolume %s gone: %w", o.pv, err))
		}
		if !o.pvDelete && o.dir != "" {
			if err := os.RemoveAll(o.dir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if o.dir != "" {
		if _, err := os.Stat(o.dir); !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("the volume's directory %s is still there (stat: %v)", o.dir, err))
		}
	}
	return errors.Join(errs...)
}

// pollGone polls get, for up to two minutes, until it answers NotFound.
func pollGone(ctx context.Context, get func(context.Context) error) error {
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := get(ctx)
		switch {
		case apierrors.IsNotFound(err):
			return true, nil
		case err != nil:
			return false, err
		}
		return false, nil
	})
}

// pollPathGone polls, for up to two minutes, until path does not exist.
func pollPathGone(ctx context.Context, path string) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		_, err := os.Stat(path)
		return errors.Is(err, os.ErrNotExist), nil
	})
	if err != nil {
		return fmt.Errorf("%s still there: %w", path, err)
	}
	return nil
}

// removeAll deletes whatever pods, claims and volumes of the benchmark a
// failed run left, so that the node stops their containers before it
// stops; their directories go with the node's root dir.
func (s *storageRun) removeAll(ctx context.Context) error {
	client := s.c.client.CoreV1()
	sel := metav1.ListOptions{LabelSelector: podAppLabel + "=" + storageAppValue}
	grace := int64(1)
	var errs []error
	if err := client.Pods(podNamespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace}, sel); err != nil {
		errs = append(errs, fmt.Errorf("delete the pods: %w", err))
	} else if err := s.c.waitUntil(ctx, 2*time.Minute, func() bool {
		for _, key := range s.c.pods.GetStore().ListKeys() {
			if strings.HasPrefix(key, podNamespace+"/bench-storage-") {
				return false
			}
		}
		return true
	}); err != nil {
		errs = append(errs, fmt.Errorf("pods removed by the kubelet: %w", err))
	}
	if err := client.PersistentVolumeClaims(podNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		errs = append(errs, fmt.Errorf("delete the persistentvolumeclaims: %w", err))
	}
	if err := client.PersistentVolumes().DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		errs = append(errs, fmt.Errorf("delete the persistentvolumes: %w", err))
	}
	return errors.Join(errs...)
}

// sharedAddress is where the benchmark's GlusterFS server listens and
// what it publishes: the loopback, which the node's kubelet reaches, as
// it runs in this process, in the host's network namespace (the node's
// own namespace is for its pods). Only certificates of the cluster's CA
// get in (the node's, the provisioner's).
const sharedAddress = "127.0.0.1"

// nodeGlusterfsMounts is where the kubelet mounts glusterfs volumes, one
// per PersistentVolume (pkg/kubelet/local).
func nodeGlusterfsMounts(nodeRoot string) string {
	return filepath.Join(nodeRoot, "plugins", "kubernetes.io~glusterfs")
}

// mountsUnder are the mount points of type fstype in dir, at any depth,
// the deepest first. (Not glusterfs.Mounts: it filters the mount table
// with mountinfo.ParentsFilter, which keeps dir's parents rather than
// its children, so it finds none.)
func mountsUnder(dir, fstype string) ([]string, error) {
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	} else if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(filepath.Clean(dir)))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		if m.FSType == fstype {
			out = append(out, m.Mountpoint)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out, nil
}

// sharedPrograms find GlusterFS's server and FUSE client (a variable for
// the tests).
var sharedPrograms = []func() (string, error){glusterfs.FindServer, glusterfs.FindClient}

// sharedStorage is the shared file system (pkg/glusterfs) run for the
// benchmark as `minik8s up` runs it: glusterfsd, with its files and its
// brick (the data) in a directory made in the benchmark's --dir, so on
// the disk measured; the provisioner of the StorageClass "shared", with
// its own mount of the volume; the Service kube-system/glusterfs.
type sharedStorage struct {
	dir        string
	nodeMounts string // the node's glusterfs mount points
	cancel     context.CancelFunc
	done       chan error
}

// brick is the directory that holds the volumes' data (glusterfs's
// ServerConfig: Dir/brick).
func (sh *sharedStorage) brick() string { return filepath.Join(sh.dir, "brick") }

// startSharedStorage starts GlusterFS in a directory made in parent and
// returns once it provisions volumes and the nodes can find it. Without
// GlusterFS's programs, or where it cannot run, it returns no server and
// the reason; a server that was started is returned, even with an error,
// for its close.
func startSharedStorage(ctx context.Context, c *podCluster, parent string, log *slog.Logger, progress io.Writer) (_ *sharedStorage, reason string, _ error) {
	for _, find := range sharedPrograms {
		if _, err := find(); err != nil {
			return nil, "GlusterFS is not installed: " + err.Error(), nil
		}
	}
	parent, err := filepath.Abs(parent)
	if err != nil {
		return nil, "", err
	}
	if strings.ContainsAny(parent, " \t\n") {
		return nil, fmt.Sprintf("GlusterFS cannot keep its brick in %q: its volume files cannot name a path with white space", parent), nil
	}
	dir, err := os.MkdirTemp(parent, "minik8s-bench-glusterfs-")
	if err != nil {
		return nil, "", err
	}
	// Not stopped by the run's cancellation: the provisioner deletes
	// the claims' directories during the clean-up.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	sh := &sharedStorage{dir: dir, nodeMounts: nodeGlusterfsMounts(c.rootDir), cancel: cancel, done: make(chan error, 1)}
	ready := make(chan struct{})
	go func() {
		sh.done <- glusterfs.Run(runCtx, glusterfs.Config{
			Client: c.client, Dir: dir, Address: sharedAddress, Port: -1, Bundle: c.bundle,
			Advertise: netip.MustParseAddr(sharedAddress), Logger: log.With("component", "glusterfs"),
			Ready: func() { close(ready) },
		})
	}()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case <-ready:
	case err := <-sh.done:
		sh.done <- err // for close
		return sh, "", fmt.Errorf("GlusterFS stopped before it was ready: %w", err)
	case <-timer.C:
		return sh, "", errors.New("GlusterFS not ready after a minute")
	case <-ctx.Done():
		return sh, "", ctx.Err()
	}
	// Ready is before the Service is published; the kubelet reads its
	// Endpoints for the server's address.
	var port int32
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		ep, err := c.client.CoreV1().Endpoints(glusterfs.EndpointsNamespace).Get(ctx, glusterfs.EndpointsName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, ss := range ep.Subsets {
			if len(ss.Addresses) > 0 && len(ss.Ports) > 0 {
				port = ss.Ports[0].Port
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return sh, "", fmt.Errorf("endpoints %s/%s published: %w", glusterfs.EndpointsNamespace, glusterfs.EndpointsName, err)
	}
	fmt.Fprintf(progress, "started GlusterFS: glusterfsd on %s:%d, brick %s (stopped at the end)\n", sharedAddress, port, sh.brick())
	return sh, "", nil
}

// close unmounts whatever node mounts are left (the kubelet unmounts
// each after its last pod: one left is an error), stops the server, the
// provisioner and its mount, and removes the directory, brick included,
// once nothing is mounted in it.
func (sh *sharedStorage) close(ctx context.Context) error {
	var errs []error
	unmountLeft := func(dir, whose string) bool {
		left, err := mountsUnder(dir, glusterfs.FSType)
		if err != nil {
			errs = append(errs, err)
			return false
		}
		ok := true
		for _, m := range left {
			if err := glusterfs.Unmount(m); err != nil {
				errs = append(errs, fmt.Errorf("%s glusterfs mount %s left behind: %w", whose, m, err))
				ok = false
				continue
			}
			errs = append(errs, fmt.Errorf("%s glusterfs mount %s left behind (unmounted now)", whose, m))
		}
		return ok
	}
	unmountLeft(sh.nodeMounts, "the node's")
	sh.cancel()
	select {
	case err := <-sh.done:
		if err != nil {
			errs = append(errs, fmt.Errorf("glusterfs: %w", err))
		}
	case <-ctx.Done():
		return errors.Join(append(errs, fmt.Errorf("glusterfs did not stop: %w", ctx.Err()))...)
	}
	// Never RemoveAll through a mount: the provisioner's is unmounted
	// as Run returns.
	if !unmountLeft(sh.dir, "the provisioner's") {
		return errors.Join(append(errs, fmt.Errorf("%s not removed: something is still mounted in it", sh.dir))...)
	}
	if err := os.RemoveAll(sh.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
