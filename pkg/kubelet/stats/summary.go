package stats

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The types below are the subset of Kubernetes' Summary API
// (k8s.io/kubelet/pkg/apis/stats/v1alpha1) that minik8s fills, with the
// same JSON names, so the real metrics-server could read a minik8s kubelet
// and the apiserver could read a real one.

// Summary is what GET /stats/summary returns: the node and its pods.
type Summary struct {
	Node NodeStats  `json:"node"`
	Pods []PodStats `json:"pods"`
}

// NodeStats is the whole node's usage.
type NodeStats struct {
	NodeName string `json:"nodeName"`
	// StartTime is when the node (for a machine, its boot) started.
	StartTime metav1.Time  `json:"startTime"`
	CPU       *CPUStats    `json:"cpu,omitempty"`
	Memory    *MemoryStats `json:"memory,omitempty"`
}

// PodStats is one pod's usage: its cgroup as a whole (containers and
// sandbox) and each running container's.
type PodStats struct {
	PodRef PodReference `json:"podRef"`
	// StartTime is when the pod's sandbox started.
	StartTime  metav1.Time      `json:"startTime"`
	Containers []ContainerStats `json:"containers"`
	CPU        *CPUStats        `json:"cpu,omitempty"`
	Memory     *MemoryStats     `json:"memory,omitempty"`
}

// ContainerStats is one running container's usage.
type ContainerStats struct {
	// Name is the container's name in the pod spec.
	Name      string       `json:"name"`
	StartTime metav1.Time  `json:"startTime"`
	CPU       *CPUStats    `json:"cpu,omitempty"`
	Memory    *MemoryStats `json:"memory,omitempty"`
}

// PodReference names a pod.
type PodReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
}

// CPUStats is cpu use at Time.
type CPUStats struct {
	Time metav1.Time `json:"time"`
	// UsageNanoCores is the cpu use (all cores together) averaged over the
	// sample window, in billionths of a core: 250000000 is 250m.
	UsageNanoCores *uint64 `json:"usageNanoCores,omitempty"`
	// UsageCoreNanoSeconds is the cumulative cpu time since the cgroup (or
	// node) started.
	UsageCoreNanoSeconds *uint64 `json:"usageCoreNanoSeconds,omitempty"`
}

// MemoryStats is memory use at Time.
type MemoryStats struct {
	Time metav1.Time `json:"time"`
	// AvailableBytes is what is left before the limit (for the node: the
	// kernel's MemAvailable). Omitted without a limit.
	AvailableBytes *uint64 `json:"availableBytes,omitempty"`
	// UsageBytes is all memory in use, page cache included.
	UsageBytes *uint64 `json:"usageBytes,omitempty"`
	// WorkingSetBytes is usage less inactive page cache: what `kubectl
	// top` shows and the kubelet evicts on.
	WorkingSetBytes *uint64 `json:"workingSetBytes,omitempty"`
	// RSSBytes is anonymous memory.
	RSSBytes *uint64 `json:"rssBytes,omitempty"`
}
