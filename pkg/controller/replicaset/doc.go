// Package replicaset is Kubernetes' ReplicaSet controller: it keeps
// spec.replicas active pods (not terminating, not Succeeded or Failed)
// matching each ReplicaSet's selector.
//
// It owns the pods it controls, and only them: it creates pods from
// spec.template with a controller ownerReference (blockOwnerDeletion
// true), adopts orphans whose labels match the selector (never while the
// ReplicaSet is being deleted), releases its pods whose labels stopped
// matching (removing its ownerReference by patch), replaces pods that
// failed or went away, and deletes the surplus in Kubernetes' order (see
// podsToDelete). Pods controlled by someone else are never touched.
//
// Like Kubernetes it keeps expectations: after creating or deleting pods
// it does not act on a ReplicaSet again until the informer has seen
// those writes (or five minutes passed), so a stale cache never makes it
// overshoot. Creations go in slow-start batches (1, 2, 4, ...) so that a
// quota or admission error costs one failed call, not hundreds.
//
// It writes ReplicaSet status (replicas, fullyLabeledReplicas,
// readyReplicas, availableReplicas after minReadySeconds,
// terminatingReplicas, observedGeneration and the ReplicaFailure
// condition) through the status subresource, and Events
// (SuccessfulCreate, FailedCreate, SuccessfulDelete, FailedDelete). It
// never writes a ReplicaSet's spec: scaling is the business of users,
// `kubectl scale` (the scale subresource) and the Deployment controller.
//
// It reads ReplicaSets and Pods from shared informers that the caller
// starts, and writes only through the API. It reaches the kind it manages
// only through a Source: ReplicaSets (New), or ReplicationControllers
// converted to ReplicaSets (package replication, NewFor), as Kubernetes
// runs its ReplicationManager.
package replicaset
