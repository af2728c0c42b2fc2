package podautoscaler

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/types"
)

// This file is the HPA's `behavior`: stabilization windows and rate
// policies, over a per-HPA history kept in memory between syncs, as
// Kubernetes keeps it. Pure functions of their arguments (now included).

// Default scaling rules, Kubernetes': scale up by at most 4 pods or 100%
// (whichever is more) per 15s, at once; scale down by up to 100% per 15s,
// once the highest recommendation of the last 5 minutes allows it.
const (
	DefaultScaleUpPods                  = 4
	DefaultScaleUpPercent               = 100
	DefaultScaleDownPercent             = 100
	DefaultPolicyPeriodSeconds          = 15
	DefaultDownscaleStabilizationWindow = 5 * time.Minute
)

// scalingRules are an HPA's rules for one direction, with every field
// set.
type scalingRules struct {
	window       time.Duration
	selectPolicy autoscalingv2.ScalingPolicySelect
	policies     []autoscalingv2.HPAScalingPolicy
	tolerance    float64
}

// completeRules fills what the HPA's behavior leaves out with Kubernetes'
// defaults; a scale-down window left out is downWindow, the controller's
// setting, and a tolerance left out is tolerance.
func completeRules(b *autoscalingv2.HorizontalPodAutoscalerBehavior, downWindow time.Duration, tolerance float64) (up, down scalingRules) {
	up = scalingRules{
		selectPolicy: autoscalingv2.MaxChangePolicySelect,
		tolerance:    tolerance,
		policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: DefaultScaleUpPods, PeriodSeconds: DefaultPolicyPeriodSeconds},
			{Type: autoscalingv2.PercentScalingPolicy, Value: DefaultScaleUpPercent, PeriodSeconds: DefaultPolicyPeriodSeconds},
		},
	}
	down = scalingRules{
		window:       downWindow,
		selectPolicy: autoscalingv2.MaxChangePolicySelect,
		tolerance:    tolerance,
		policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: DefaultScaleDownPercent, PeriodSeconds: DefaultPolicyPeriodSeconds},
		},
	}
	if b != nil {
		overlayRules(&up, b.ScaleUp)
		overlayRules(&down, b.ScaleDown)
	}
	return up, down
}

func overlayRules(r *scalingRules, user *autoscalingv2.HPAScalingRules) {
	if user == nil {
		return
	}
	if user.StabilizationWindowSeconds != nil {
		r.window = time.Duration(*user.StabilizationWindowSeconds) * time.Second
	}
	if user.SelectPolicy != nil {
		r.selectPolicy = *user.SelectPolicy
	}
	if user.Policies != nil {
		r.policies = user.Policies
	}
	if user.Tolerance != nil {
		r.tolerance = user.Tolerance.AsApproximateFloat64()
	}
}

func (r scalingRules) longestPeriod() time.Duration {
	var longest int32
	for _, p := range r.policies {
		longest = max(longest, p.PeriodSeconds)
	}
	return time.Duration(longest) * time.Second
}

// history is what the controller remembers of one HPA between syncs: its
// recent recommendations (before stabilization) and the scale changes it
// made. It is lost on restart, as in Kubernetes; the first sync then
// records the current replica count as a recommendation, so a restart
// never lets a scale-down skip its stabilization window.
type history struct {
	uid             types.UID
	recommendations []recommendation
	scaleUps        []scaleEvent
	scaleDowns      []scaleEvent
}

type recommendation struct {
	replicas int32
	at       time.Time
}

type scaleEvent struct {
	change int32 // always positive
	at     time.Time
}

// decision is the replica count the behavior allows, and why.
type decision struct {
	replicas int32
	// AbleToScale (True) reason and message: ReadyForNewScale, or
	// ScaleUpStabilized/ScaleDownStabilized when the window held the
	// recommendation back.
	ableReason, ableMessage string
	// ScalingLimited: True with TooManyReplicas, TooFewReplicas,
	// ScaleUpLimit or ScaleDownLimit when the bounds or a rate policy cut
	// the stabilized recommendation; False with DesiredWithinRange.
	limited                       bool
	limitedReason, limitedMessage string
}

// initialize records current as a recommendation if there is none yet.
func (h *history) initialize(now time.Time, current int32) {
	if len(h.recommendations) == 0 {
		h.recommendations = append(h.recommendations, recommendation{current, now})
	}
}

// normalize turns desired, the metrics' recommendation, into the replica
// count to set: stabilized over the windows, then bounded by minReplicas,
// maxReplicas and the rate policies. It records desired in the history.
func (h *history) normalize(now time.Time, current, desired, minReplicas, maxReplicas int32, up, down scalingRules) decision {
	stabilized := h.stabilize(now, current, desired, up.window, down.window)
	d := decision{ableReason: "ReadyForNewScale", ableMessage: "recommended size matches current size"}
	if stabilized != desired {
		if desired >= current {
			d.ableReason, d.ableMessage = "ScaleUpStabilized", "recent recommendations were lower than current one, applying the lowest recent recommendation"
		} else {
			d.ableReason, d.ableMessage = "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation"
		}
	}
	d.replicas, d.limitedReason, d.limitedMessage = h.limitRate(now, current, stabilized, minReplicas, maxReplicas, up, down)
	d.limited = d.replicas != stabilized
	return d
}

// stabilize keeps the result between the lowest recommendation of the
// scale-up window and the highest of the scale-down window (desired
// included), as close to current as that allows, and records desired.
func (h *history) stabilize(now time.Time, current, desired int32, upWindow, downWindow time.Duration) int32 {
	upCutoff, downCutoff := now.Add(-upWindow), now.Add(-downWindow)
	upRec, downRec := desired, desired
	kept := h.recommendations[:0]
	for _, r := range h.recommendations {
		inUp, inDown := r.at.After(upCutoff), r.at.After(downCutoff)
		if inUp {
			upRec = min(upRec, r.replicas)
		}
		if inDown {
			downRec = max(downRec, r.replicas)
		}
		if inUp || inDown {
			kept = append(kept, r)
		}
	}
	h.recommendations = append(kept, recommendation{desired, now})
	return min(max(current, upRec), downRec)
}

// limitRate bounds desired by maxReplicas and the scale-up policies when
// it grows, by minReplicas and the scale-down policies when it shrinks.
func (h *history) limitRate(now time.Time, current, desired, minReplicas, maxReplicas int32, up, down scalingRules) (int32, string, string) {
	switch {
	case desired > current:
		limit := max(h.scaleUpLimit(now, current, up), current)
		if limit < maxReplicas {
			if desired > limit {
				return limit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
			}
		} else if desired > maxReplicas {
			return maxReplicas, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
		}
	case desired < current:
		limit := min(h.scaleDownLimit(now, current, down), current)
		if limit > minReplicas {
			if desired < limit {
				return limit, "ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate"
			}
		} else if desired < minReplicas {
			return minReplicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
		}
	}
	return desired, "DesiredWithinRange", "the desired count is within the acceptable range"
}

// periodStart is the replica count at the start of a policy's period:
// current, less the scale changes made since.
func (h *history) periodStart(now time.Time, current int32, p autoscalingv2.HPAScalingPolicy) int32 {
	cutoff := now.Add(-time.Duration(p.PeriodSeconds) * time.Second)
	return current - changeSince(h.scaleUps, cutoff) + changeSince(h.scaleDowns, cutoff)
}

func changeSince(events []scaleEvent, cutoff time.Time) int32 {
	var sum int32
	for _, e := range events {
		if e.at.After(cutoff) {
			sum += e.change
		}
	}
	return sum
}

// scaleUpLimit is the most replicas the scale-up policies allow now: per
// policy, the period's start plus its pods or percent (rounded up);
// selectPolicy Max takes the largest, Min the smallest, Disabled allows
// no growth.
func (h *history) scaleUpLimit(now time.Time, current int32, r scalingRules) int32 {
	if r.selectPolicy == autoscalingv2.DisabledPolicySelect {
		return current
	}
	pick, limit := maxInt32, int32(math.MinInt32)
	if r.selectPolicy == autoscalingv2.MinChangePolicySelect {
		pick, limit = minInt32, math.MaxInt32
	}
	for _, p := range r.policies {
		start := h.periodStart(now, current, p)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start + p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = ceilReplicas(float64(start) * (1 + float64(p.Value)/100))
		default:
			continue
		}
		limit = pick(limit, proposed)
	}
	return limit
}

// scaleDownLimit is the fewest replicas the scale-down policies allow
// now: per policy, the period's start less its pods or percent (the
// count rounded down); selectPolicy Max takes the largest change (the
// smallest count), Min the smallest, Disabled allows no shrinking.
func (h *history) scaleDownLimit(now time.Time, current int32, r scalingRules) int32 {
	if r.selectPolicy == autoscalingv2.DisabledPolicySelect {
		return current
	}
	pick, limit := minInt32, int32(math.MaxInt32)
	if r.selectPolicy == autoscalingv2.MinChangePolicySelect {
		pick, limit = maxInt32, math.MinInt32
	}
	for _, p := range r.policies {
		start := h.periodStart(now, current, p)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start - p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		default:
			continue
		}
		limit = pick(limit, proposed)
	}
	return limit
}

// recordScale notes a change of the target's replicas from → to, and
// forgets the changes older than every policy's period.
func (h *history) recordScale(now time.Time, from, to int32, up, down scalingRules) {
	switch {
	case to > from:
		h.scaleUps = append(h.scaleUps, scaleEvent{to - from, now})
	case to < from:
		h.scaleDowns = append(h.scaleDowns, scaleEvent{from - to, now})
	}
	cutoff := now.Add(-max(up.longestPeriod(), down.longestPeriod()))
	h.scaleUps = pruneEvents(h.scaleUps, cutoff)
	h.scaleDowns = pruneEvents(h.scaleDowns, cutoff)
}

func pruneEvents(events []scaleEvent, cutoff time.Time) []scaleEvent {
	kept := events[:0]
	for _, e := range events {
		if e.at.After(cutoff) {
			kept = append(kept, e)
		}
	}
	return kept
}

func minInt32(a, b int32) int32 { return min(a, b) }
func maxInt32(a, b int32) int32 { return max(a, b) }
