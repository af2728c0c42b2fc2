package simulated

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minik8s/minik8s/pkg/kubelet/stats"
)

func TestSummaryReportsAnnotatedUsage(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p, err := New(Config{NodeName: "sim", Clock: clk, Capacity: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pod := func(name string, annotations map[string]string, containers ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Annotations: annotations}}
		for _, c := range containers {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
		}
		return p
	}
	for _, pd := range []*corev1.Pod{
		pod("busy", map[string]string{AnnotationCPUUsage: "250m", AnnotationMemoryUsage: "64Mi"}, "a", "b"),
		pod("quiet", nil, "c"),
		pod("garbled", map[string]string{AnnotationCPUUsage: "lots", AnnotationMemoryUsage: "-1Mi"}, "d"),
		pod("done", map[string]string{AnnotationCPUUsage: "1"}, "e"),
	} {
		if err := p.CreatePod(ctx, pd); err != nil {
			t.Fatal(err)
		}
	}
	p.finish("ns", "done", "uid-done", 0) // Succeeded: not in the summary
	clk.Step(10 * time.Second)

	s, err := p.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type usage struct{ cpu, cpuTime, mem uint64 }
	got := map[string]usage{}
	of := func(cpu *stats.CPUStats, mem *stats.MemoryStats) usage {
		return usage{*cpu.UsageNanoCores, *cpu.UsageCoreNanoSeconds, *mem.WorkingSetBytes}
	}
	got["node"] = of(s.Node.CPU, s.Node.Memory)
	for _, ps := range s.Pods {
		got[ps.PodRef.Name] = of(ps.CPU, ps.Memory)
		for _, c := range ps.Containers {
			got[ps.PodRef.Name+"/"+c.Name] = of(c.CPU, c.Memory)
		}
	}
	want := map[string]usage{
		"node":      {500e6, 5e9, 128 << 20},
		"busy":      {500e6, 5e9, 128 << 20},
		"busy/a":    {250e6, 2.5e9, 64 << 20},
		"busy/b":    {250e6, 2.5e9, 64 << 20},
		"quiet":     {},
		"quiet/c":   {},
		"garbled":   {},
		"garbled/d": {},
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %+v, want %+v", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("summary has %v, want %v", got, want)
	}
	if s.Node.NodeName != "sim" || *s.Node.Memory.AvailableBytes != 1<<30-128<<20 {
		t.Errorf("node %+v", s.Node)
	}
}
