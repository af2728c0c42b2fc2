package deployment

import (
	"math"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// This file is the arithmetic of rolling updates and proportional
// scaling, as pure functions of the objects' current state: the
// controller turns their answers into ReplicaSet writes.

// resolveFenceposts turns maxSurge and maxUnavailable (a count or a
// percentage of desired) into pod counts. A surge percentage rounds up
// and an unavailable one rounds down, so that a small Deployment can
// still move; should both come out zero, one pod may be unavailable.
func resolveFenceposts(maxSurge, maxUnavailable *intstr.IntOrString, desired int32) (surge, unavailable int32) {
	zero := intstr.FromInt32(0)
	s, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxSurge, zero), int(desired), true)
	if err != nil {
		s = 0
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxUnavailable, zero), int(desired), false)
	if err != nil {
		u = 0
	}
	if s == 0 && u == 0 {
		// Validation forbids both being 0; percentages can still round
		// to it.
		u = 1
	}
	return int32(s), int32(u)
}

func isRollingUpdate(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType || d.Spec.Strategy.Type == ""
}

func rollingParams(d *appsv1.Deployment) (surge, unavailable *intstr.IntOrString) {
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		return ru.MaxSurge, ru.MaxUnavailable
	}
	// The apiserver's defaults.
	s, u := intstr.FromString("25%"), intstr.FromString("25%")
	return &s, &u
}

// maxSurge is how many pods a rolling update may run above
// spec.replicas (0 for Recreate).
func maxSurge(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) {
		return 0
	}
	s, u := rollingParams(d)
	surge, _ := resolveFenceposts(s, u, desired(d))
	return surge
}

// maxUnavailable is how many of spec.replicas may be unavailable during
// a rolling update, at most spec.replicas (0 for Recreate).
func maxUnavailable(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) || desired(d) == 0 {
		return 0
	}
	s, u := rollingParams(d)
	_, unavailable := resolveFenceposts(s, u, desired(d))
	return min(unavailable, desired(d))
}

// newRSNewReplicas is the size the new ReplicaSet may grow to now: for
// a rolling update, up to spec.replicas while all ReplicaSets together
// stay within spec.replicas + maxSurge; for Recreate, spec.replicas.
func newRSNewReplicas(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	if !isRollingUpdate(d) {
		return desired(d)
	}
	current := sum(all, replicas)
	maxTotal := desired(d) + maxSurge(d)
	if current >= maxTotal {
		return replicas(newRS)
	}
	up := min(maxTotal-current, desired(d)-replicas(newRS))
	return replicas(newRS) + max(up, 0)
}

// oldScaleDownBudget is how many old pods a rolling update may remove
// now: every pod above the minimum available, less the new ReplicaSet's
// pods that are not available yet (they may never become so, and must
// not be counted on).
func oldScaleDownBudget(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	minAvailable := desired(d) - maxUnavailable(d)
	var newUnavailable int32
	if newRS != nil {
		newUnavailable = replicas(newRS) - newRS.Status.AvailableReplicas
	}
	return sum(all, replicas) - minAvailable - newUnavailable
}

// rsScale is a ReplicaSet and the spec.replicas it should get.
type rsScale struct {
	rs       *appsv1.ReplicaSet
	replicas int32
}

// planUnhealthyCleanup scales down, oldest first, the old ReplicaSets'
// unavailable pods, at most budget of them: removing them costs no
// availability.
func planUnhealthyCleanup(old []*appsv1.ReplicaSet, budget int32) []rsScale {
	var plan []rsScale
	var total int32
	for _, rs := range byAge(old) {
		if total >= budget {
			break
		}
		unhealthy := replicas(rs) - rs.Status.AvailableReplicas
		if replicas(rs) == 0 || unhealthy <= 0 {
			continue
		}
		down := min(budget-total, unhealthy)
		plan = append(plan, rsScale{rs, replicas(rs) - down})
		total += down
	}
	return plan
}

// planOldScaleDown scales down old ReplicaSets, oldest first, by as
// many pods as are available above spec.replicas - maxUnavailable.
func planOldScaleDown(d *appsv1.Deployment, all, old []*appsv1.ReplicaSet) []rsScale {
	minAvailable := desired(d) - maxUnavailable(d)
	available := sum(all, availableReplicas)
	if available <= minAvailable {
		return nil
	}
	budget := available - minAvailable
	var plan []rsScale
	var total int32
	for _, rs := range byAge(old) {
		if total >= budget {
			break
		}
		if replicas(rs) == 0 {
			continue
		}
		down := min(replicas(rs), budget-total)
		plan = append(plan, rsScale{rs, replicas(rs) - down})
		total += down
	}
	return plan
}

// Scaling directions, as ScalingReplicaSet events word them.
const (
	scaleUp   = "up"
	scaleDown = "down"
)

// planProportionalScale spreads a change of spec.replicas in the middle
// of a rolling update over the active ReplicaSets in proportion to their
// size (measured against the max-replicas each was last scaled for), so
// that neither the old nor the new template gains from it. The rounding
// leftover goes to the largest ReplicaSet (the newest among equals when
// growing, the oldest when shrinking). Every active ReplicaSet is in the
// plan, unchanged ones too: their replica annotations still need the
// new size. The direction is "" when the total is right already.
func planProportionalScale(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) ([]rsScale, string) {
	active := activeReplicaSets(rss)
	var allowed int32
	if desired(d) > 0 {
		allowed = desired(d) + maxSurge(d)
	}
	toAdd := allowed - sum(active, replicas)
	var direction string
	switch {
	case toAdd > 0:
		direction = scaleUp
		slices.SortFunc(active, func(a, b *appsv1.ReplicaSet) int {
			if replicas(a) != replicas(b) {
				return int(replicas(b) - replicas(a))
			}
			return olderFirst(b, a)
		})
	case toAdd < 0:
		direction = scaleDown
		slices.SortFunc(active, func(a, b *appsv1.ReplicaSet) int {
			if replicas(a) != replicas(b) {
				return int(replicas(b) - replicas(a))
			}
			return olderFirst(a, b)
		})
	}
	plan := make([]rsScale, len(active))
	var added int32
	for i, rs := range active {
		var p int32
		if toAdd != 0 {
			p = proportion(rs, d, toAdd, added)
			added += p
		}
		plan[i] = rsScale{rs, replicas(rs) + p}
	}
	if toAdd != 0 && len(plan) > 0 {
		plan[0].replicas = max(plan[0].replicas+toAdd-added, 0)
	}
	return plan, direction
}

// proportion is rs's share of toAdd, bounded by what is left of it.
func proportion(rs *appsv1.ReplicaSet, d *appsv1.Deployment, toAdd, added int32) int32 {
	if replicas(rs) == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	share := fraction(rs, d)
	left := toAdd - added
	if toAdd > 0 {
		return min(share, left)
	}
	return max(share, left)
}

// fraction is how much rs should change so that it keeps its share of
// the Deployment: its size scaled from the max-replicas it was sized for
// to the Deployment's spec.replicas + maxSurge now.
func fraction(rs *appsv1.ReplicaSet, d *appsv1.Deployment) int32 {
	if desired(d) == 0 {
		return -replicas(rs)
	}
	target := desired(d) + maxSurge(d)
	sizedFor, ok := intAnnotation(rs, AnnotationMaxReplicas)
	if !ok {
		sizedFor = d.Status.Replicas
	}
	if sizedFor <= 0 {
		// Nothing to measure against: the leftover takes care of it.
		return 0
	}
	scaled := float64(replicas(rs)) * float64(target) / float64(sizedFor)
	return int32(math.Round(scaled)) - replicas(rs)
}

// findActiveOrLatest is the ReplicaSet a plain scale applies to: the
// only active one, or with none active the new one (else the newest old
// one); nil while several are active (a rollout is under way).
func findActiveOrLatest(newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(old) == 0 {
		return nil
	}
	active := activeReplicaSets(append(slices.Clone(old), newRS))
	switch len(active) {
	case 0:
		if newRS != nil {
			return newRS
		}
		sorted := byAge(old)
		return sorted[len(sorted)-1]
	case 1:
		return active[0]
	default:
		return nil
	}
}

// isSaturated: the new ReplicaSet has all spec.replicas, sized for this
// very spec.replicas, and all are available.
func isSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	want, ok := intAnnotation(rs, AnnotationDesiredReplicas)
	return ok && want == desired(d) && replicas(rs) == desired(d) && rs.Status.AvailableReplicas == desired(d)
}
