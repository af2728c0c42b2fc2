package deployment

import (
	"context"
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
)

// Condition reasons, as Kubernetes' Deployment controller sets them
// (kubectl rollout status looks for ReasonProgressDeadlineExceeded).
const (
	ReasonNewReplicaSetCreated       = "NewReplicaSetCreated"
	ReasonFoundNewReplicaSet         = "FoundNewReplicaSet"
	ReasonReplicaSetUpdated          = "ReplicaSetUpdated"
	ReasonNewReplicaSetAvailable     = "NewReplicaSetAvailable"
	ReasonProgressDeadlineExceeded   = "ProgressDeadlineExceeded"
	ReasonReplicaSetCreateError      = "ReplicaSetCreateError"
	ReasonDeploymentPaused           = "DeploymentPaused"
	ReasonDeploymentResumed          = "DeploymentResumed"
	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
)

func newCondition(t appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) appsv1.DeploymentCondition {
	ts := metav1.NewTime(now)
	return appsv1.DeploymentCondition{Type: t, Status: status, Reason: reason, Message: message, LastUpdateTime: ts, LastTransitionTime: ts}
}

// hasProgressDeadline: progressDeadlineSeconds is set and not "never"
// (MaxInt32).
func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

// deploymentComplete: every replica runs the new template and is
// available, and the status is for the current spec.
func deploymentComplete(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	return st.UpdatedReplicas == desired(d) && st.Replicas == desired(d) && st.AvailableReplicas == desired(d) &&
		st.ObservedGeneration >= d.Generation
}

// deploymentProgressing: st moved forward from the Deployment's status:
// more updated, ready or available replicas, or fewer old ones.
func deploymentProgressing(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	old := d.Status
	return st.UpdatedReplicas > old.UpdatedReplicas ||
		st.Replicas-st.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		st.ReadyReplicas > old.ReadyReplicas ||
		st.AvailableReplicas > old.AvailableReplicas
}

// deploymentTimedOut: no progress for progressDeadlineSeconds since the
// Progressing condition was last updated.
func deploymentTimedOut(d *appsv1.Deployment, st *appsv1.DeploymentStatus, now time.Time) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := kit.GetCondition(st.Conditions, appsv1.DeploymentProgressing)
	if c == nil || c.Reason == ReasonNewReplicaSetAvailable {
		return false
	}
	if c.Reason == ReasonProgressDeadlineExceeded {
		return true
	}
	deadline := c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
	return deadline.Before(now)
}

// calculateStatus is the Deployment's status from its ReplicaSets',
// with the Available condition; other conditions carry over.
func calculateStatus(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment, now time.Time) appsv1.DeploymentStatus {
	available := sum(all, availableReplicas)
	st := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            sum(all, statusReplicas),
		UpdatedReplicas:     sum([]*appsv1.ReplicaSet{newRS}, statusReplicas),
		ReadyReplicas:       sum(all, readyReplicas),
		AvailableReplicas:   available,
		UnavailableReplicas: max(sum(all, replicas)-available, 0),
		CollisionCount:      d.Status.CollisionCount,
		TerminatingReplicas: terminatingReplicas(all),
		Conditions:          append([]appsv1.DeploymentCondition(nil), d.Status.Conditions...),
	}
	if available >= desired(d)-maxUnavailable(d) {
		st.Conditions = kit.SetCondition(st.Conditions, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumReplicasAvailable,
			"Deployment has minimum availability.", now))
	} else {
		st.Conditions = kit.SetCondition(st.Conditions, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, ReasonMinimumReplicasUnavailable,
			"Deployment does not have minimum availability.", now))
	}
	return st
}

// terminatingReplicas sums the ReplicaSets' terminatingReplicas; nil
// when none of them reports it.
func terminatingReplicas(all []*appsv1.ReplicaSet) *int32 {
	var n *int32
	for _, rs := range all {
		if rs != nil && rs.Status.TerminatingReplicas != nil {
			n = ptr.To(ptr.Deref(n, 0) + *rs.Status.TerminatingReplicas)
		}
	}
	return n
}

// replicaFailures are the ReplicaFailure conditions of the new
// ReplicaSet, or failing that of the old ones, as Deployment conditions.
func replicaFailures(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []appsv1.DeploymentCondition {
	collect := func(rss []*appsv1.ReplicaSet) []appsv1.DeploymentCondition {
		var out []appsv1.DeploymentCondition
		for _, rs := range rss {
			if rs == nil {
				continue
			}
			for _, c := range rs.Status.Conditions {
				if c.Type == appsv1.ReplicaSetReplicaFailure {
					out = append(out, appsv1.DeploymentCondition{
						Type: appsv1.DeploymentReplicaFailure, Status: c.Status, Reason: c.Reason, Message: c.Message,
						LastUpdateTime: c.LastTransitionTime, LastTransitionTime: c.LastTransitionTime,
					})
				}
			}
		}
		return out
	}
	if out := collect([]*appsv1.ReplicaSet{newRS}); len(out) > 0 {
		return out
	}
	return collect(all)
}

// rolloutStatus is the Deployment's status during a rollout: the counts
// and Available, plus Progressing (progress made, complete, or past the
// deadline) and ReplicaFailure.
func rolloutStatus(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment, now time.Time) appsv1.DeploymentStatus {
	st := calculateStatus(all, newRS, d, now)
	if !hasProgressDeadline(d) {
		st.Conditions = kit.RemoveCondition(st.Conditions, appsv1.DeploymentProgressing)
	}
	cur := kit.GetCondition(st.Conditions, appsv1.DeploymentProgressing)
	complete := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == ReasonNewReplicaSetAvailable
	if hasProgressDeadline(d) && !complete {
		subject := fmt.Sprintf("Deployment %q", d.Name)
		if newRS != nil {
			subject = fmt.Sprintf("ReplicaSet %q", newRS.Name)
		}
		switch {
		case deploymentComplete(d, &st):
			st.Conditions = kit.SetCondition(st.Conditions, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetAvailable,
				subject+" has successfully progressed.", now))
		case deploymentProgressing(d, &st):
			// Progress refreshes the condition's update time, which is
			// what the deadline counts from.
			c := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated, subject+" is progressing.", now)
			if cur != nil && cur.Status == corev1.ConditionTrue {
				c.LastTransitionTime = cur.LastTransitionTime
			}
			st.Conditions = kit.RemoveCondition(st.Conditions, appsv1.DeploymentProgressing)
			st.Conditions = append(st.Conditions, c)
		case deploymentTimedOut(d, &st, now):
			st.Conditions = kit.SetCondition(st.Conditions, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonProgressDeadlineExceeded,
				subject+" has timed out progressing.", now))
		}
	}
	if failures := replicaFailures(all, newRS); len(failures) > 0 {
		st.Conditions = kit.SetCondition(st.Conditions, failures[0])
	} else {
		st.Conditions = kit.RemoveCondition(st.Conditions, appsv1.DeploymentReplicaFailure)
	}
	return st
}

// stuckRecheck is when a Deployment whose status did not change must be
// looked at again to notice its progress deadline passing; ok is false
// when no check is due.
func stuckRecheck(d *appsv1.Deployment, st appsv1.DeploymentStatus, now time.Time) (after time.Duration, ok bool) {
	c := kit.GetCondition(st.Conditions, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(d) || c == nil {
		return 0, false
	}
	if deploymentComplete(d, &st) || c.Reason == ReasonProgressDeadlineExceeded {
		return 0, false
	}
	return c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(now), true
}

// syncRolloutStatus writes rolloutStatus unless the Deployment has it
// already; then it schedules the deadline check.
func (c *Controller) syncRolloutStatus(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	now := c.Clock.Now()
	st := rolloutStatus(all, newRS, d, now)
	if equality.Semantic.DeepEqual(d.Status, st) {
		if after, ok := stuckRecheck(d, st, now); ok {
			key := d.Namespace + "/" + d.Name
			if after < time.Second {
				c.Queue.AddRateLimited(key)
			} else {
				c.Queue.AddAfter(key, after)
			}
		}
		return nil
	}
	d.Status = st
	return c.updateStatus(ctx, d)
}

// syncDeploymentStatus writes calculateStatus unless the Deployment has
// it already (scaling and paused Deployments: no Progressing changes).
func (c *Controller) syncDeploymentStatus(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	st := calculateStatus(all, newRS, d, c.Clock.Now())
	if equality.Semantic.DeepEqual(d.Status, st) {
		return nil
	}
	d.Status = st
	return c.updateStatus(ctx, d)
}
