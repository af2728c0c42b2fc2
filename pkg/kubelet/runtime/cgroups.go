package runtime

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupMounts is where this machine's cgroup hierarchies are mounted.
type cgroupMounts struct {
	// unified is the cgroup v2 mount ("" if none); on a pure v2 machine it
	// is the only hierarchy, on a hybrid one it has no controllers.
	unified string
	// v1 maps a controller ("memory", "cpu", "cpuacct", "name=systemd") to
	// its hierarchy's mount point. Empty on a pure v2 machine.
	v1 map[string]string
}

// readCgroupMounts finds the cgroup hierarchies in /proc/self/mountinfo.
func readCgroupMounts() (cgroupMounts, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return cgroupMounts{}, err
	}
	defer f.Close()
	m := cgroupMounts{v1: map[string]string{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 36 35 98:0 / /sys/fs/cgroup/memory rw,... - cgroup cgroup rw,memory
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || len(fields) < sep+4 || fields[3] != "/" {
			continue
		}
		mountPoint, fsType := fields[4], fields[sep+1]
		switch fsType {
		case "cgroup2":
			if m.unified == "" {
				m.unified = mountPoint
			}
		case "cgroup":
			for _, opt := range strings.Split(fields[sep+3], ",") {
				switch opt {
				case "rw", "ro", "relatime", "nosuid", "nodev", "noexec", "clone_children", "xattr":
					continue
				}
				if _, ok := m.v1[opt]; !ok {
					m.v1[opt] = mountPoint
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return m, err
	}
	if m.unified == "" && len(m.v1) == 0 {
		return m, errors.New("no cgroup filesystem is mounted")
	}
	return m, nil
}

// v2 reports whether containers' controllers live in the unified hierarchy.
func (m cgroupMounts) v2() bool { return len(m.v1) == 0 }

// dir is the directory of cgroup path for a v1 controller (for v2, the
// unified one).
func (m cgroupMounts) dir(controller, path string) (string, error) {
	if m.v2() {
		return filepath.Join(m.unified, path), nil
	}
	mp, ok := m.v1[controller]
	if !ok {
		return "", fmt.Errorf("cgroup controller %s is not mounted", controller)
	}
	return filepath.Join(mp, path), nil
}

// CgroupDir returns the directory of a container's or pod's cgroup (as
// ContainerStatus.CgroupParent or a container's cgroup) for a controller,
// e.g. CgroupDir("memory", "/minik8s/pod<uid>") on cgroup v1. On cgroup v2
// the controller is ignored.
func CgroupDir(controller, path string) (string, error) {
	m, err := readCgroupMounts()
	if err != nil {
		return "", err
	}
	return m.dir(controller, path)
}

// readStats reads the usage of a cgroup.
func (m cgroupMounts) readStats(path string) (*Stats, error) {
	st := &Stats{Timestamp: time.Now()}
	if m.v2() {
		dir := filepath.Join(m.unified, path)
		cpu, err := readKeyed(filepath.Join(dir, "cpu.stat"))
		if err != nil {
			return nil, err
		}
		st.CPUUsageNanos = cpu["usage_usec"] * 1000
		if st.MemoryUsageBytes, err = readUint(filepath.Join(dir, "memory.current")); err != nil {
			return nil, err
		}
		mem, err := readKeyed(filepath.Join(dir, "memory.stat"))
		if err != nil {
			return nil, err
		}
		st.MemoryRSSBytes = mem["anon"]
		st.MemoryWorkingSetBytes = st.MemoryUsageBytes - min(st.MemoryUsageBytes, mem["inactive_file"])
		return st, nil
	}
	cpuDir, err := m.dir("cpuacct", path)
	if err != nil {
		return nil, err
	}
	if st.CPUUsageNanos, err = readUint(filepath.Join(cpuDir, "cpuacct.usage")); err != nil {
		return nil, err
	}
	memDir, err := m.dir("memory", path)
	if err != nil {
		return nil, err
	}
	if st.MemoryUsageBytes, err = readUint(filepath.Join(memDir, "memory.usage_in_bytes")); err != nil {
		return nil, err
	}
	mem, err := readKeyed(filepath.Join(memDir, "memory.stat"))
	if err != nil {
		return nil, err
	}
	st.MemoryRSSBytes = mem["total_rss"]
	st.MemoryWorkingSetBytes = st.MemoryUsageBytes - min(st.MemoryUsageBytes, mem["total_inactive_file"])
	return st, nil
}

// oomKilled reports whether the kernel's OOM killer killed a process in
// the cgroup (read before the cgroup is removed).
func (m cgroupMounts) oomKilled(path string) bool {
	file := "memory.oom_control"
	if m.v2() {
		file = "memory.events"
	}
	dir, err := m.dir("memory", path)
	if err != nil {
		return false
	}
	kv, err := readKeyed(filepath.Join(dir, file))
	return err == nil && kv["oom_kill"] > 0
}

// setPodResources creates the pod's cgroup and limits it (cgroup v1; on v2
// the containers' own limits still apply).
func (m cgroupMounts) setPodResources(path string, res Resources) error {
	if m.v2() {
		return nil
	}
	type write struct{ controller, file, value string }
	quota, period := res.Quota()
	writes := []write{
		{"cpu", "cpu.shares", strconv.FormatUint(res.Shares(), 10)},
		{"cpu", "cpu.cfs_period_us", strconv.FormatUint(period, 10)},
	}
	if quota > 0 {
		writes = append(writes, write{"cpu", "cpu.cfs_quota_us", strconv.FormatInt(quota, 10)})
	}
	if res.MemoryLimitBytes > 0 {
		writes = append(writes, write{"memory", "memory.limit_in_bytes", strconv.FormatInt(res.MemoryLimitBytes, 10)})
	}
	for _, w := range writes {
		dir, err := m.dir(w.controller, path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("pod cgroup: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, w.file), []byte(w.value), 0o644); err != nil {
			return fmt.Errorf("pod cgroup %s: %w", w.file, err)
		}
	}
	return nil
}

// removeCgroup removes a cgroup (empty by now: runc removed the containers'
// cgroups under it) from every hierarchy.
func (m cgroupMounts) removeCgroup(path string) error {
	dirs := map[string]bool{}
	if m.unified != "" {
		dirs[filepath.Join(m.unified, path)] = true
	}
	for _, mp := range m.v1 {
		dirs[filepath.Join(mp, path)] = true
	}
	var errs []error
	for dir := range dirs {
		// A cgroup whose last process just exited can be busy for a moment.
		for i := 0; ; i++ {
			err := unix.Rmdir(dir)
			if err == nil || errors.Is(err, fs.ErrNotExist) {
				break
			}
			if !errors.Is(err, unix.EBUSY) || i == 50 {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dir, err))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return errors.Join(errs...)
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// readKeyed reads a "key value" per line cgroup file.
func readKeyed(path string) (map[string]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	kv := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			kv[k] = n
		}
	}
	return kv, nil
}
