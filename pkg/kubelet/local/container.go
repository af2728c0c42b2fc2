package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

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
	// As the kubelet: the image's user is checked first.
	if err := p.verifyRunAsNonRoot(ctx, pod, c); err != nil {
		return runtime.ContainerConfig{}, err
	}
	env, envMap, err := podenv.ContainerEnv(c, ec)
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
		labelResources:    encodeResources(c.Resources),
	}
	if isInit {
		labels[labelInit] = "true"
	}
	cfg := runtime.ContainerConfig{
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
		Labels:     labels,
	}
	if err := p.setSecurity(ctx, &cfg, pod, c); err != nil {
		return runtime.ContainerConfig{}, err
	}
	return cfg, nil
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
			if vol.Image != nil {
				// An image's symlinks are the image's: resolved inside
				// it, never to the node's files.
				if src, err = securejoin.SecureJoin(src, sub); err != nil {
					return nil, fmt.Errorf("volume mount %q subPath: %w", vm.Name, err)
				}
			} else {
				src = filepath.Join(src, sub)
			}
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

// setSecurity maps the container's securityContext, over the pod's, onto
// the runtime's configuration, as the kubelet and the CRI plugin do.
// Errors are the pod's to fix (CreateContainerConfigError).
func (p *Provider) setSecurity(ctx context.Context, cfg *runtime.ContainerConfig, pod *corev1.Pod, c *corev1.Container) error {
	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	csc := c.SecurityContext
	if csc == nil {
		csc = &corev1.SecurityContext{}
	}
	cfg.User = containerUser(pod, c)
	if gid := effectiveRunAsGroup(pod, c); cfg.User == "" && gid != nil {
		// runAsGroup alone: the image's user with that group, as the
		// kubelet hands the CRI the image's uid (root when it has none).
		if r, ok := p.rt.(runtime.ImageUserReader); ok {
			user, err := r.ImageUser(ctx, c.Image)
			if err != nil {
				return fmt.Errorf("read the user of image %q: %w", c.Image, err)
			}
			name, _, _ := strings.Cut(user, ":")
			if name == "" {
				name = "0"
			}
			cfg.User = fmt.Sprintf("%s:%d", name, *gid)
		}
	}
	cfg.RunAsNonRoot = ptr.Deref(effectiveRunAsNonRoot(pod, c), false)
	cfg.Privileged = ptr.Deref(csc.Privileged, false)
	cfg.ReadOnlyRootfs = ptr.Deref(csc.ReadOnlyRootFilesystem, false)
	// The pod's groups, then its fsGroup, as the kubelet hands them over.
	cfg.SupplementalGroups = slices.Clone(psc.SupplementalGroups)
	if psc.FSGroup != nil {
		cfg.SupplementalGroups = append(cfg.SupplementalGroups, *psc.FSGroup)
	}
	switch pol := ptr.Deref(psc.SupplementalGroupsPolicy, corev1.SupplementalGroupsPolicyMerge); pol {
	case corev1.SupplementalGroupsPolicyMerge:
	case corev1.SupplementalGroupsPolicyStrict:
		cfg.StrictGroups = true
	default:
		return fmt.Errorf("unsupported supplementalGroupsPolicy %q (Merge and Strict are)", pol)
	}
	if caps := csc.Capabilities; caps != nil {
		for _, list := range []struct {
			in  []corev1.Capability
			out *[]string
		}{{caps.Add, &cfg.CapAdd}, {caps.Drop, &cfg.CapDrop}} {
			for _, name := range list.in {
				if _, err := runtime.CapabilityName(string(name)); err != nil {
					return fmt.Errorf("container %s: %w", c.Name, err)
				}
				*list.out = append(*list.out, string(name))
			}
		}
	}
	// Kubernetes sets no_new_privs only when escalation is forbidden.
	cfg.NoNewPrivs = csc.AllowPrivilegeEscalation != nil && !*csc.AllowPrivilegeEscalation
	seccomp, err := p.seccompProfile(pod, c)
	if err != nil {
		return err
	}
	cfg.Seccomp = seccomp
	switch pm := ptr.Deref(csc.ProcMount, corev1.DefaultProcMount); pm {
	case corev1.DefaultProcMount:
	case corev1.UnmaskedProcMount:
		return fmt.Errorf("container %s: procMount Unmasked needs a user namespace (hostUsers: false), which this node does not support", c.Name)
	default:
		return fmt.Errorf("container %s: unsupported procMount %q", c.Name, pm)
	}
	sysctls, err := podSysctls(pod)
	if err != nil {
		return err
	}
	cfg.Sysctls = sysctls
	return nil
}

// containerUser is the runtime's user for the container's (or pod's)
// runAsUser and runAsGroup: "uid", "uid:gid", or "" for the image's.
func containerUser(pod *corev1.Pod, c *corev1.Container) string {
	var uid, gid *int64
	if sc := pod.Spec.SecurityContext; sc != nil {
		uid, gid = sc.RunAsUser, sc.RunAsGroup
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = sc.RunAsGroup
		}
	}
	switch {
	case uid == nil:
		return ""
	case gid == nil:
		return strconv.FormatInt(*uid, 10)
	}
	return fmt.Sprintf("%d:%d", *uid, *gid)
}

func effectiveRunAsUser(pod *corev1.Pod, c *corev1.Container) *int64 {
	if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
		return c.SecurityContext.RunAsUser
	}
	if pod.Spec.SecurityContext != nil {
		return pod.Spec.SecurityContext.RunAsUser
	}
	return nil
}

func effectiveRunAsGroup(pod *corev1.Pod, c *corev1.Container) *int64 {
	if c.SecurityContext != nil && c.SecurityContext.RunAsGroup != nil {
		return c.SecurityContext.RunAsGroup
	}
	if pod.Spec.SecurityContext != nil {
		return pod.Spec.SecurityContext.RunAsGroup
	}
	return nil
}

func effectiveRunAsNonRoot(pod *corev1.Pod, c *corev1.Container) *bool {
	if c.SecurityContext != nil && c.SecurityContext.RunAsNonRoot != nil {
		return c.SecurityContext.RunAsNonRoot
	}
	if pod.Spec.SecurityContext != nil {
		return pod.Spec.SecurityContext.RunAsNonRoot
	}
	return nil
}

// verifyRunAsNonRoot refuses a container with runAsNonRoot that would run
// as root, with the kubelet's messages: its runAsUser is 0, or it has none
// and the image's user is root (none, or uid 0) or a name, which cannot be
// verified. The image must be present. The runtime checks the uid the
// container ends up with again.
func (p *Provider) verifyRunAsNonRoot(ctx context.Context, pod *corev1.Pod, c *corev1.Container) error {
	if nonRoot := effectiveRunAsNonRoot(pod, c); nonRoot == nil || !*nonRoot {
		return nil
	}
	if uid := effectiveRunAsUser(pod, c); uid != nil {
		if *uid == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", formatPod(pod), c.Name)
		}
		return nil
	}
	r, ok := p.rt.(runtime.ImageUserReader)
	if !ok {
		return nil
	}
	user, err := r.ImageUser(ctx, c.Image)
	if err != nil {
		return fmt.Errorf("read the user of image %q: %w", c.Image, err)
	}
	return checkImageUser(user, pod, c)
}

// checkImageUser applies runAsNonRoot to an image's configured user.
func checkImageUser(user string, pod *corev1.Pod, c *corev1.Container) error {
	name, _, _ := strings.Cut(user, ":")
	if name == "" {
		name = "0" // no user: root
	}
	uid, err := strconv.ParseInt(name, 10, 64)
	switch {
	case err != nil:
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", name, formatPod(pod), c.Name)
	case uid == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", formatPod(pod), c.Name)
	}
	return nil
}

// seccompDir is where Localhost seccomp profiles live under the
// kubelet's root, as in Kubernetes.
const seccompDir = "seccomp"

// seccompProfile is the container's seccomp profile, else the pod's.
// None is Unconfined, as the kubelet's default is.
func (p *Provider) seccompProfile(pod *corev1.Pod, c *corev1.Container) (runtime.SeccompProfile, error) {
	var sp *corev1.SeccompProfile
	if pod.Spec.SecurityContext != nil {
		sp = pod.Spec.SecurityContext.SeccompProfile
	}
	if c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil {
		sp = c.SecurityContext.SeccompProfile
	}
	if sp == nil {
		return runtime.SeccompProfile{}, nil
	}
	switch sp.Type {
	case corev1.SeccompProfileTypeUnconfined:
		return runtime.SeccompProfile{Type: runtime.SeccompUnconfined}, nil
	case corev1.SeccompProfileTypeRuntimeDefault:
		return runtime.SeccompProfile{Type: runtime.SeccompRuntimeDefault}, nil
	case corev1.SeccompProfileTypeLocalhost:
		name := ptr.Deref(sp.LocalhostProfile, "")
		if name == "" || !filepath.IsLocal(name) {
			return runtime.SeccompProfile{}, fmt.Errorf("container %s: seccomp localhostProfile %q must be a relative path within %s", c.Name, name, filepath.Join(p.cfg.RootDir, seccompDir))
		}
		return runtime.SeccompProfile{Type: runtime.SeccompLocalhost, LocalhostPath: filepath.Join(p.cfg.RootDir, seccompDir, name)}, nil
	}
	return runtime.SeccompProfile{}, fmt.Errorf("container %s: unsupported seccomp profile type %q", c.Name, sp.Type)
}

// safeSysctls are the sysctls Kubernetes allows every pod, with the
// namespace each lives in.
var safeSysctls = map[string]string{
	"kernel.shm_rmid_forced":              "ipc",
	"net.ipv4.ip_local_port_range":        "net",
	"net.ipv4.tcp_syncookies":             "net",
	"net.ipv4.ping_group_range":           "net",
	"net.ipv4.ip_unprivileged_port_start": "net",
	"net.ipv4.ip_local_reserved_ports":    "net",
	"net.ipv4.tcp_keepalive_time":         "net",
	"net.ipv4.tcp_fin_timeout":            "net",
	"net.ipv4.tcp_keepalive_intvl":        "net",
	"net.ipv4.tcp_keepalive_probes":       "net",
	"net.ipv4.tcp_rmem":                   "net",
	"net.ipv4.tcp_wmem":                   "net",
}

// AdmitPod refuses, before any container of it starts, a pod whose
// sysctls this node does not allow, as the kubelet's sysctl admission
// handler does (kubelet.PodAdmitter).
func (p *Provider) AdmitPod(pod *corev1.Pod) (reason, message string) {
	if _, err := podSysctls(pod); err != nil {
		return "SysctlForbidden", err.Error()
	}
	return "", ""
}

// podSysctls are the pod's securityContext.sysctls, names normalised to
// dots; an unsafe one, or a safe one in a namespace the pod shares with
// the host, is forbidden with the kubelet's message (its reason is
// SysctlForbidden).
func podSysctls(pod *corev1.Pod) (map[string]string, error) {
	sc := pod.Spec.SecurityContext
	if sc == nil || len(sc.Sysctls) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(sc.Sysctls))
	for _, s := range sc.Sysctls {
		name := normalizeSysctl(s.Name)
		ns, ok := safeSysctls[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("forbidden sysctl: %q not allowlisted", name)
		case ns == "net" && pod.Spec.HostNetwork, ns == "ipc" && pod.Spec.HostIPC:
			return nil, fmt.Errorf("forbidden sysctl: %q not allowed with host %s enabled", name, ns)
		}
		out[name] = s.Value
	}
	return out, nil
}

// normalizeSysctl turns a slash-separated name (net/ipv4/ip_local_port_range)
// into the dotted form, swapping dots and slashes as Kubernetes does.
func normalizeSysctl(name string) string {
	i := strings.IndexAny(name, "./")
	if i == -1 || name[i] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, name)
}

// apiContainerUser is status.containerStatuses[].user for a container's
// recorded process identity (nil when the runtime has none).
func apiContainerUser(u *runtime.ProcessUser) *corev1.ContainerUser {
	if u == nil {
		return nil
	}
	return &corev1.ContainerUser{Linux: &corev1.LinuxContainerUser{
		UID: u.UID, GID: u.GID, SupplementalGroups: slices.Clone(u.SupplementalGroups),
	}}
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
