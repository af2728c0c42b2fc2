// Package ttlafterfinished runs Kubernetes' TTL-after-finished controller
// ("ttl-after-finished" in kube-controller-manager): it deletes a batch/v1
// Job spec.ttlSecondsAfterFinished seconds after the Job finished
// (Complete or Failed), with background propagation so that garbage
// collection removes the Job's Pods.
//
// It reads Jobs through an informer, waits by requeueing each Job for the
// moment it expires (no polling), and checks the Job once more against
// the apiserver before deleting it, with a UID precondition, so a Job
// whose TTL was just changed or that was recreated under the same name is
// not deleted by mistake. It touches nothing but finished Jobs that have
// a TTL.
package ttlafterfinished
