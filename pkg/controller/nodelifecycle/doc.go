// Package nodelifecycle watches node health and acts on it, as
// Kubernetes' node lifecycle and taint eviction controllers do.
//
// Health: a node is alive while its kubelet renews its Lease in
// kube-node-lease or updates its Ready condition's heartbeat. When neither
// has moved for Config.NodeMonitorGracePeriod (40s by default; a node that
// never posted a status gets Config.NodeStartupGracePeriod), its Ready,
// MemoryPressure, DiskPressure and PIDPressure conditions become Unknown
// ("NodeStatusUnknown", "Kubelet stopped posting node status."), a
// NodeNotReady event is recorded, and the Ready condition of its pods
// turns False. Time is the controller's own (an injectable clock): the
// kubelet's timestamps are only compared with their previous values, so
// clock skew between machines does not matter.
//
// Taints: the node's conditions are mirrored as taints, with timeAdded:
// Ready=Unknown gives node.kubernetes.io/unreachable and Ready=False
// node.kubernetes.io/not-ready, both NoSchedule and NoExecute; memory,
// disk and PID pressure, an unavailable network and spec.unschedulable
// give their NoSchedule taints. A taint whose condition has cleared is
// removed; taints with other keys are never touched.
//
// Eviction: a pod on a node with a NoExecute taint it does not tolerate
// is deleted at once (event TaintManagerEviction); one that tolerates the
// taint for tolerationSeconds is deleted when that time has passed since
// the controller first saw it tainted, unless the taint went away first.
// The apiserver gives every pod 300s tolerations for not-ready and
// unreachable. A deleted pod on a dead node stays Terminating until its
// kubelet returns (or the node is deleted, and the pod GC removes it):
// only the kubelet knows when its containers have stopped.
//
// Not done here, unlike Kubernetes: zone disruption modes and eviction
// rate limits (a partitioned cluster evicts everything at the same
// pace). Pods bound to nodes that no longer exist are pkg/controller/podgc's,
// as in Kubernetes.
//
// It reads Nodes, Leases and Pods through informers and writes node
// status (conditions), node taints, pod status (Ready), pod deletions
// and Events, with optimistic concurrency: a conflict requeues. Health
// observations are kept in memory and start afresh, with a full grace
// period, when the controller restarts.
package nodelifecycle
