package local

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/kubelet"
	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
	"github.com/minik8s/minik8s/pkg/kubelet/stats"
)

var _ kubelet.StatsProvider = (*Provider)(nil)

// nodeKey is the node's key in the cpu tracker; the others are sandbox
// (the pod's cgroup) and container IDs.
const nodeKey = "node"

// nodeUsage is the whole machine's use, from /proc.
type nodeUsage struct {
	runtime.Stats
	AvailableBytes uint64
	BootTime       time.Time
}

// statsTarget is a cgroup (or the node) the summary reads.
type statsTarget struct {
	key   string
	stats *runtime.Stats
	// rate is the cpu use in nanocores; hasRate is false while the tracker
	// has nothing to compare the reading with.
	rate    uint64
	hasRate bool
}

// Summary reads the node's use from /proc and each running pod's and
// container's from its cgroup (runtime.Stats). CPU rates are the change
// in cumulative cpu time since the previous summary (p.cpu): for a cgroup
// seen for the first time, or last read over stats.MaxWindow ago, it reads
// again stats.MinWindow later, so every running container has a rate.
func (p *Provider) Summary(ctx context.Context) (*stats.Summary, error) {
	all, err := p.list.get(ctx, p.rt, -1)
	if err != nil {
		return nil, fmt.Errorf("stats summary: %w", err)
	}
	pods := runningPods(all)
	targets := []*statsTarget{{key: nodeKey}}
	for _, pod := range pods {
		targets = append(targets, &statsTarget{key: pod.sandbox.ID})
		for _, c := range pod.containers {
			targets = append(targets, &statsTarget{key: c.ID})
		}
	}
	var node nodeUsage
	read := func(t *statsTarget) {
		if t.key == nodeKey {
			u, err := p.readNode()
			if err != nil {
				p.log.Debug("node stats", "err", err)
				t.stats = nil
				return
			}
			node, t.stats = u, &u.Stats
		} else {
			st, err := p.rt.Stats(ctx, t.key)
			if err != nil {
				// Exited since the list, or its cgroup is not there yet.
				p.log.Debug("container stats", "id", t.key, "err", err)
				t.stats = nil
				return
			}
			t.stats = st
		}
		t.rate, t.hasRate = p.cpu.Observe(t.key, t.stats.Timestamp, t.stats.CPUUsageNanos)
	}
	var again []*statsTarget
	for _, t := range targets {
		if read(t); t.stats != nil && !t.hasRate {
			again = append(again, t)
		}
	}
	if len(again) > 0 {
		p.clock.Sleep(stats.MinWindow)
		for _, t := range again {
			read(t)
		}
	}
	p.cpu.Prune(p.clock.Now())

	byKey := make(map[string]*statsTarget, len(targets))
	for _, t := range targets {
		byKey[t.key] = t
	}
	summary := &stats.Summary{Node: stats.NodeStats{NodeName: p.cfg.NodeName}, Pods: []stats.PodStats{}}
	if t := byKey[nodeKey]; t.stats != nil {
		summary.Node.StartTime = metav1.NewTime(node.BootTime)
		summary.Node.CPU = cpuStats(t)
		summary.Node.Memory = memoryStats(t.stats)
		summary.Node.Memory.RSSBytes = nil
		summary.Node.Memory.AvailableBytes = &node.AvailableBytes
	}
	for _, pod := range pods {
		sb := pod.sandbox
		ps := stats.PodStats{
			PodRef:     stats.PodReference{Namespace: sb.PodNamespace, Name: sb.PodName, UID: sb.PodUID},
			StartTime:  metav1.NewTime(sb.CreatedAt),
			Containers: []stats.ContainerStats{},
		}
		if t := byKey[sb.ID]; t.stats != nil {
			ps.CPU, ps.Memory = cpuStats(t), memoryStats(t.stats)
		}
		for _, c := range pod.containers {
			t := byKey[c.ID]
			if t.stats == nil {
				continue
			}
			ps.Containers = append(ps.Containers, stats.ContainerStats{
				Name: c.Name, StartTime: metav1.NewTime(c.StartedAt),
				CPU: cpuStats(t), Memory: memoryStats(t.stats),
			})
		}
		summary.Pods = append(summary.Pods, ps)
	}
	return summary, nil
}

func cpuStats(t *statsTarget) *stats.CPUStats {
	s := &stats.CPUStats{Time: metav1.NewTime(t.stats.Timestamp), UsageCoreNanoSeconds: &t.stats.CPUUsageNanos}
	if t.hasRate {
		s.UsageNanoCores = &t.rate
	}
	return s
}

func memoryStats(st *runtime.Stats) *stats.MemoryStats {
	return &stats.MemoryStats{
		Time:       metav1.NewTime(st.Timestamp),
		UsageBytes: &st.MemoryUsageBytes, WorkingSetBytes: &st.MemoryWorkingSetBytes, RSSBytes: &st.MemoryRSSBytes,
	}
}

// statsPod is a pod's newest running sandbox and the running containers
// in it.
type statsPod struct {
	sandbox    runtime.ContainerStatus
	containers []runtime.ContainerStatus
}

// runningPods picks the running pods out of a relist, ordered by
// namespace and name, their containers by name.
func runningPods(all []runtime.ContainerStatus) []statsPod {
	byUID := map[string]*statsPod{}
	for _, c := range all {
		if !c.IsSandbox || c.State != runtime.StateRunning {
			continue
		}
		if cur, ok := byUID[c.PodUID]; !ok || c.CreatedAt.After(cur.sandbox.CreatedAt) {
			byUID[c.PodUID] = &statsPod{sandbox: c}
		}
	}
	for _, c := range all {
		if c.IsSandbox || c.State != runtime.StateRunning {
			continue
		}
		if pod, ok := byUID[c.PodUID]; ok && c.SandboxID == pod.sandbox.ID {
			pod.containers = append(pod.containers, c)
		}
	}
	out := make([]statsPod, 0, len(byUID))
	for _, pod := range byUID {
		slices.SortFunc(pod.containers, func(a, b runtime.ContainerStatus) int {
			if c := strings.Compare(a.Name, b.Name); c != 0 {
				return c
			}
			return newestFirst(a, b)
		})
		// One instance per name: the latest attempt.
		pod.containers = slices.CompactFunc(pod.containers, func(a, b runtime.ContainerStatus) bool { return a.Name == b.Name })
		out = append(out, *pod)
	}
	slices.SortFunc(out, func(a, b statsPod) int {
		if c := strings.Compare(a.sandbox.PodNamespace, b.sandbox.PodNamespace); c != 0 {
			return c
		}
		return strings.Compare(a.sandbox.PodName, b.sandbox.PodName)
	})
	return out
}

// readProcNode measures the machine: cpu time from /proc/stat, memory from
// /proc/meminfo (working set is MemTotal - MemAvailable, usage MemTotal -
// MemFree). On a machine that hosts several nodes each reports it whole.
func readProcNode() (nodeUsage, error) {
	now := time.Now()
	statData, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nodeUsage{}, err
	}
	cpu, boot, err := parseProcStat(bytes.NewReader(statData))
	if err != nil {
		return nodeUsage{}, err
	}
	memData, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return nodeUsage{}, err
	}
	mem, err := parseMeminfo(bytes.NewReader(memData))
	if err != nil {
		return nodeUsage{}, err
	}
	u := nodeUsage{Stats: runtime.Stats{Timestamp: now, CPUUsageNanos: cpu}, BootTime: boot}
	total, free, avail := mem["MemTotal"], mem["MemFree"], mem["MemAvailable"]
	u.MemoryUsageBytes = total - min(total, free)
	u.MemoryWorkingSetBytes = total - min(total, avail)
	u.AvailableBytes = avail
	return u, nil
}

// userHZ is the unit of /proc/stat's cpu times (USER_HZ, 100 on every
// Linux architecture Go supports).
const userHZ = 100

// parseProcStat reads the cpu time all cores have spent busy (user, nice,
// system, irq, softirq, steal; guest time is already in user) in
// nanoseconds, and the boot time.
func parseProcStat(r io.Reader) (cpuNanos uint64, boot time.Time, err error) {
	s := bufio.NewScanner(r)
	found := false
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "cpu":
			if len(fields) < 8 {
				return 0, boot, fmt.Errorf("/proc/stat: short cpu line %q", s.Text())
			}
			var jiffies uint64
			// user nice system idle iowait irq softirq [steal ...]
			for i, f := range fields[1:] {
				if i == 3 || i == 4 || i >= 8 { // idle, iowait, guest, guest_nice
					continue
				}
				n, err := strconv.ParseUint(f, 10, 64)
				if err != nil {
					return 0, boot, fmt.Errorf("/proc/stat: cpu line %q: %w", s.Text(), err)
				}
				jiffies += n
			}
			cpuNanos, found = jiffies*(uint64(time.Second)/userHZ), true
		case "btime":
			if len(fields) == 2 {
				if n, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
					boot = time.Unix(n, 0)
				}
			}
		}
	}
	if err := s.Err(); err != nil {
		return 0, boot, err
	}
	if !found {
		return 0, boot, errors.New("/proc/stat has no cpu line")
	}
	return cpuNanos, boot, nil
}

// parseMeminfo reads /proc/meminfo's fields in bytes.
func parseMeminfo(r io.Reader) (map[string]uint64, error) {
	out := map[string]uint64{}
	s := bufio.NewScanner(r)
	for s.Scan() {
		name, rest, ok := strings.Cut(s.Text(), ":")
		fields := strings.Fields(rest)
		if !ok || len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			n *= 1024
		}
		out[name] = n
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if out["MemTotal"] == 0 {
		return nil, errors.New("/proc/meminfo has no MemTotal")
	}
	return out, nil
}
