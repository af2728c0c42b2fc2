// Package disruption is Kubernetes' disruption controller: it keeps each
// PodDisruptionBudget's status (expected and healthy pods, the
// disruptions allowed now, the DisruptionAllowed condition) from the pods
// its selector picks and, for percentages and maxUnavailable, the scale
// of the controllers that own them; and it forgets the evictions
// recorded in status.disruptedPods once their pods are going, or after
// DeletionTimeout when they never went.
package disruption
