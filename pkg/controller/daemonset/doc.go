// Package daemonset is Kubernetes' DaemonSet controller: it keeps one pod
// of each DaemonSet on every node the DaemonSet's pod template may run
// on, and rolls a changed template out node by node.
//
// Eligibility: a node should run the pod when the template's nodeName (if
// any) names it, its nodeSelector and required node affinity match the
// node (pkg/scheduler's NodeAffinity filter), and the pod tolerates the
// node's NoSchedule and NoExecute taints (its TaintToleration filter).
// Every daemon pod carries, as in Kubernetes, tolerations the user need
// not write: node.kubernetes.io/not-ready and unreachable (NoExecute, no
// time limit, so node trouble never evicts it), disk-pressure,
// memory-pressure, pid-pressure and unschedulable (NoSchedule), and
// network-unavailable (NoSchedule) for hostNetwork pods. A pod already on
// a node that stops matching only because of a NoSchedule taint keeps
// running; any other mismatch deletes it.
//
// Placement: like Kubernetes, the controller does not bind pods itself.
// Each pod gets a required node affinity, matchFields metadata.name In
// [node] (replacing the template's required terms, which were checked
// above), and the scheduler binds it, so resources and host ports are
// still checked; a pod that does not fit stays Pending with the
// scheduler's reason. Pods are named <daemonset>-<random>, controlled by
// the DaemonSet, and labelled controller-revision-hash (the current
// ControllerRevision) and pod-template-generation (the DaemonSet's
// deprecated.daemonset.template.generation annotation, kept by the
// apiserver).
//
// Repairs: a node without a pod gets one (without surge, only once its
// previous pod, terminating or failed, is gone, so two daemons never
// share its ports); surplus pods on a node are deleted (the oldest
// stays); a Failed or Succeeded pod is deleted, with a
// per-node back-off (1s doubling to 15m, event FailedDaemonPod) so a node
// that keeps rejecting the pod is not hammered; an unscheduled pod whose
// node is gone is deleted. Pods bound to a deleted node are the pod
// garbage collector's (pkg/controller/podgc), as in Kubernetes.
//
// Updates: with RollingUpdate and maxSurge 0, old pods are deleted while
// fewer than maxUnavailable (of desiredNumberScheduled, rounded up) nodes
// lack an available pod, and the repair loop creates the new ones; with
// maxSurge, a new pod is created next to an old one on at most maxSurge
// nodes at once and the old one is deleted once the new one is available.
// An old pod that is not available is replaced at once in both modes.
// With OnDelete, only pods the user deletes are recreated from the new
// template.
//
// History: each distinct template is a ControllerRevision (package
// history) named <daemonset>-<hash>, labelled with the template's labels
// and its hash, carrying the DaemonSet's annotations (so `kubectl rollout
// history` shows kubernetes.io/change-cause). Going back to an earlier
// template (`kubectl rollout undo`) renumbers that revision as the
// newest. Revisions no pod uses are deleted beyond revisionHistoryLimit.
//
// Status: desiredNumberScheduled, currentNumberScheduled,
// numberMisscheduled, numberReady, numberAvailable (ready for
// minReadySeconds), numberUnavailable, updatedNumberScheduled,
// observedGeneration and collisionCount, through the status subresource;
// like Kubernetes it sets no conditions. Events: SuccessfulCreate,
// FailedCreate, SuccessfulDelete, FailedDelete, FailedDaemonPod and
// SelectingAll.
//
// Like the ReplicaSet controller it adopts orphan pods and revisions its
// selector matches, releases those it no longer matches, and keeps
// expectations so a cache that lags its own writes never makes it create
// twice. It reads DaemonSets, Pods, Nodes and ControllerRevisions from
// shared informers and writes only through the API.
package daemonset
