package local

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/containerd"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Kubernetes' defaults for what the node reports.
const (
	defaultMaxPods = 110
	// evictionHardMemory is Kubernetes' memory.available<100Mi.
	evictionHardMemory = 100 << 20
	// diskPressurePercent is Kubernetes' nodefs.available<10%.
	diskPressurePercent = 10
)

// nodeCache keeps what describing the node costs: its capacity and
// system info, refreshed with each ConfigureNode.
type nodeCache struct {
	mu          sync.Mutex
	allocatable corev1.ResourceList
	runtimeVer  string
}

// allocatable is the node's allocatable resources (resourceFieldRef's
// default for limits a container does not set).
func (p *Provider) allocatable() corev1.ResourceList {
	p.node.mu.Lock()
	a := p.node.allocatable
	p.node.mu.Unlock()
	if a == nil {
		_, a = p.resources()
		p.node.mu.Lock()
		p.node.allocatable = a
		p.node.mu.Unlock()
	}
	return a
}

// resources measures the machine: capacity, and allocatable after
// Reserved and the memory eviction threshold.
func (p *Provider) resources() (capacity, allocatable corev1.ResourceList) {
	capacity = corev1.ResourceList{
		corev1.ResourceCPU:  *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
		corev1.ResourcePods: *resource.NewQuantity(defaultMaxPods, resource.DecimalSI),
	}
	if mem, err := meminfo("MemTotal"); err == nil {
		capacity[corev1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
	}
	if total, _, err := diskSpace(p.cfg.RootDir); err == nil {
		capacity[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(total, resource.BinarySI)
	}
	for name, q := range p.cfg.Capacity {
		capacity[name] = q.DeepCopy()
	}
	allocatable = capacity.DeepCopy()
	for name, q := range p.cfg.Reserved {
		if a, ok := allocatable[name]; ok {
			a.Sub(q)
			allocatable[name] = a
		}
	}
	if m, ok := allocatable[corev1.ResourceMemory]; ok {
		m.Sub(*resource.NewQuantity(evictionHardMemory, resource.BinarySI))
		allocatable[corev1.ResourceMemory] = m
	}
	for name, q := range allocatable {
		if q.Sign() < 0 {
			allocatable[name] = *resource.NewQuantity(0, q.Format)
		}
	}
	return capacity, allocatable
}

// ConfigureNode describes this machine: capacity and allocatable,
// addresses, system info, and the memory, disk and runtime conditions.
func (p *Provider) ConfigureNode(ctx context.Context, node *corev1.Node) {
	capacity, allocatable := p.resources()
	p.node.mu.Lock()
	p.node.allocatable = allocatable
	p.node.mu.Unlock()
	node.Status.Capacity = capacity
	node.Status.Allocatable = allocatable
	if p.cfg.LocalPathRoot != "" {
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		node.Annotations[annLocalPathRoot] = p.cfg.LocalPathRoot
	}
	node.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: p.cfg.NodeIP},
		{Type: corev1.NodeHostName, Address: p.cfg.NodeName},
	}
	info := &node.Status.NodeInfo
	info.OperatingSystem, info.Architecture = goruntime.GOOS, goruntime.GOARCH
	info.OSImage = osImage()
	var uts unix.Utsname
	if err := unix.Uname(&uts); err == nil {
		info.KernelVersion = unix.ByteSliceToString(uts.Release[:])
	}
	info.MachineID = firstLineOf("/etc/machine-id")
	info.SystemUUID = strings.ToLower(firstLineOf("/sys/class/dmi/id/product_uuid"))
	info.BootID = firstLineOf("/proc/sys/kernel/random/boot_id")
	info.ContainerRuntimeVersion = p.runtimeVersion(ctx)
	node.Status.Conditions = p.nodeConditions(ctx)
}

// runtimeVersion is "containerd://<version>", from the config or the
// runtime's containerd client.
func (p *Provider) runtimeVersion(ctx context.Context) string {
	if p.cfg.RuntimeVersion != "" {
		return p.cfg.RuntimeVersion
	}
	p.node.mu.Lock()
	v := p.node.runtimeVer
	p.node.mu.Unlock()
	if v != "" {
		return v
	}
	if c, ok := p.rt.(interface{ Client() *containerd.Client }); ok {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if ver, err := c.Client().Version(ctx); err == nil {
			v = "containerd://" + strings.TrimPrefix(ver.Version, "v")
			p.node.mu.Lock()
			p.node.runtimeVer = v
			p.node.mu.Unlock()
			return v
		}
	}
	return "containerd://unknown"
}

// nodeConditions reports memory and disk pressure by Kubernetes' hard
// eviction thresholds, and Ready=False while the runtime does not answer.
func (p *Provider) nodeConditions(ctx context.Context) []corev1.NodeCondition {
	var out []corev1.NodeCondition
	if avail, err := meminfo("MemAvailable"); err == nil && avail < evictionHardMemory {
		out = append(out, corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue,
			Reason: "KubeletHasInsufficientMemory", Message: "kubelet has insufficient memory available"})
	}
	if total, avail, err := diskSpace(p.cfg.RootDir); err == nil && total > 0 && avail*100/total < diskPressurePercent {
		out = append(out, corev1.NodeCondition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue,
			Reason: "KubeletHasDiskPressure", Message: "kubelet has disk pressure"})
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := p.rt.ListContainers(lctx); err != nil {
		out = append(out, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse,
			Reason: "KubeletNotReady", Message: fmt.Sprintf("container runtime is down: %v", err)})
	}
	return out
}

// meminfo reads a /proc/meminfo field in bytes.
func meminfo(field string) (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		name, rest, ok := strings.Cut(s.Text(), ":")
		if !ok || name != field {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			break
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, err
		}
		if len(fields) > 1 && fields[1] == "kB" {
			n *= 1024
		}
		return n, nil
	}
	return 0, fmt.Errorf("/proc/meminfo has no %s", field)
}

// diskSpace is the size and free space of the file system holding dir.
func diskSpace(dir string) (total, avail int64, err error) {
	for d := dir; ; d = filepath.Dir(d) {
		var st unix.Statfs_t
		if err = unix.Statfs(d, &st); err == nil {
			return int64(st.Blocks) * st.Bsize, int64(st.Bavail) * st.Bsize, nil
		}
		if !errors.Is(err, unix.ENOENT) || d == filepath.Dir(d) {
			return 0, 0, err
		}
	}
}

// osImage is os-release's PRETTY_NAME.
func osImage() string {
	for _, path := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		s := bufio.NewScanner(f)
		for s.Scan() {
			if v, ok := strings.CutPrefix(s.Text(), "PRETTY_NAME="); ok {
				f.Close()
				if u, err := strconv.Unquote(v); err == nil {
					return u
				}
				return strings.Trim(v, `"'`)
			}
		}
		f.Close()
	}
	return "Linux"
}

func firstLineOf(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line)
}
