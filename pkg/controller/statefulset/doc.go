// Package statefulset is Kubernetes' StatefulSet controller: it keeps
// spec.replicas pods with a stable identity, each with its own
// PersistentVolumeClaims, and rolls template changes out one pod at a
// time.
//
// Identity: the pod of ordinal i (from spec.ordinals.start) is named
// <set>-<i>, its hostname is its name and its subdomain spec.serviceName
// (so a headless Service of that name gives it the DNS name
// <set>-<i>.<service>.<ns>.svc), and it carries the labels
// statefulset.kubernetes.io/pod-name, apps.kubernetes.io/pod-index and
// controller-revision-hash (the name of the ControllerRevision it was made
// from). A pod that fails, finishes or is deleted comes back under the same
// name, after the old one is gone.
//
// Storage: for each spec.volumeClaimTemplates entry the pod of ordinal i
// gets the claim <template>-<set>-<i>, labelled with the selector's
// matchLabels, created before the pod and mounted in place of the
// template's volume of that name. Claims outlive their pods; the
// persistentVolumeClaimRetentionPolicy decides whether they outlive the
// set too: whenDeleted Delete gives each claim an ownerReference to the
// StatefulSet, whenScaled Delete gives the claims of scaled-down ordinals
// one to their pod, and the garbage collector does the rest. Retain
// removes those references.
//
// Ordering: with podManagementPolicy OrderedReady pods are created in
// ordinal order, each only once every lower one is Running and Ready (and
// available after minReadySeconds), and removed on scale-down from the
// highest ordinal, one at a time, each once the others are healthy.
// Parallel creates and deletes them all at once.
//
// Updates: every template is recorded as a ControllerRevision (package
// history); status.updateRevision is the spec's, status.currentRevision
// the one the set had before the update completed. RollingUpdate deletes
// the pods not at the update revision from the highest ordinal down to the
// partition, one at a time, waiting for each replacement to be Ready;
// pods below the partition are recreated at the current revision. OnDelete
// leaves pods alone: a pod the user deletes comes back at the update
// revision. Revisions beyond spec.revisionHistoryLimit that no pod uses
// are deleted.
//
// It owns the pods it controls (adopting orphans its selector matches,
// releasing its pods that stopped matching), their claims' ownerReferences
// and its ControllerRevisions, and writes StatefulSet status (replicas,
// readyReplicas, currentReplicas, updatedReplicas, availableReplicas,
// currentRevision, updateRevision, observedGeneration, collisionCount)
// through the status subresource, and Events (SuccessfulCreate "create
// Pod web-0 in StatefulSet web successful", SuccessfulDelete, FailedCreate,
// ...). It never writes a StatefulSet's spec, and never deletes a claim:
// the garbage collector does, by the references this controller set.
//
// It reads StatefulSets, Pods, ControllerRevisions and claims from shared
// informers that the caller starts, and writes only through the API.
package statefulset
