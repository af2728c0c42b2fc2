package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Runtime runs pods' containers on this node.
type Runtime interface {
	// EnsureImage makes image ref (normalised: "busybox" is
	// docker.io/library/busybox:latest) present and unpacked, pulling it as
	// policy says. Errors name the image and the cause; a failed pull is a
	// *PullError, a missing image under PullNever wraps ErrImageNeverPull.
	// pulled says whether it came from a registry (rather than being here).
	EnsureImage(ctx context.Context, ref string, policy corev1.PullPolicy) (pulled bool, err error)
	// CreateSandbox starts the pod's pause container in a new network
	// namespace (with loopback up), and new IPC and UTS namespaces.
	CreateSandbox(ctx context.Context, cfg SandboxConfig) (*Sandbox, error)
	// RemoveSandbox kills and removes the sandbox and any container still in
	// it, its network namespace and the pod's cgroup. Removing a sandbox that
	// is gone is not an error. CNI teardown must come first.
	RemoveSandbox(ctx context.Context, id string) error
	// CreateContainer creates (does not start) a container in the sandbox's
	// namespaces. Only sandbox.ID is read: a restarted kubelet may pass
	// &Sandbox{ID: id} for a sandbox it found with ListContainers.
	CreateContainer(ctx context.Context, sandbox *Sandbox, cfg ContainerConfig) (string, error)
	// StartContainer starts a created container. A container runs once; the
	// kubelet creates a new one to restart it.
	StartContainer(ctx context.Context, id string) error
	// StopContainer sends the image's stop signal (SIGTERM by default), waits
	// up to grace for the container to exit, then sends SIGKILL. Stopping an
	// exited or removed container is not an error.
	StopContainer(ctx context.Context, id string, grace time.Duration) error
	// RemoveContainer removes a container, killing it if it still runs.
	// Removing a removed container is not an error. The log file stays.
	RemoveContainer(ctx context.Context, id string) error
	// ListContainers returns every sandbox and container of ours that
	// containerd knows, running or not.
	ListContainers(ctx context.Context) ([]ContainerStatus, error)
	// Exec runs cmd in a running container and returns its exit code once it
	// exits and its output has been copied. Cancelling ctx kills it.
	Exec(ctx context.Context, id string, cmd []string, streams ExecStreams) (exitCode int, err error)
	// Stats reads a container's cgroup; for a sandbox ID, the whole pod's.
	Stats(ctx context.Context, id string) (*Stats, error)
}

// Attacher is a Runtime that can attach to a container's main process
// (kubectl attach, kubectl run -i).
type Attacher interface {
	// Attach connects streams to a running container: the output it writes
	// from now on, its stdin if it was created with Stdin, and terminal
	// resizes with TTY. It returns when the container exits or ctx ends.
	// With StdinOnce the container's stdin is closed when the session's
	// stdin ends or the session does.
	Attach(ctx context.Context, id string, streams ExecStreams) error
}

// ImageUserReader is a Runtime that reads the user a present image's
// configuration runs its process as ("", "1000", "app", "1000:3000"), for
// the kubelet's runAsNonRoot check.
type ImageUserReader interface {
	ImageUser(ctx context.Context, ref string) (string, error)
}

// Versioner is a Runtime that names its version, for the Node's
// status.nodeInfo.containerRuntimeVersion ("containerd://1.6.20").
type Versioner interface {
	Version(ctx context.Context) (string, error)
}

// SandboxConfig describes a pod's sandbox.
type SandboxConfig struct {
	// Namespace, Name and UID identify the pod; UID is required.
	Namespace, Name, UID string
	// Hostname of the pod (its UTS namespace). Default Name.
	Hostname string
	// Labels are stored on the sandbox and returned by ListContainers.
	Labels map[string]string
	// CgroupParent is the pod's cgroup, relative to each hierarchy's root;
	// the sandbox and every container get a cgroup under it.
	// Default "<Config.CgroupRoot>/pod<UID>".
	CgroupParent string
	// Resources, when set, limit the pod's cgroup as a whole, as Kubernetes
	// limits a Guaranteed or Burstable pod (sum of its containers). cgroup v1.
	Resources *Resources
	// HostNetwork runs the pod in the node's network (Config.HostNetNS)
	// and UTS namespaces (no network namespace of its own: NetNSPath is
	// empty, Hostname is the node's). HostPID and HostIPC share the
	// node's PID and IPC namespaces.
	HostNetwork, HostPID, HostIPC bool
	// AttachNetwork, when set, attaches the sandbox's network namespace
	// to the pod network (CNI ADD). CreateSandbox calls it once, as soon
	// as the namespace exists, with the sandbox's ID and the namespace's
	// path, and starts the pause container meanwhile; it returns when
	// both are done. Should either fail, CreateSandbox removes the
	// sandbox and returns the error; undoing what AttachNetwork did (CNI
	// DEL) is then the caller's. Not called for HostNetwork.
	AttachNetwork func(ctx context.Context, id, netnsPath string) error
}

// Sandbox is a running pod sandbox.
type Sandbox struct {
	ID string
	// NetNSPath is the pod's network namespace, a bind mount under
	// /var/run/netns ("ip netns" lists it), for CNI ADD and DEL. Empty for
	// a HostNetwork pod.
	NetNSPath string
	// Pid of the pause process.
	Pid uint32
	// CgroupParent is the pod's cgroup.
	CgroupParent string
}

// Resources are a container's (or pod's) compute resources.
type Resources struct {
	// CPURequestMilli sets cpu shares (1000m = 1024 shares; 0 gives 2 shares,
	// as Kubernetes gives a container that requests no cpu).
	CPURequestMilli int64
	// CPULimitMilli sets the CFS quota per 100ms period; 0 is no limit.
	CPULimitMilli int64
	// MemoryLimitBytes sets the memory limit; 0 is no limit.
	MemoryLimitBytes int64
}

// ResourcesFor maps a container's resource requirements the way Kubernetes
// does: shares from the cpu request (the limit when only that is set), quota
// from the cpu limit, and the memory limit.
func ResourcesFor(r corev1.ResourceRequirements) Resources {
	var res Resources
	if q, ok := r.Limits[corev1.ResourceCPU]; ok {
		res.CPULimitMilli = q.MilliValue()
	}
	if q, ok := r.Requests[corev1.ResourceCPU]; ok {
		res.CPURequestMilli = q.MilliValue()
	} else {
		res.CPURequestMilli = res.CPULimitMilli
	}
	if q, ok := r.Limits[corev1.ResourceMemory]; ok {
		res.MemoryLimitBytes = q.Value()
	}
	return res
}

// CFS period and the Kubernetes share bounds.
const (
	cpuPeriod = 100000 // µs
	minShares = 2
	maxShares = 262144
	minQuota  = 1000 // µs
)

// Shares is the cpu.shares value for the cpu request.
func (r Resources) Shares() uint64 {
	s := r.CPURequestMilli * 1024 / 1000
	return uint64(min(max(s, minShares), maxShares))
}

// Quota is the cpu.cfs_quota_us value for the cpu limit (0: no limit) and
// the period it applies to.
func (r Resources) Quota() (quota int64, period uint64) {
	if r.CPULimitMilli <= 0 {
		return 0, cpuPeriod
	}
	return max(r.CPULimitMilli*cpuPeriod/1000, minQuota), cpuPeriod
}

// ContainerConfig describes a container to create in a sandbox.
type ContainerConfig struct {
	// Name is the container's name in the pod spec.
	Name string
	// Image is the image reference; EnsureImage must have made it present.
	Image string
	// Command and Args combine with the image's entrypoint and cmd as in
	// Kubernetes: Command replaces the entrypoint (and drops the image's cmd),
	// Args replace the cmd.
	Command, Args []string
	// Env is "NAME=value" pairs, valueFrom and $(VAR) already resolved. They
	// override the image's variables of the same name.
	Env []string
	// WorkingDir overrides the image's working directory.
	WorkingDir string
	// Mounts are bind mounts of host paths the kubelet prepared (volumes,
	// /etc/hosts, /etc/resolv.conf, termination log).
	Mounts []Mount
	// Resources become the container cgroup's limits.
	Resources Resources
	// LogPath receives stdout and stderr in the CRI format
	// ("<RFC3339Nano> stdout F <line>"). Empty: output is discarded (and
	// there is nothing to attach to).
	LogPath string
	// TargetPIDOf, when set, is the ID of a running container of the same
	// sandbox whose process namespace this one joins, as an ephemeral
	// container with a targetContainerName does (the CRI's TARGET
	// namespace mode): it sees, and may signal or trace, the target's
	// processes. Otherwise the container has a process namespace of its
	// own (or the node's, for a hostPID pod).
	TargetPIDOf string
	// TTY allocates a terminal (stdout and stderr become one stream). Stdin
	// opens a stdin that attach sessions write to; the container reads no
	// EOF from it until, with StdinOnce, the first session ends.
	TTY, Stdin, StdinOnce bool
	// User is "uid", "uid:gid" or a name in the image's /etc/passwd. Empty:
	// the image's user.
	User string
	// Privileged gives every capability and the host's devices, with
	// writable /sys and cgroups (securityContext.privileged).
	Privileged bool
	// ReadOnlyRootfs mounts the image's root filesystem read-only.
	ReadOnlyRootfs bool
	// RunAsNonRoot refuses to create the container when its process would
	// run as uid 0 (the kubelet checks the image's user beforehand; this
	// catches a name that resolves to root).
	RunAsNonRoot bool
	// SupplementalGroups are added to the process's groups (the pod's
	// supplementalGroups and fsGroup). The process always has its primary
	// group among its groups too.
	SupplementalGroups []int64
	// StrictGroups is supplementalGroupsPolicy Strict: the process's groups
	// are its primary group and SupplementalGroups only. Otherwise (Merge)
	// the groups the image's /etc/group lists the user in are added.
	StrictGroups bool
	// CapAdd and CapDrop change containerd's default capabilities, names
	// with or without "CAP_" in any case. "ALL" in CapAdd gives every
	// capability and in CapDrop removes all of them before the others are
	// added. Privileged containers have them all regardless.
	CapAdd, CapDrop []string
	// NoNewPrivs sets the process's no_new_privs flag
	// (allowPrivilegeEscalation: false). Without it the flag is clear, as
	// in Kubernetes.
	NoNewPrivs bool
	// Seccomp is the seccomp profile (none by default, as Kubernetes'
	// Unconfined). Ignored for Privileged containers.
	Seccomp SeccompProfile
	// Sysctls are set in the container's (the pod's) namespaces: the
	// pod's securityContext.sysctls, which the kubelet allowed.
	Sysctls map[string]string
	// Labels are stored on the container and returned by ListContainers.
	Labels map[string]string
}

// SeccompProfile is a container's seccomp profile.
type SeccompProfile struct {
	// Type is SeccompUnconfined (or empty), SeccompRuntimeDefault or
	// SeccompLocalhost.
	Type string
	// LocalhostPath is the profile's file on this host for
	// SeccompLocalhost: an OCI (runtime-spec) seccomp object in JSON.
	LocalhostPath string
}

// Seccomp profile types, as in the pod spec.
const (
	SeccompUnconfined     = "Unconfined"
	SeccompRuntimeDefault = "RuntimeDefault"
	SeccompLocalhost      = "Localhost"
)

// Mount is a bind mount from the host into a container.
type Mount struct {
	HostPath, ContainerPath string
	ReadOnly                bool
}

// ContainerState is a container's state as ListContainers sees it.
type ContainerState string

// Container states, as in the CRI.
const (
	StateCreated ContainerState = "created"
	StateRunning ContainerState = "running"
	StateExited  ContainerState = "exited"
	StateUnknown ContainerState = "unknown"
)

// ContainerStatus is a sandbox or container of ours.
type ContainerStatus struct {
	ID string
	// IsSandbox is true for a pod's pause container.
	IsSandbox bool
	// SandboxID is the sandbox a container runs in ("" for a sandbox).
	SandboxID string
	// PodNamespace, PodName and PodUID identify the pod.
	PodNamespace, PodName, PodUID string
	// Name is the container's name in the pod spec ("" for a sandbox).
	Name string
	// Labels are the labels given at creation.
	Labels map[string]string
	// Image is the normalised image reference; ImageID is name@digest.
	Image, ImageID string
	State          ContainerState
	// Pid of the container's process while it runs.
	Pid uint32
	// ExitCode and Reason ("OOMKilled", "ContainerStatusUnknown" or empty)
	// once it exited.
	ExitCode                         int
	Reason                           string
	CreatedAt, StartedAt, FinishedAt time.Time
	LogPath                          string
	// NetNSPath (empty with host networking) and CgroupParent of a sandbox.
	NetNSPath, CgroupParent string
	// User is the identity a container's process runs with (nil for a
	// sandbox, or a container created before it was recorded).
	User *ProcessUser
}

// ProcessUser is a container process's uid, primary gid and groups (the
// primary gid among them), as the CRI reports them for
// status.containerStatuses[].user.linux.
type ProcessUser struct {
	UID, GID           int64
	SupplementalGroups []int64
}

// ExecStreams are an exec's standard streams. Nil streams are not attached.
type ExecStreams struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// TTY allocates a terminal; Stderr is unused then.
	TTY bool
	// Resize carries terminal size changes while the process runs.
	Resize <-chan TerminalSize
}

// TerminalSize is a terminal's size in characters.
type TerminalSize struct {
	Width, Height uint16
}

// Stats is a cgroup's usage.
type Stats struct {
	Timestamp time.Time
	// CPUUsageNanos is the cumulative cpu time; a rate needs two samples.
	CPUUsageNanos uint64
	// MemoryUsageBytes is the cgroup's memory usage, page cache included.
	MemoryUsageBytes uint64
	// MemoryWorkingSetBytes is usage minus inactive file pages: what
	// Kubernetes reports and evicts on.
	MemoryWorkingSetBytes uint64
	// MemoryRSSBytes is anonymous memory.
	MemoryRSSBytes uint64
}

// ErrImageNeverPull is wrapped by EnsureImage when an image is missing and
// the policy is Never (the kubelet's ErrImageNeverPull).
var ErrImageNeverPull = errors.New("image is not present and the pull policy is Never")

// ErrInvalidImageName is wrapped when a reference does not parse (the
// kubelet's InvalidImageName).
var ErrInvalidImageName = errors.New("invalid image name")

// PullError is a failed pull (the kubelet's ErrImagePull).
type PullError struct {
	Image string
	Err   error
}

func (e *PullError) Error() string { return fmt.Sprintf("failed to pull image %q: %v", e.Image, e.Err) }
func (e *PullError) Unwrap() error { return e.Err }
