// Package scheduler is the minik8s scheduler: it assigns pods that have no
// node to a node, the way kube-scheduler does, and says why when it cannot.
//
// It owns one decision, spec.nodeName of pending pods whose
// spec.schedulerName is its own, and writes it only through the pods/binding
// subresource, after naming that node on the pod's unbound
// WaitForFirstConsumer claims (volume.kubernetes.io/selected-node). It also writes the PodScheduled condition of the pods it
// fails to place (pods/status, a strategic merge patch) and the events
// Scheduled and FailedScheduling. It reads pods, nodes and what selects
// pods (namespaces, Services, controllers) through informers and never
// touches storage or another component's fields.
//
// # One scheduling attempt
//
// A pending pod goes through the filters, in this order (the first that
// rejects a node gives that node's reasons, as in Kubernetes):
//
//   - NodeUnschedulable: spec.unschedulable nodes, unless the pod tolerates
//     node.kubernetes.io/unschedulable:NoSchedule;
//   - NodeReady: a node whose Ready condition is not True counts as tainted
//     node.kubernetes.io/not-ready (False) or node.kubernetes.io/unreachable
//     (Unknown, missing) with effect NoSchedule, unless it already carries
//     that taint: what Kubernetes' node lifecycle controller would add;
//   - NodeName: a pod that names a node fits only that node;
//   - TaintToleration: NoSchedule and NoExecute taints must be tolerated;
//   - NodeAffinity: spec.nodeSelector and required node affinity (In,
//     NotIn, Exists, DoesNotExist, Gt, Lt; matchFields metadata.name);
//   - NodePorts: a hostPort (with its protocol and hostIP) used on the node;
//   - NodeResourcesFit: the pod's requests (containers, the largest init
//     container, sidecars, overhead) against allocatable minus what the
//     node's pods request, for cpu, memory, ephemeral-storage, the pod
//     count and extended resources such as nvidia.com/gpu;
//   - VolumeBinding: the pod's PersistentVolumeClaims. A claim missing,
//     being deleted, or unbound of an Immediate class keeps the pod off
//     every node ("0/2 nodes are available: pod has unbound immediate
//     PersistentVolumeClaims."); a bound claim admits the nodes its
//     volume's node affinity admits; an unbound WaitForFirstConsumer claim
//     admits the nodes where an Available volume fits it or, when its
//     class provisions, any node (only its selected node once it has
//     one). Before binding the pod the scheduler writes
//     volume.kubernetes.io/selected-node on such claims; the binder
//     (pkg/controller/volume/persistentvolume) and the provisioner act on
//     it;
//   - PodTopologySpread: each DoNotSchedule topologySpreadConstraint keeps
//     the skew (selected pods in the node's domain, plus the pod, minus the
//     fewest in any domain, or 0 below minDomains domains) within maxSkew;
//     domains are the values of the topology key on the nodes that have
//     every constraint's key and that nodeAffinityPolicy (Honor by
//     default) and nodeTaintsPolicy (Ignore by default) let count;
//   - InterPodAffinity: each required pod affinity term must select a pod
//     in the node's topology domain (the first pod of a group that selects
//     itself goes anywhere the key exists), no required anti-affinity term
//     may, and no pod there may have a required anti-affinity term that
//     selects this pod. Terms select pods of their namespaces (the pod's
//     own by default) or of those their namespaceSelector selects;
//     matchLabelKeys and mismatchLabelKeys add the pod's values.
//
// These last two look at the pods of every node: once per attempt they
// count the selected pods per topology domain, then check each node
// against the counts.
//
// Nodes that pass are scored 0-100 by the resource strategy of the
// configuration (LeastAllocated, the default; MostAllocated;
// BalancedAllocation), computed over cpu and memory as Kubernetes computes
// them, with weight 1; by PreferNoSchedule taints (weight 3), preferred
// node affinity (weight 2), ScheduleAnyway topology spread constraints
// (weight 2) and preferred inter-pod affinity (weight 2: the weights of
// the pod's preferred terms that select pods in the node's domains, minus
// those of its anti-affinity terms, plus those of the terms of the pods
// there that select it, 1 for a required affinity term). A pod without
// topologySpreadConstraints is spread as in Kubernetes by default, by
// hostname (maxSkew 3) and zone (maxSkew 5), over the pods selected by its
// Services and its ReplicaSet, StatefulSet or ReplicationController. The
// highest total wins; ties are broken at random. When no node passes, the
// message counts the reasons as Kubernetes does ("0/3 nodes are
// available: 1 node(s) had untolerated taint {k: v}, 2 Insufficient
// cpu."); minik8s does not preempt, so there is no "preemption:" part.
//
// # Queue, cache and binding
//
// Pods are keyed namespace/name in a client-go workqueue and handled one at
// a time, level-based: the pod is read from the informer when its key comes
// up. A pod that does not fit goes back with exponential back-off (1s
// doubling to 10s by default), and straight away when something that may
// make it fit happens: a node is added, or changes labels, taints,
// allocatable, unschedulable or readiness; an assigned pod is deleted or
// finishes; and, for a pod that other pods kept out (affinity,
// anti-affinity, spreading), a pod is assigned or an assigned pod's labels
// change. Binding runs in the background so the next pod is considered
// meanwhile; the bound pod is "assumed" in the node cache (its requests,
// ports and labels count on its node, for the next pods' resources,
// affinity and spreading) until the informer shows it assigned.
//
// Besides pods and nodes, the scheduler watches namespaces (for
// namespaceSelector); claims, volumes and StorageClasses (a change
// retries the pods that did not fit); Services and ReplicaSets, and
// StatefulSets and ReplicationControllers where the apiserver serves
// them (for default spreading).
//
// # Leader election
//
// With LeaderElection.Enabled, the scheduler keeps its informers warm but
// schedules only while it holds the coordination.k8s.io Lease (client-go
// leaderelection, LeaseLock), so two schedulers can run and only one binds.
// On losing the lease it stops scheduling and campaigns again.
//
// # Configuration file
//
// LoadConfig reads YAML or JSON (unknown fields are errors):
//
//	schedulerName: default-scheduler
//	score:
//	  strategy: MostAllocated        # LeastAllocated | MostAllocated | BalancedAllocation
//	  resources:                     # default cpu and memory, weight 1 each
//	  - {name: cpu, weight: 1}
//	  - {name: memory, weight: 1}
//	leaderElection:
//	  enabled: true
//	  leaseName: minik8s-scheduler
//	  leaseNamespace: kube-system
//	  leaseDuration: 15s
//	  renewDeadline: 10s
//	  retryPeriod: 2s
//	backoff: {initial: 1s, max: 10s}
//
// Bench measures scheduling throughput against an apiserver with fake
// nodes; see bench.go.
package scheduler
