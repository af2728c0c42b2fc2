package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/kubelet/podenv"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

// defaultTerminationMessagePath is where a container writes its
// termination message unless its spec says otherwise.
const defaultTerminationMessagePath = "/dev/termination-log"

// containerConfig builds the runtime's configuration of one attempt of
// a container: environment and command with valueFrom and $(VAR)
// resolved, mounts, resources, log file and the labels a restarted
// kubelet reads back.
func (p *Provider) containerConfig(ctx context.Context, pod *corev1.Pod, c *corev1.Container, isInit bool, attempt int, podIP string) (runtime.ContainerConfig, error) {
	svcEnv, err := podenv.ServiceEnv(ctx, p.cfg.Client, pod)
	if err != nil {
		return runtime.ContainerConfig{}, err
	}
	ec := &podenv.Context{
		Pod: pod, PodIP: podIP, HostIP: p.cfg.NodeIP,
		Allocatable: p.allocatable(),
		Objects:     podenv.NewObjects(ctx, p.cfg.Client, pod.Namespace),
		ServiceEnv:  svcEnv,
	}
	env, envMap, err := podenv.ContainerEnv(c, ec)
	if err != nil {
		return runtime.ContainerConfig{}, err
	}
	user, err := containerUser(pod, c)
	if err != nil {
		return runtime.ContainerConfig{}, err
	}
	mounts, err := p.containerMounts(ctx, pod, c, attempt, envMap)
	if err != nil {
		return runtime.ContainerConfig{}, err
	}
	mapping := podenv.MappingFor(envMap)
	expandAll := func(in []string) []string {
		if in == nil {
			return nil
		}
		out := make([]string, len(in))
		for i, s := range in {
			out[i] = podenv.Expand(s, mapping)
		}
		return out
	}
	logPath := p.logPath(pod, c.Name, attempt)
	// A number reused after a container that never started: its log is
	// empty, and this attempt's must not follow anything else's.
	_ = os.Remove(logPath)
	labels := map[string]string{
		labelRestartCount: strconv.Itoa(attempt),
		labelImage:        c.Image,
	}
	if isInit {
		labels[labelInit] = "true"
	}
	return runtime.ContainerConfig{
		Name:       c.Name,
		Image:      c.Image,
		Command:    expandAll(c.Command),
		Args:       expandAll(c.Args),
		Env:        env,
		WorkingDir: c.WorkingDir,
		Mounts:     mounts,
		Resources:  runtime.ResourcesFor(c.Resources),
		LogPath:    logPath,
		TTY:        c.TTY,
		Stdin:      c.Stdin,
		StdinOnce:  c.StdinOnce,
		User:       user,
		Labels:     labels,
	}, nil
}

// containerMounts are the container's volume mounts (subPath and
// subPathExpr resolved), then the pod's hosts, resolv.conf and hostname
// files and the termination message file, parents before children.
func (p *Provider) containerMounts(ctx context.Context, pod *corev1.Pod, c *corev1.Container, attempt int, env map[string]string) ([]runtime.Mount, error) {
	var mounts []runtime.Mount
	has := map[string]bool{}
	for _, vm := range c.VolumeMounts {
		var vol *corev1.Volume
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == vm.Name {
				vol = &pod.Spec.Volumes[i]
			}
		}
		if vol == nil {
			return nil, fmt.Errorf("cannot find volume %q to mount into container %q", vm.Name, c.Name)
		}
		src, readOnly, err := p.volumeSource(ctx, pod, vol)
		if err != nil {
			return nil, err
		}
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			sub = podenv.Expand(vm.SubPathExpr, podenv.MappingFor(env))
		}
		if sub != "" {
			if err := podenv.ValidatePayloadPath(sub); err != nil {
				return nil, fmt.Errorf("volume mount %q subPath: %w", vm.Name, err)
			}
			src = filepath.Join(src, sub)
			if _, err := os.Lstat(src); os.IsNotExist(err) {
				if readOnly {
					return nil, fmt.Errorf("volume mount %q: subPath %q does not exist", vm.Name, sub)
				}
				if err := os.MkdirAll(src, 0o750); err != nil {
					return nil, err
				}
			}
		}
		mounts = append(mounts, runtime.Mount{HostPath: src, ContainerPath: vm.MountPath, ReadOnly: vm.ReadOnly || readOnly})
		has[filepath.Clean(vm.MountPath)] = true
	}
	dir := p.podDir(pod.UID)
	for target, file := range map[string]string{"/etc/hosts": hostsFile, "/etc/resolv.conf": resolvFile, "/etc/hostname": hostnameFile} {
		if !has[target] {
			mounts = append(mounts, runtime.Mount{HostPath: filepath.Join(dir, file), ContainerPath: target})
		}
	}
	path := c.TerminationMessagePath
	if path == "" {
		path = defaultTerminationMessagePath
	}
	if !has[filepath.Clean(path)] {
		file := p.terminationFile(pod.UID, c.Name, attempt)
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(file, nil, 0o666); err != nil {
			return nil, err
		}
		if err := os.Chmod(file, 0o666); err != nil {
			return nil, err
		}
		mounts = append(mounts, runtime.Mount{HostPath: file, ContainerPath: path})
	}
	slices.SortStableFunc(mounts, func(a, b runtime.Mount) int {
		return depth(a.ContainerPath) - depth(b.ContainerPath)
	})
	return mounts, nil
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

// containerUser is the runtime's user for the container's (or pod's)
// runAsUser and runAsGroup.
func containerUser(pod *corev1.Pod, c *corev1.Container) (string, error) {
	var uid, gid *int64
	var nonRoot *bool
	if sc := pod.Spec.SecurityContext; sc != nil {
		uid, gid, nonRoot = sc.RunAsUser, sc.RunAsGroup, sc.RunAsNonRoot
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = sc.RunAsGroup
		}
		if sc.RunAsNonRoot != nil {
			nonRoot = sc.RunAsNonRoot
		}
	}
	if nonRoot != nil && *nonRoot && uid != nil && *uid == 0 {
		return "", fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", formatPod(pod), c.Name)
	}
	switch {
	case uid == nil:
		return "", nil
	case gid == nil:
		return strconv.FormatInt(*uid, 10), nil
	}
	return fmt.Sprintf("%d:%d", *uid, *gid), nil
}

// podResources limits the pod's cgroup as a whole, as Kubernetes does
// for Guaranteed and Burstable pods: shares from the sum of cpu requests
// (or the largest init container's), quota and memory limit from the
// sums of limits when every container sets one. BestEffort pods get none.
func podResources(pod *corev1.Pod) *runtime.Resources {
	var sum, initMax runtime.Resources
	cpuLimited, memLimited := true, true
	for _, c := range pod.Spec.Containers {
		r := runtime.ResourcesFor(c.Resources)
		sum.CPURequestMilli += r.CPURequestMilli
		sum.CPULimitMilli += r.CPULimitMilli
		sum.MemoryLimitBytes += r.MemoryLimitBytes
		cpuLimited = cpuLimited && r.CPULimitMilli > 0
		memLimited = memLimited && r.MemoryLimitBytes > 0
	}
	for _, c := range pod.Spec.InitContainers {
		r := runtime.ResourcesFor(c.Resources)
		initMax.CPURequestMilli = max(initMax.CPURequestMilli, r.CPURequestMilli)
		initMax.CPULimitMilli = max(initMax.CPULimitMilli, r.CPULimitMilli)
		initMax.MemoryLimitBytes = max(initMax.MemoryLimitBytes, r.MemoryLimitBytes)
		cpuLimited = cpuLimited && r.CPULimitMilli > 0
		memLimited = memLimited && r.MemoryLimitBytes > 0
	}
	out := runtime.Resources{CPURequestMilli: max(sum.CPURequestMilli, initMax.CPURequestMilli)}
	if cpuLimited {
		out.CPULimitMilli = max(sum.CPULimitMilli, initMax.CPULimitMilli)
	}
	if memLimited {
		out.MemoryLimitBytes = max(sum.MemoryLimitBytes, initMax.MemoryLimitBytes)
	}
	if out == (runtime.Resources{}) {
		return nil
	}
	return &out
}
