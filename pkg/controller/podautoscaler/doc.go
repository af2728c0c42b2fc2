// Package podautoscaler is the HorizontalPodAutoscaler controller
// (autoscaling/v2): it sets the replicas of each HPA's target — anything
// with a /scale subresource, such as a Deployment or a ReplicaSet — from
// the resource usage of the target's pods, as Kubernetes'
// kube-controller-manager does.
//
// Every Config.SyncPeriod (15s), and at once when its spec changes, an HPA
// is evaluated:
//
//   - The target's scale gives the current replicas and the pod selector.
//     A target scaled to 0 turns the HPA off (ScalingActive False,
//     ScalingDisabled); one outside [minReplicas, maxReplicas] is brought
//     back within.
//   - Each metric proposes a replica count; the largest wins. Resource and
//     ContainerResource metrics (cpu, memory) are supported, with targets
//     Utilization (percent of the pods' requests; a pod without a request
//     for the resource fails the metric, FailedGetResourceMetric) and
//     AverageValue. Pods, Object and External metrics need APIs minik8s
//     does not serve, and fail. A metric's proposal is
//     ceil(ready pods × current/target), unchanged while current/target
//     is within 1±Config.Tolerance (0.1). Only running pods with a sample
//     count, not those being deleted or finished; for cpu, as in
//     Kubernetes, readiness matters too: a pod that started less than
//     Config.CPUInitializationPeriod (5m) ago counts once it is ready and
//     has been measured over a whole metrics window since, an older one
//     unless it has never been ready. When pods lack samples or are
//     unready the count is recomputed conservatively: on a scale-down,
//     missing pods count as using 100% of their request; on a scale-up,
//     missing and unready pods count as using nothing; a direction that
//     flips means no change (replicas.go).
//   - The HPA's behavior (behavior.go) then stabilizes the proposal — the
//     lowest recommendation of the scale-up window (default 0) and the
//     highest of the scale-down window (default
//     Config.DownscaleStabilization, 5m) bound it — and limits the rate of
//     change by its Pods and Percent policies over their periods,
//     selectPolicy Max, Min or Disabled. Without a behavior, Kubernetes'
//     defaults apply: up by max(4 pods, 100%) per 15s, down by 100% per
//     15s.
//   - The new count is written through the target's /scale (event
//     SuccessfulRescale, "New size: N; reason: ..."), and the HPA's
//     status: current and desired replicas, current metrics (one per
//     metric, in the spec's order), lastScaleTime, observedGeneration and
//     the conditions AbleToScale, ScalingActive and ScalingLimited.
//
// The recommendations and scale events behind the windows and policies
// live in memory, per HPA, as in Kubernetes; after a restart the first
// evaluation records the current replica count, so a restart cannot skip
// a scale-down window. Hence exactly one instance may run at a time: run
// it under the controller manager's leader election.
//
// It reads HPAs and Pods through informers, usage through a MetricsSource
// (the metrics.k8s.io API in production, a fake in tests), and writes
// only the targets' /scale, the HPAs' /status (when it changed) and
// Events. It never creates or deletes pods: the target's own controller
// does, from the replicas set here.
package podautoscaler
