package simulated

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/kubelet"
	"github.com/minik8s/minik8s/pkg/kubelet/stats"
)

// Annotations that set what each container of a simulated pod "uses", as
// quantities ("250m", "64Mi"); read when the pod starts. Without them a
// container uses nothing: nothing runs.
const (
	AnnotationCPUUsage    = "minik8s.io/simulate-cpu-usage"
	AnnotationMemoryUsage = "minik8s.io/simulate-memory-usage"
)

var _ kubelet.StatsProvider = (*Provider)(nil)

// Summary reports the usage the pods' annotations ask for, per running
// container, summed per pod and for the node (which runs nothing else).
// Cumulative cpu time is that rate since the container started.
func (p *Provider) Summary(context.Context) (*stats.Summary, error) {
	now := p.cfg.Clock.Now()
	at := metav1.NewTime(now)
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := make([]string, 0, len(p.pods))
	for k := range p.pods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var nodeCPU, nodeCPUTime, nodeMem uint64
	summary := &stats.Summary{Pods: []stats.PodStats{}}
	for _, k := range keys {
		pod := p.pods[k]
		if pod.Status.Phase != corev1.PodRunning {
			continue
		}
		cpu, mem := annotatedUsage(pod, AnnotationCPUUsage).ScaledValue(resource.Nano), annotatedUsage(pod, AnnotationMemoryUsage).Value()
		ps := stats.PodStats{
			PodRef:     stats.PodReference{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)},
			Containers: []stats.ContainerStats{},
		}
		if pod.Status.StartTime != nil {
			ps.StartTime = *pod.Status.StartTime
		}
		var podCPU, podCPUTime, podMem uint64
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.State.Running == nil {
				continue
			}
			started := cs.State.Running.StartedAt
			cpuTime := uint64(float64(cpu) * now.Sub(started.Time).Seconds())
			ps.Containers = append(ps.Containers, stats.ContainerStats{
				Name: cs.Name, StartTime: started,
				CPU:    cpuStats(at, uint64(cpu), cpuTime),
				Memory: &stats.MemoryStats{Time: at, UsageBytes: ptrTo(uint64(mem)), WorkingSetBytes: ptrTo(uint64(mem)), RSSBytes: ptrTo(uint64(mem))},
			})
			podCPU, podCPUTime, podMem = podCPU+uint64(cpu), podCPUTime+cpuTime, podMem+uint64(mem)
		}
		ps.CPU = cpuStats(at, podCPU, podCPUTime)
		ps.Memory = &stats.MemoryStats{Time: at, UsageBytes: ptrTo(podMem), WorkingSetBytes: ptrTo(podMem), RSSBytes: ptrTo(podMem)}
		summary.Pods = append(summary.Pods, ps)
		nodeCPU, nodeCPUTime, nodeMem = nodeCPU+podCPU, nodeCPUTime+podCPUTime, nodeMem+podMem
	}
	summary.Node = stats.NodeStats{
		NodeName: p.cfg.NodeName, StartTime: metav1.NewTime(p.started),
		CPU:    cpuStats(at, nodeCPU, nodeCPUTime),
		Memory: &stats.MemoryStats{Time: at, UsageBytes: ptrTo(nodeMem), WorkingSetBytes: ptrTo(nodeMem)},
	}
	if capacity, ok := p.cfg.Capacity[corev1.ResourceMemory]; ok {
		summary.Node.Memory.AvailableBytes = ptrTo(uint64(max(capacity.Value()-int64(nodeMem), 0)))
	}
	return summary, nil
}

func cpuStats(at metav1.Time, nanoCores, cpuTime uint64) *stats.CPUStats {
	return &stats.CPUStats{Time: at, UsageNanoCores: ptrTo(nanoCores), UsageCoreNanoSeconds: ptrTo(cpuTime)}
}

// annotatedUsage is the quantity in the pod's annotation; zero when it is
// missing, does not parse, or is negative.
func annotatedUsage(pod *corev1.Pod, annotation string) *resource.Quantity {
	q, err := resource.ParseQuantity(pod.Annotations[annotation])
	if err != nil || q.Sign() < 0 {
		return resource.NewQuantity(0, resource.DecimalSI)
	}
	return &q
}
