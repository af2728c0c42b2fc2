// Package replication is Kubernetes' ReplicationManager: it keeps
// spec.replicas pods of each core/v1 ReplicationController, exactly as
// the ReplicaSet controller does for ReplicaSets, because it is that
// controller (package replicaset) run over a replicaset.Source that
// converts ReplicationControllers to ReplicaSets when it reads them and
// back when it writes their status. Nothing of the replica logic is
// repeated here.
//
// What differs is only the kind: the pods' controller references name
// ReplicationController (apiVersion v1), Events are recorded on the
// ReplicationController, by the "replication-controller" component, the
// map selector becomes a ReplicaSet's matchLabels (it may change: the
// controller then releases the pods it no longer matches and adopts
// those it does), and ReplicationControllers have no
// status.terminatingReplicas. The ReplicaFailure condition is the
// ReplicaSet's, under the same type, reason and message.
package replication
