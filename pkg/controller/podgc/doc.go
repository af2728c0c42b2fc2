// Package podgc is the part of Kubernetes' pod garbage collector that
// minik8s needs: it removes pods no kubelet will ever finish.
//
//   - Orphaned pods: a pod bound to a node that no longer exists. Its
//     kubelet is gone, so nobody will stop its containers or delete it,
//     and a graceful delete would leave it Terminating forever. Once a
//     fresh read from the API (not the node cache, which may lag behind a
//     node that has just joined) confirms the node is gone, the pod is
//     marked Failed with the DisruptionTarget condition (reason
//     DeletionByPodGC) and deleted with grace period 0, as Kubernetes
//     does. DaemonSet and ReplicaSet pods of a removed node go this way.
//   - Unscheduled terminating pods: a pod being deleted that was never
//     bound has no kubelet to finish it either; it is deleted at once.
//
// Not done, unlike Kubernetes: deleting the oldest finished pods beyond
// --terminated-pod-gc-threshold (12500), and pods on nodes tainted
// out-of-service.
//
// It looks at a pod when it changes and, for every pod on it, when a node
// is deleted; a sweep every Config.Period catches what events missed. It
// reads Pods and Nodes from informers and writes pod status and pod
// deletions only.
package podgc
