package runtime

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// CreateContainer creates a container in a running sandbox: it joins the
// sandbox's network, IPC and UTS namespaces and gets its own cgroup under
// the pod's.
func (r *Containerd) CreateContainer(ctx context.Context, sandbox *Sandbox, cfg ContainerConfig) (_ string, retErr error) {
	ctx = r.nsCtx(ctx)
	if sandbox == nil || sandbox.ID == "" {
		return "", errors.New("create container: no sandbox")
	}
	if cfg.Name == "" {
		return "", errors.New("create container: no name")
	}
	sb, err := r.client.LoadContainer(ctx, sandbox.ID)
	if err != nil {
		return "", fmt.Errorf("create container %s: sandbox %s: %w", cfg.Name, sandbox.ID, err)
	}
	sbLabels, err := sb.Labels(ctx)
	if err != nil {
		return "", fmt.Errorf("create container %s: sandbox %s: %w", cfg.Name, sandbox.ID, err)
	}
	if sbLabels[LabelKind] != kindSandbox {
		return "", fmt.Errorf("create container %s: %s is not a sandbox", cfg.Name, sandbox.ID)
	}
	pod := sbLabels[LabelPodNamespace] + "/" + sbLabels[LabelPodName]
	sbTask, err := sb.Task(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("create container %s in %s: sandbox %s is not running: %w", cfg.Name, pod, sandbox.ID, err)
	}
	if st, err := sbTask.Status(ctx); err != nil || st.Status != containerd.Running {
		return "", fmt.Errorf("create container %s in %s: sandbox %s is not running", cfg.Name, pod, sandbox.ID)
	}
	nsPath := func(ns string) string { return fmt.Sprintf("/proc/%d/ns/%s", sbTask.Pid(), ns) }

	img, err := r.getImage(ctx, cfg.Image)
	if err != nil {
		return "", fmt.Errorf("create container %s in %s: %w", cfg.Name, pod, err)
	}
	imgSpec, err := img.Spec(ctx)
	if err != nil {
		return "", fmt.Errorf("create container %s in %s: image config: %w", cfg.Name, pod, err)
	}
	args := commandLine(imgSpec.Config.Entrypoint, imgSpec.Config.Cmd, cfg.Command, cfg.Args)
	if len(args) == 0 {
		return "", fmt.Errorf("create container %s in %s: no command: the image %s has no entrypoint or cmd", cfg.Name, pod, img.Name())
	}

	id := newID()
	cgroup := sbLabels[labelCgroupParent] + "/" + id
	labels, err := r.mergeLabels(map[string]string{
		LabelKind:          kindContainer,
		LabelSandboxID:     sandbox.ID,
		LabelPodNamespace:  sbLabels[LabelPodNamespace],
		LabelPodName:       sbLabels[LabelPodName],
		LabelPodUID:        sbLabels[LabelPodUID],
		LabelContainerName: cfg.Name,
		labelCgroup:        cgroup,
		labelLogPath:       cfg.LogPath,
		labelTTY:           strconv.FormatBool(cfg.TTY),
		labelStdin:         strconv.FormatBool(cfg.Stdin),
		labelStdinOnce:     strconv.FormatBool(cfg.StdinOnce),
		labelImageRef:      img.Name(),
		labelImageID:       img.Name() + "@" + img.Target().Digest.String(),
	}, cfg.Labels)
	if err != nil {
		return "", fmt.Errorf("create container %s in %s: %w", cfg.Name, pod, err)
	}

	env := cfg.Env
	if !hasEnv(env, "HOSTNAME") && sbLabels[labelHostname] != "" {
		env = append([]string{"HOSTNAME=" + sbLabels[labelHostname]}, env...)
	}
	quota, period := cfg.Resources.Quota()
	opts := []oci.SpecOpts{
		oci.WithImageConfig(img),
		oci.WithProcessArgs(args...),
		oci.WithEnv(env),
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.IPCNamespace, Path: nsPath("ipc")}),
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.UTSNamespace, Path: nsPath("uts")}),
		oci.WithCgroup(cgroup),
		oci.WithMounts([]specs.Mount{cgroupMount}),
		oci.WithCPUShares(cfg.Resources.Shares()),
		// One shim for the pod: the container's task joins the sandbox's.
		oci.WithAnnotations(map[string]string{annotationShimGroup: sandbox.ID}),
	}
	if netns := sbLabels[labelNetNS]; netns != "" {
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: netns}))
	} else {
		opts = append(opts, r.hostNetNS())
	}
	switch {
	case cfg.TargetPIDOf != "":
		pidns, err := r.targetPIDNamespace(ctx, sandbox.ID, cfg.TargetPIDOf)
		if err != nil {
			return "", fmt.Errorf("create container %s in %s: %w", cfg.Name, pod, err)
		}
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.PIDNamespace, Path: pidns}))
	case sbLabels[labelHostPID] == "true":
		opts = append(opts, oci.WithHostNamespace(specs.PIDNamespace))
	}
	if quota > 0 {
		opts = append(opts, oci.WithCPUCFS(quota, period))
	}
	if cfg.Resources.MemoryLimitBytes > 0 {
		opts = append(opts, oci.WithMemoryLimit(uint64(cfg.Resources.MemoryLimitBytes)))
	}
	if cfg.WorkingDir != "" {
		opts = append(opts, oci.WithProcessCwd(cfg.WorkingDir))
	}
	if cfg.TTY {
		opts = append(opts, oci.WithTTY)
	}
	var user ProcessUser
	secOpts, err := securityOpts(cfg, &user)
	if err != nil {
		return "", fmt.Errorf("create container %s in %s: %w", cfg.Name, pod, err)
	}
	opts = append(opts, secOpts...)
	if len(cfg.Mounts) > 0 {
		mounts := make([]specs.Mount, 0, len(cfg.Mounts))
		for _, m := range cfg.Mounts {
			mode := "rw"
			if m.ReadOnly {
				mode = "ro"
			}
			mounts = append(mounts, specs.Mount{Type: "bind", Source: m.HostPath, Destination: m.ContainerPath, Options: []string{"rbind", "rprivate", mode}})
		}
		opts = append(opts, oci.WithMounts(mounts))
	}

	if _, err := r.client.NewContainer(ctx, id,
		containerd.WithImage(img),
		containerd.WithImageStopSignal(img, "SIGTERM"),
		containerd.WithSnapshotter(r.cfg.Snapshotter),
		containerd.WithNewSnapshot(id, img),
		containerd.WithNewSpec(opts...),
		containerd.WithContainerLabels(labels),
		withUserLabel(&user),
	); err != nil {
		// A failed NewContainer leaves the snapshot it prepared.
		_ = r.client.SnapshotService(r.snapshotter()).Remove(ctx, id)
		return "", fmt.Errorf("create container %s in %s: %w", cfg.Name, pod, err)
	}
	return id, nil
}

// targetPIDNamespace is the process namespace of the running container
// id of sandbox sandboxID, for another container to join: its task's
// /proc/<pid>/ns/pid, as the CRI plugin joins a target's.
func (r *Containerd) targetPIDNamespace(ctx context.Context, sandboxID, id string) (string, error) {
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return "", fmt.Errorf("target container %s: %w", id, err)
	}
	labels, err := c.Labels(ctx)
	if err != nil {
		return "", fmt.Errorf("target container %s: %w", id, err)
	}
	if labels[LabelKind] != kindContainer || labels[LabelSandboxID] != sandboxID {
		return "", fmt.Errorf("target container %s is not a container of sandbox %s", id, sandboxID)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("target container %s is not running: %w", id, err)
	}
	if st, err := task.Status(ctx); err != nil || st.Status != containerd.Running {
		return "", fmt.Errorf("target container %s is not running", id)
	}
	return fmt.Sprintf("/proc/%d/ns/pid", task.Pid()), nil
}

func (r *Containerd) snapshotter() string {
	if r.cfg.Snapshotter != "" {
		return r.cfg.Snapshotter
	}
	return containerd.DefaultSnapshotter
}

// annotationShimGroup groups tasks in one runc v2 shim: the shim started
// for the first task whose OCI spec names a group serves every later task
// of that group, and exits with the last of them. Every task of a pod
// names its sandbox, as the CRI plugin does, so a container's start does
// not start a shim process of its own.
const annotationShimGroup = "io.containerd.runc.v2.group"

// cgroupMount shows a container its own cgroup, read-only, at
// /sys/fs/cgroup (as Docker and the CRI do), so it can read its limits.
var cgroupMount = specs.Mount{
	Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup",
	Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"},
}

// commandLine combines the image's entrypoint and cmd with a container's
// command and args as Kubernetes does.
func commandLine(entrypoint, cmd, command, args []string) []string {
	switch {
	case len(command) > 0:
		return append(append([]string{}, command...), args...)
	case len(args) > 0:
		return append(append([]string{}, entrypoint...), args...)
	default:
		return append(append([]string{}, entrypoint...), cmd...)
	}
}

func hasEnv(env []string, name string) bool {
	for _, e := range env {
		if strings.HasPrefix(e, name+"=") {
			return true
		}
	}
	return false
}

// StartContainer starts a created container, copying its output to its log
// file, and watches it for exit.
func (r *Containerd) StartContainer(ctx context.Context, id string) error {
	ctx = r.nsCtx(ctx)
	unlock := r.locks.lock(id)
	defer unlock()
	container, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return fmt.Errorf("start container %s: %w", id, err)
	}
	labels, err := container.Labels(ctx)
	if err != nil {
		return fmt.Errorf("start container %s: %w", id, err)
	}
	if labels[LabelKind] != kindContainer {
		return fmt.Errorf("start container %s: not a container of a pod", id)
	}
	if labels[labelStartedAt] != "" {
		return fmt.Errorf("start container %s: it already ran; create a new one", id)
	}
	tty := labels[labelTTY] == "true"
	stdin := labels[labelStdin] == "true"
	logPath := labels[labelLogPath]

	var tio *taskIO
	creator := cio.NullIO
	if logPath != "" {
		creator = func(cid string) (cio.IO, error) {
			fifos, err := cio.NewFIFOSetInDir(r.cfg.FIFODir, cid, tty)
			if err != nil {
				return nil, err
			}
			tio, err = r.openTaskIO(fifos, logPath, stdin)
			if err != nil {
				_ = fifos.Close()
				return nil, err
			}
			return tio, nil
		}
	}
	task, err := container.NewTask(ctx, creator)
	if err != nil {
		if tio != nil {
			tio.close()
		}
		return fmt.Errorf("start container %s: %w", id, err)
	}
	if tio != nil {
		r.mu.Lock()
		r.ios[id] = tio
		r.mu.Unlock()
	}
	if err := task.Start(ctx); err != nil {
		_, _ = task.Delete(context.WithoutCancel(ctx), containerd.WithProcessKill)
		r.dropIO(id)
		return fmt.Errorf("start container %s: %w", id, err)
	}
	if _, err := container.SetLabels(ctx, map[string]string{labelStartedAt: time.Now().UTC().Format(time.RFC3339Nano)}); err != nil {
		return fmt.Errorf("start container %s: %w", id, err)
	}
	r.watch(id, task)
	return nil
}

// StopContainer stops a container with its stop signal, then SIGKILL once
// grace has passed, and records its exit.
func (r *Containerd) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	ctx = r.nsCtx(ctx)
	container, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	task, err := container.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	st, err := task.Status(ctx)
	if err != nil {
		return fmt.Errorf("stop container %s: %w", id, ignoreNotFound(err))
	}
	if st.Status == containerd.Running || st.Status == containerd.Paused || st.Status == containerd.Pausing {
		exitC, err := task.Wait(ctx)
		if err != nil {
			return fmt.Errorf("stop container %s: %w", id, err)
		}
		exited := false
		if grace > 0 {
			sig, err := containerd.GetStopSignal(ctx, container, syscall.SIGTERM)
			if err != nil {
				sig = syscall.SIGTERM
			}
			if err := task.Kill(ctx, sig); err != nil && !errdefs.IsNotFound(err) {
				return fmt.Errorf("stop container %s: signal %v: %w", id, sig, err)
			}
			timer := time.NewTimer(grace)
			select {
			case <-exitC:
				exited = true
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				return fmt.Errorf("stop container %s: %w", id, ctx.Err())
			}
			timer.Stop()
		}
		if !exited {
			if err := task.Kill(ctx, syscall.SIGKILL); err != nil && !errdefs.IsNotFound(err) {
				return fmt.Errorf("stop container %s: kill: %w", id, err)
			}
			select {
			case <-exitC:
			case <-ctx.Done():
				return fmt.Errorf("stop container %s: %w", id, ctx.Err())
			}
		}
	}
	if err := r.reap(ctx, id); err != nil {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	return nil
}

// RemoveContainer kills a container if it runs and removes it with its
// root filesystem.
func (r *Containerd) RemoveContainer(ctx context.Context, id string) error {
	ctx = r.nsCtx(ctx)
	unlock := r.locks.lock(id)
	defer unlock()
	container, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		r.dropIO(id)
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	if err := r.killAndRemove(ctx, container); err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	return nil
}

// Stats reads a container's cgroup, or for a sandbox the pod's cgroup
// (which holds all its containers').
func (r *Containerd) Stats(ctx context.Context, id string) (*Stats, error) {
	ctx = r.nsCtx(ctx)
	container, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("stats of %s: %w", id, err)
	}
	labels, err := container.Labels(ctx)
	if err != nil {
		return nil, fmt.Errorf("stats of %s: %w", id, err)
	}
	cgroup := labels[labelCgroup]
	if labels[LabelKind] == kindSandbox {
		cgroup = labels[labelCgroupParent]
	}
	if cgroup == "" {
		return nil, fmt.Errorf("stats of %s: no cgroup", id)
	}
	st, err := r.cg.readStats(cgroup)
	if err != nil {
		return nil, fmt.Errorf("stats of %s (is it running?): %w", id, err)
	}
	return st, nil
}
