// Package deployment is Kubernetes' Deployment controller: it rolls each
// Deployment out through ReplicaSets, one per pod template.
//
// The ReplicaSet of a template is named <deployment>-<pod-template-hash>,
// the hash (computeHash) being FNV-32a of the template and the
// Deployment's status.collisionCount; the pod-template-hash label is
// added to its selector, template and labels so that the ReplicaSets of
// one Deployment never share pods. Each carries the revision annotation
// (deployment.kubernetes.io/revision, the highest on the current
// template's ReplicaSet, also copied to the Deployment) and the
// desired-replicas and max-replicas annotations it was last scaled for.
// kubectl rollout history and undo read those annotations; undo and
// restart merely change the Deployment's template, and the controller
// finds or creates the ReplicaSet for it.
//
// Strategies: RollingUpdate grows the new ReplicaSet within maxSurge
// and shrinks old ones within maxUnavailable (rollingmath.go: surge
// rounds up, unavailable down, both zero means one unavailable);
// Recreate scales every old ReplicaSet to zero and waits for their pods
// to be gone before scaling up the new one. A change of spec.replicas
// mid-rollout is spread over the ReplicaSets in proportion to their
// size. A paused Deployment is scaled but not rolled out. Old
// ReplicaSets with no pods beyond revisionHistoryLimit are deleted.
//
// Status: replicas, updatedReplicas, readyReplicas, availableReplicas,
// unavailableReplicas, terminatingReplicas, observedGeneration,
// collisionCount, and the Available, Progressing (NewReplicaSetCreated,
// FoundNewReplicaSet, ReplicaSetUpdated, NewReplicaSetAvailable,
// ProgressDeadlineExceeded, DeploymentPaused, DeploymentResumed) and
// ReplicaFailure conditions. Events: ScalingReplicaSet ("Scaled up
// replica set web-7d4b9c from 0 to 3"), SelectingAll,
// ReplicaSetCreateError.
//
// It owns ReplicaSets through controller ownerReferences, adopting
// orphans its selector matches and releasing those it stops matching,
// and writes their spec.replicas and annotations, never their pods:
// pods are the ReplicaSet controller's (pkg/controller/replicaset). The
// Deployment's spec is the user's; the controller writes its status and
// the revision annotation (through the main resource, since the status
// subresource keeps metadata as stored). It reads Deployments,
// ReplicaSets and Pods from shared informers that the caller starts.
package deployment
