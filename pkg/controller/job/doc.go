// Package job runs Kubernetes' Job controller ("job" in
// kube-controller-manager): it creates and deletes the Pods of batch/v1
// Jobs and owns the Jobs' status.
//
// For every Job it keeps as many Pods running as the spec asks
// (parallelism, bounded by the completions still missing; none while
// suspended), in NonIndexed or Indexed completion mode. Indexed Pods get
// the batch.kubernetes.io/job-completion-index annotation and label, the
// hostname <job>-<index>, and a JOB_COMPLETION_INDEX environment variable
// taken from that annotation through the downward API.
//
// Pods carry a controller ownerReference, the batch.kubernetes.io/
// controller-uid and job-name labels (and their legacy unprefixed forms)
// unless the Job uses a manual selector, and the
// batch.kubernetes.io/job-tracking finalizer. A finished Pod is first
// written into status.uncountedTerminatedPods, then its finalizer is
// removed, then it moves into status.succeeded or status.failed: counts
// survive the Pod's deletion and no Pod is counted twice.
//
// Failed Pods are replaced after an exponential back-off (10s doubling,
// capped at 6 minutes; Config changes both). A Job fails with reason
// BackoffLimitExceeded once more Pods failed than spec.backoffLimit (or,
// for restartPolicy OnFailure, once its running Pods restarted that many
// times), and with DeadlineExceeded once it ran longer than
// spec.activeDeadlineSeconds. As in recent Kubernetes the interim
// condition (FailureTarget, SuccessCriteriaMet) comes first; the terminal
// one (Failed, Complete) follows once no Pod of the Job is left running.
//
// spec.podFailurePolicy decides, rule by rule, what a failed Pod does:
// FailJob fails the Job (reason PodFailurePolicy), Ignore keeps it out of
// the failure counts, Count counts it, FailIndex fails its index. With
// backoffLimitPerIndex an Indexed Job counts failures per index (the
// batch.kubernetes.io/job-index-failure-count annotation, carried from a
// failed Pod to its replacement, which waits out a per-index back-off);
// an index past its limit goes into status.failedIndexes, and the Job
// fails with MaxFailedIndexesExceeded or, once every index is done,
// FailedIndexes. spec.successPolicy completes an Indexed Job (reason
// SuccessPolicy) once a rule's indexes or count succeeded; the Pods still
// running are deleted.
//
// The controller reads Jobs and Pods through informers and writes through
// the API with optimistic concurrency (a conflict requeues). It never
// deletes Jobs: ttlSecondsAfterFinished belongs to the ttlafterfinished
// controller, and the cleanup of a deleted Job's Pods to garbage
// collection. It ignores Jobs whose spec.managedBy names another
// controller.
package job
