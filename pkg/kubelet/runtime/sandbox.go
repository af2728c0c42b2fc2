package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// netnsPath is where a sandbox's network namespace is bound.
func (r *Containerd) netnsPath(sandboxID string) string {
	return filepath.Join(r.cfg.NetNSDir, "minik8s-"+sandboxID)
}

// hostNetNS is the network namespace of a hostNetwork pod's sandbox and
// containers: the node's (Config.HostNetNS), else containerd's own.
func (r *Containerd) hostNetNS() oci.SpecOpts {
	if r.cfg.HostNetNS != "" {
		return oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: r.cfg.HostNetNS})
	}
	return oci.WithHostNamespace(specs.NetworkNamespace)
}

// CreateSandbox starts a pod's pause container in new network, IPC and UTS
// namespaces. The network namespace is created first and bound under
// NetNSDir, so it outlives the pause process for CNI DEL; AttachNetwork
// runs on it while the pause container is created and started. The
// pause container's task starts the pod's shim, which its containers'
// tasks share (annotationShimGroup).
func (r *Containerd) CreateSandbox(ctx context.Context, cfg SandboxConfig) (created *Sandbox, retErr error) {
	ctx = r.nsCtx(ctx)
	if cfg.UID == "" {
		return nil, errors.New("create sandbox: pod UID is required")
	}
	pod := cfg.Namespace + "/" + cfg.Name
	if _, err := r.EnsureImage(ctx, r.cfg.PauseImage, corev1.PullIfNotPresent); err != nil {
		return nil, fmt.Errorf("create sandbox for %s: pause image: %w", pod, err)
	}
	img, err := r.getImage(ctx, r.cfg.PauseImage)
	if err != nil {
		return nil, fmt.Errorf("create sandbox for %s: %w", pod, err)
	}
	hostname := cfg.Hostname
	if hostname == "" {
		hostname = cfg.Name
	}
	if len(hostname) > 63 {
		hostname = hostname[:63]
	}
	if cfg.HostNetwork {
		if hostname, err = os.Hostname(); err != nil {
			return nil, fmt.Errorf("create sandbox for %s: %w", pod, err)
		}
	}
	parent := cfg.CgroupParent
	if parent == "" {
		parent = r.cfg.CgroupRoot + "/pod" + cfg.UID
	}
	id := newID()
	netns := r.netnsPath(id)
	if cfg.HostNetwork {
		netns = ""
	}
	labels, err := r.mergeLabels(map[string]string{
		LabelKind:         kindSandbox,
		LabelPodNamespace: cfg.Namespace,
		LabelPodName:      cfg.Name,
		LabelPodUID:       cfg.UID,
		labelNetNS:        netns,
		labelHostname:     hostname,
		labelCgroupParent: parent,
		labelCgroup:       parent + "/" + id,
		labelImageRef:     img.Name(),
		labelImageID:      img.Name() + "@" + img.Target().Digest.String(),
		labelHostPID:      strconv.FormatBool(cfg.HostPID),
	}, cfg.Labels)
	if err != nil {
		return nil, fmt.Errorf("create sandbox for %s: %w", pod, err)
	}

	defer func() {
		if retErr != nil {
			ctx := context.WithoutCancel(ctx)
			_ = r.RemoveSandbox(ctx, id)
			_ = r.cg.removeCgroup(parent)
		}
	}()
	if cfg.Resources != nil {
		if err := r.cg.setPodResources(parent, *cfg.Resources); err != nil {
			return nil, fmt.Errorf("create sandbox for %s: %w", pod, err)
		}
	}
	specOpts := []oci.SpecOpts{
		oci.WithImageConfig(img),
		oci.WithCgroup(parent + "/" + id),
		oci.WithCPUShares(minShares),
		oci.WithAnnotations(map[string]string{annotationShimGroup: id}),
	}
	if cfg.HostNetwork {
		specOpts = append(specOpts, r.hostNetNS(), oci.WithHostNamespace(specs.UTSNamespace))
	} else {
		if err := createNetNS(netns); err != nil {
			return nil, fmt.Errorf("create sandbox for %s: %w", pod, err)
		}
		specOpts = append(specOpts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: netns}), oci.WithHostname(hostname))
		if cfg.AttachNetwork != nil {
			// The pod network and the pause container are set up side by
			// side: they meet only in the namespace, which exists now.
			attached := make(chan error, 1)
			go func() { attached <- cfg.AttachNetwork(ctx, id, netns) }()
			defer func() {
				// Also when the pause container failed: the sandbox is
				// removed only once the attachment is over.
				if err := <-attached; err != nil && retErr == nil {
					created, retErr = nil, fmt.Errorf("create sandbox for %s: attach network: %w", pod, err)
				}
			}()
		}
	}
	if cfg.HostIPC {
		specOpts = append(specOpts, oci.WithHostNamespace(specs.IPCNamespace))
	}
	if cfg.HostPID {
		specOpts = append(specOpts, oci.WithHostNamespace(specs.PIDNamespace))
	}

	container, err := r.client.NewContainer(ctx, id,
		containerd.WithImage(img),
		containerd.WithImageStopSignal(img, "SIGTERM"),
		containerd.WithSnapshotter(r.cfg.Snapshotter),
		containerd.WithNewSnapshot(id, img),
		containerd.WithNewSpec(specOpts...),
		containerd.WithContainerLabels(labels),
	)
	if err != nil {
		return nil, fmt.Errorf("create sandbox for %s: %w", pod, err)
	}
	task, err := container.NewTask(ctx, cio.NullIO)
	if err != nil {
		return nil, fmt.Errorf("create sandbox for %s: %w", pod, err)
	}
	if err := task.Start(ctx); err != nil {
		return nil, fmt.Errorf("start sandbox for %s: %w", pod, err)
	}
	if _, err := container.SetLabels(ctx, map[string]string{labelStartedAt: time.Now().UTC().Format(time.RFC3339Nano)}); err != nil {
		return nil, fmt.Errorf("start sandbox for %s: %w", pod, err)
	}
	r.watch(id, task)
	return &Sandbox{ID: id, NetNSPath: netns, Pid: task.Pid(), CgroupParent: parent}, nil
}

// RemoveSandbox kills and removes a sandbox, every container still in it,
// its network namespace and the pod's cgroup.
func (r *Containerd) RemoveSandbox(ctx context.Context, id string) error {
	ctx = r.nsCtx(ctx)
	cs, err := r.client.ContainerService().List(ctx, fmt.Sprintf("labels.%q==%s", LabelSandboxID, id))
	if err != nil {
		return fmt.Errorf("remove sandbox %s: %w", id, err)
	}
	var errs []error
	for _, c := range cs {
		if err := r.RemoveContainer(ctx, c.ID); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("remove sandbox %s: %w", id, errors.Join(errs...))
	}

	unlock := r.locks.lock(id)
	defer unlock()
	parent := ""
	container, err := r.client.LoadContainer(ctx, id)
	switch {
	case errdefs.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("remove sandbox %s: %w", id, err)
	default:
		labels, err := container.Labels(ctx)
		if err != nil {
			return fmt.Errorf("remove sandbox %s: %w", id, err)
		}
		if labels[LabelKind] != kindSandbox {
			return fmt.Errorf("remove sandbox %s: it is not a sandbox", id)
		}
		parent = labels[labelCgroupParent]
		if err := r.killAndRemove(ctx, container); err != nil {
			return fmt.Errorf("remove sandbox %s: %w", id, err)
		}
	}
	if err := removeNetNS(r.netnsPath(id)); err != nil {
		return fmt.Errorf("remove sandbox %s: %w", id, err)
	}
	if parent != "" {
		if err := r.cg.removeCgroup(parent); err != nil {
			return fmt.Errorf("remove sandbox %s: %w", id, err)
		}
	}
	return nil
}

// killAndRemove SIGKILLs a container's task if it runs, deletes the task,
// then the container and its snapshot. The caller holds the ID's lock.
func (r *Containerd) killAndRemove(ctx context.Context, container containerd.Container) error {
	task, err := container.Task(ctx, nil)
	switch {
	case errdefs.IsNotFound(err):
	case err != nil:
		return err
	default:
		st, err := task.Status(ctx)
		if err != nil && !errdefs.IsNotFound(err) {
			return err
		}
		if err == nil && st.Status != containerd.Stopped && st.Status != containerd.Created {
			exitC, err := task.Wait(ctx)
			if err != nil {
				return err
			}
			if err := task.Kill(ctx, syscall.SIGKILL); err != nil && !errdefs.IsNotFound(err) {
				return fmt.Errorf("kill: %w", err)
			}
			select {
			case <-exitC:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		// A task created but never started (its start was cancelled: the
		// pod went while its sandbox was being made) is killed by the
		// delete: a plain delete refuses it ("task must be stopped").
		if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("delete task: %w", err)
		}
	}
	r.dropIO(container.ID())
	if err := container.Delete(ctx, containerd.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("delete container: %w", err)
	}
	return nil
}
