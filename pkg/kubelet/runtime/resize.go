package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/containerd/containerd"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// ResourceUpdater is a Runtime that changes a running container's
// compute resources in place (in-place pod resize).
type ResourceUpdater interface {
	// UpdateResources sets a running container's cgroup limits to res, or
	// for a sandbox ID the pod's cgroup's, and merges labels into the
	// container's labels (ListContainers returns them). A limit of 0 is no
	// limit.
	UpdateResources(ctx context.Context, id string, res Resources, labels map[string]string) error
}

var _ ResourceUpdater = (*Containerd)(nil)

// UpdateResources updates the container's task (runc update) or writes
// the pod's cgroup.
func (r *Containerd) UpdateResources(ctx context.Context, id string, res Resources, labels map[string]string) error {
	ctx = r.nsCtx(ctx)
	unlock := r.locks.lock(id)
	defer unlock()
	container, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return fmt.Errorf("update resources of %s: %w", id, err)
	}
	have, err := container.Labels(ctx)
	if err != nil {
		return fmt.Errorf("update resources of %s: %w", id, err)
	}
	if have[LabelKind] == kindSandbox {
		if err := r.cg.updatePodResources(have[labelCgroupParent], res); err != nil {
			return fmt.Errorf("update resources of pod %s: %w", have[LabelPodName], err)
		}
	} else {
		task, err := container.Task(ctx, nil)
		if err != nil {
			return fmt.Errorf("update resources of %s: %w", id, err)
		}
		if err := task.Update(ctx, containerd.WithResources(linuxResources(res))); err != nil {
			return fmt.Errorf("update resources of %s: %w", id, err)
		}
	}
	if len(labels) > 0 {
		if _, err := container.SetLabels(ctx, labels); err != nil {
			return fmt.Errorf("update resources of %s: %w", id, err)
		}
	}
	return nil
}

// linuxResources are res as an update: every value set, -1 for no limit.
func linuxResources(res Resources) *specs.LinuxResources {
	quota, period := res.Quota()
	if quota == 0 {
		quota = -1
	}
	shares := res.Shares()
	mem := res.MemoryLimitBytes
	if mem == 0 {
		mem = -1
	}
	return &specs.LinuxResources{
		CPU:    &specs.LinuxCPU{Shares: &shares, Quota: &quota, Period: &period},
		Memory: &specs.LinuxMemory{Limit: &mem},
	}
}

// updatePodResources sets the pod's cgroup limits (cgroup v1; on v2 the
// containers' own limits apply): unlike setPodResources it also lifts a
// limit that res does not set.
func (m cgroupMounts) updatePodResources(path string, res Resources) error {
	if m.v2() {
		return nil
	}
	quota, period := res.Quota()
	if quota == 0 {
		quota = -1
	}
	mem := res.MemoryLimitBytes
	if mem == 0 {
		mem = -1
	}
	writes := []struct{ controller, file, value string }{
		{"cpu", "cpu.shares", strconv.FormatUint(res.Shares(), 10)},
		{"cpu", "cpu.cfs_period_us", strconv.FormatUint(period, 10)},
		{"cpu", "cpu.cfs_quota_us", strconv.FormatInt(quota, 10)},
		{"memory", "memory.limit_in_bytes", strconv.FormatInt(mem, 10)},
	}
	for _, w := range writes {
		dir, err := m.dir(w.controller, path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, w.file), []byte(w.value), 0o644); err != nil {
			return fmt.Errorf("pod cgroup %s: %w", w.file, err)
		}
	}
	return nil
}
