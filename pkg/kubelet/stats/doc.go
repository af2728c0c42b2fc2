// Package stats is the kubelet's Summary API (GET /stats/summary): the
// types, JSON-compatible with Kubernetes' k8s.io/kubelet/pkg/apis/stats/v1alpha1
// for the fields minik8s fills (cpu and memory of the node, its pods and
// their containers), and CPUTracker, which turns the cumulative cpu time a
// cgroup reports into the usage rate (usageNanoCores) the Summary carries.
//
// Providers fill a Summary (kubelet.StatsProvider); the kubelet serves it;
// the apiserver's metrics.k8s.io API reads it. The package holds no state
// of its own beyond a tracker its owner creates, and touches no files:
// reading cgroups is the runtime's job.
package stats
