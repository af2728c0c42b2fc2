package local

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
	"github.com/minik8s/minik8s/pkg/kubelet/stats"
)

// idsOf maps the fake runtime's running sandbox ("" key) and containers
// (by name) to their IDs.
func idsOf(t *testing.T, rt *fakeRuntime) map[string]string {
	t.Helper()
	all, err := rt.ListContainers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, c := range all {
		if c.State == runtime.StateRunning {
			ids[c.Name] = c.ID
		}
	}
	return ids
}

// usage is one summary entry as "<nanocores>/<working set>"; "-" for no
// rate.
func usage(cpu *stats.CPUStats, mem *stats.MemoryStats) string {
	rate, ws := "-", "-"
	if cpu != nil && cpu.UsageNanoCores != nil {
		rate = strconv.FormatUint(*cpu.UsageNanoCores, 10)
	}
	if mem != nil && mem.WorkingSetBytes != nil {
		ws = strconv.FormatUint(*mem.WorkingSetBytes, 10)
	}
	return rate + "/" + ws
}

// summaryUsage flattens a summary: "node", "ns/pod" and "ns/pod/container"
// to usage().
func summaryUsage(s *stats.Summary) map[string]string {
	out := map[string]string{"node": usage(s.Node.CPU, s.Node.Memory)}
	for _, p := range s.Pods {
		key := p.PodRef.Namespace + "/" + p.PodRef.Name
		out[key] = usage(p.CPU, p.Memory)
		for _, c := range p.Containers {
			out[key+"/"+c.Name] = usage(c.CPU, c.Memory)
		}
	}
	return out
}

func TestSummaryCPUFromUsageDeltas(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	w := e.worker(testPod("web", "app", "sidecar"))
	e.sync(w)
	ids := idsOf(t, e.rt)
	e.rt.setUsage(ids[""], 0.75, 30<<20) // the pod's cgroup: both containers and the sandbox
	e.rt.setUsage(ids["app"], 0.5, 20<<20)
	e.rt.setUsage(ids["sidecar"], 0.25, 10<<20)
	// The machine: 1.5 cores busy since epoch, 1Gi of 4Gi in use.
	e.p.readNode = func() (nodeUsage, error) {
		now := e.clock.Now()
		return nodeUsage{
			Stats:          runtime.Stats{Timestamp: now, CPUUsageNanos: uint64(1.5 * float64(now.Sub(epoch))), MemoryWorkingSetBytes: 1 << 30},
			AvailableBytes: 3 << 30, BootTime: epoch,
		}, nil
	}
	summarize := func() map[string]string {
		t.Helper()
		s, err := e.p.Summary(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.Node.NodeName != "node1" || s.Node.Memory == nil || *s.Node.Memory.AvailableBytes != 3<<30 || !s.Node.StartTime.Time.Equal(epoch) {
			t.Errorf("node stats %+v", s.Node)
		}
		return summaryUsage(s)
	}
	check := func(step string, got, want map[string]string) {
		t.Helper()
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %s, want %s", step, k, got[k], v)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: summary has %v, want %v", step, got, want)
		}
	}

	// First summary: nothing to compare with, so it samples twice, a
	// second apart.
	start := e.clock.Now()
	check("first summary", summarize(), map[string]string{
		"node":                "1500000000/1073741824",
		"default/web":         "750000000/31457280",
		"default/web/app":     "500000000/20971520",
		"default/web/sidecar": "250000000/10485760",
	})
	if waited := e.clock.Since(start); waited != stats.MinWindow {
		t.Errorf("first summary waited %v, want %v", waited, stats.MinWindow)
	}

	// Ten seconds later app is busier: the rate is the delta since the
	// last summary, with no wait.
	e.rt.setUsage(ids["app"], 2, 20<<20)
	e.rt.setUsage(ids[""], 2.25, 30<<20)
	e.clock.Step(10 * time.Second)
	start = e.clock.Now()
	check("ten seconds later", summarize(), map[string]string{
		"node":                "1500000000/1073741824",
		"default/web":         "2250000000/31457280",
		"default/web/app":     "2000000000/20971520",
		"default/web/sidecar": "250000000/10485760",
	})
	if waited := e.clock.Since(start); waited != 0 {
		t.Errorf("a summary with fresh samples waited %v", waited)
	}

	// A container that exited is not in the summary; its sample is
	// forgotten once stale.
	e.rt.exit(t, "sidecar", 0)
	e.clock.Step(2 * time.Minute)
	check("after sidecar exited", summarize(), map[string]string{
		"node":            "1500000000/1073741824",
		"default/web":     "2250000000/31457280",
		"default/web/app": "2000000000/20971520",
	})
	if n := e.p.cpu.Len(); n != 3 {
		t.Errorf("tracker holds %d keys, want 3 (node, pod, app)", n)
	}
}

func TestParseProcStat(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		cpu      uint64
		boot     int64
		err      string
	}{
		{
			name: "busy is user+nice+system+irq+softirq+steal",
			in:   "cpu  100 20 30 5000 40 6 7 8 50 0\ncpu0 50 10 15 2500 20 3 3 4 25 0\nintr 1 2 3\nbtime 1700000000\n",
			cpu:  (100 + 20 + 30 + 6 + 7 + 8) * 10_000_000, boot: 1700000000,
		},
		{name: "old kernels without steal", in: "cpu  1 2 3 4 5 6 7\n", cpu: (1 + 2 + 3 + 6 + 7) * 10_000_000},
		{name: "no cpu line", in: "intr 1\n", err: "no cpu line"},
		{name: "short cpu line", in: "cpu 1 2 3\n", err: "short cpu line"},
		{name: "garbage", in: "cpu a b c d e f g\n", err: "invalid syntax"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cpu, boot, err := parseProcStat(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cpu != tc.cpu {
				t.Errorf("cpu = %d, want %d", cpu, tc.cpu)
			}
			if tc.boot != 0 && boot.Unix() != tc.boot {
				t.Errorf("boot = %v, want %d", boot, tc.boot)
			}
		})
	}
}

func TestParseMeminfo(t *testing.T) {
	got, err := parseMeminfo(strings.NewReader("MemTotal:        4000 kB\nMemFree:          1000 kB\nMemAvailable:     2500 kB\nHugePages_Total:       0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got["MemTotal"] != 4000*1024 || got["MemFree"] != 1000*1024 || got["MemAvailable"] != 2500*1024 || got["HugePages_Total"] != 0 {
		t.Errorf("meminfo = %v", got)
	}
	if _, err := parseMeminfo(strings.NewReader("nothing\n")); err == nil {
		t.Error("meminfo without MemTotal parsed")
	}
}

// TestReadProcNode reads this machine's /proc: busy time only grows, and
// the working set (less than MemAvailable free) is within usage (less than
// MemFree free).
func TestReadProcNode(t *testing.T) {
	a, err := readProcNode()
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	b, err := readProcNode()
	if err != nil {
		t.Fatal(err)
	}
	if b.CPUUsageNanos < a.CPUUsageNanos || a.CPUUsageNanos == 0 {
		t.Errorf("cpu went from %d to %d", a.CPUUsageNanos, b.CPUUsageNanos)
	}
	if a.MemoryWorkingSetBytes == 0 || a.MemoryWorkingSetBytes > a.MemoryUsageBytes || a.BootTime.IsZero() {
		t.Errorf("node usage %+v", a)
	}
}
