package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minik8s/minik8s/pkg/controller/podutil"
)

// rolloutRolling takes one step of a rolling update: grow the new
// ReplicaSet within maxSurge, or else shrink the old ones within
// maxUnavailable; once complete, prune the revision history.
func (c *Controller) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := c.replicaSets(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	all := append(old, newRS)

	if replicas(newRS) != desired(d) {
		size := desired(d)
		if replicas(newRS) < desired(d) {
			size = newRSNewReplicas(d, all, newRS)
		}
		scaled, _, err := c.scaleTo(ctx, newRS, size, d)
		if err != nil {
			return err
		}
		if scaled {
			return c.syncRolloutStatus(ctx, all, newRS, d)
		}
	}

	scaledDown, err := c.scaleDownOld(ctx, d, all, activeReplicaSets(old), newRS)
	if err != nil {
		return err
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	if deploymentComplete(d, &d.Status) {
		if err := c.cleanup(ctx, d, old); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, all, newRS, d)
}

// scaleDownOld shrinks the old ReplicaSets as far as availability
// allows: first their unavailable pods, then available ones down to
// spec.replicas - maxUnavailable in all.
func (c *Controller) scaleDownOld(ctx context.Context, d *appsv1.Deployment, all, old []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (bool, error) {
	if sum(old, replicas) == 0 {
		return false, nil
	}
	budget := oldScaleDownBudget(d, all, newRS)
	if budget <= 0 {
		return false, nil
	}
	scaled := false
	for _, s := range planUnhealthyCleanup(old, budget) {
		did, stored, err := c.scaleTo(ctx, s.rs, s.replicas, d)
		if err != nil {
			return scaled, err
		}
		scaled = scaled || did
		for i := range old {
			if old[i].UID == stored.UID {
				old[i] = stored
			}
		}
	}
	for _, s := range planOldScaleDown(d, append(old, newRS), old) {
		did, _, err := c.scaleTo(ctx, s.rs, s.replicas, d)
		if err != nil {
			return scaled, err
		}
		scaled = scaled || did
	}
	return scaled, nil
}

// rolloutRecreate takes one step of a Recreate rollout: all old
// ReplicaSets to zero, wait until none of their pods runs, then the new
// ReplicaSet at full size.
func (c *Controller) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, pods map[types.UID][]*corev1.Pod) error {
	newRS, old, err := c.replicaSets(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	all := append(old, newRS)

	scaledDown := false
	for _, rs := range activeReplicaSets(old) {
		did, _, err := c.scaleTo(ctx, rs, 0, d)
		if err != nil {
			return err
		}
		scaledDown = scaledDown || did
	}
	if scaledDown || oldPodsRunning(newRS, old, pods) {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	if newRS == nil {
		if newRS, old, err = c.replicaSets(ctx, d, rsList, true); err != nil {
			return err
		}
		all = append(old, newRS)
	}
	if _, _, err := c.scaleTo(ctx, newRS, desired(d), d); err != nil {
		return err
	}
	if deploymentComplete(d, &d.Status) {
		if err := c.cleanup(ctx, d, old); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, all, newRS, d)
}

// oldPodsRunning: an old ReplicaSet still reports pods, or one of its
// pods has not finished (terminating ones included).
func oldPodsRunning(newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet, pods map[types.UID][]*corev1.Pod) bool {
	if sum(old, statusReplicas) > 0 {
		return true
	}
	for uid, ps := range pods {
		if newRS != nil && newRS.UID == uid {
			continue
		}
		for _, p := range ps {
			if !podutil.IsTerminal(p) {
				return true
			}
		}
	}
	return false
}
