package podautoscaler

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func pods(n, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: n, PeriodSeconds: period}
}

func percent(n, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: n, PeriodSeconds: period}
}

func rules(window int32, sel autoscalingv2.ScalingPolicySelect, policies ...autoscalingv2.HPAScalingPolicy) *autoscalingv2.HPAScalingRules {
	r := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(window), Policies: policies}
	if sel != "" {
		r.SelectPolicy = &sel
	}
	return r
}

func TestCompleteRules(t *testing.T) {
	up, down := completeRules(nil, 5*time.Minute, 0.1)
	if up.window != 0 || up.selectPolicy != autoscalingv2.MaxChangePolicySelect || len(up.policies) != 2 || up.tolerance != 0.1 {
		t.Errorf("default scale-up rules: %+v", up)
	}
	if down.window != 5*time.Minute || down.selectPolicy != autoscalingv2.MaxChangePolicySelect || len(down.policies) != 1 || down.tolerance != 0.1 {
		t.Errorf("default scale-down rules: %+v", down)
	}

	up, down = completeRules(&autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   &autoscalingv2.HPAScalingRules{Tolerance: ptr.To(resource.MustParse("50m"))},
		ScaleDown: rules(10, autoscalingv2.MinChangePolicySelect, pods(1, 60)),
	}, 5*time.Minute, 0.1)
	if up.window != 0 || len(up.policies) != 2 || up.tolerance != 0.05 {
		t.Errorf("scale-up rules with a tolerance: %+v", up)
	}
	if down.window != 10*time.Second || down.selectPolicy != autoscalingv2.MinChangePolicySelect || len(down.policies) != 1 || down.policies[0] != pods(1, 60) {
		t.Errorf("scale-down rules: %+v", down)
	}
}

// TestNormalize covers each rule of behavior on one evaluation, from a
// given history.
func TestNormalize(t *testing.T) {
	defaultUp, defaultDown := completeRules(nil, 5*time.Minute, 0.1)
	_, noWindowDefaultDown := completeRules(nil, 0, 0.1)
	custom := func(up, down *autoscalingv2.HPAScalingRules) (scalingRules, scalingRules) {
		return completeRules(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: up, ScaleDown: down}, 5*time.Minute, 0.1)
	}
	type rec = recommendation
	ago := func(d time.Duration) time.Time { return t0.Add(-d) }
	for _, tc := range []struct {
		name                     string
		recs                     []recommendation
		ups, downs               []scaleEvent
		current, desired         int32
		min, max                 int32
		up, down                 scalingRules
		want                     int32
		wantAble                 string
		wantLimited              bool
		wantLimitedReason        string
		wantRecommendationsAfter int
	}{
		{name: "within range", current: 5, desired: 6, min: 1, max: 10, up: defaultUp, down: defaultDown,
			want: 6, wantAble: "ReadyForNewScale", wantLimitedReason: "DesiredWithinRange"},
		{name: "default scale-up: 100% or 4 pods, the larger (4 pods)", current: 2, desired: 10, min: 1, max: 20, up: defaultUp, down: defaultDown,
			want: 6, wantAble: "ReadyForNewScale", wantLimited: true, wantLimitedReason: "ScaleUpLimit"},
		{name: "default scale-up: 100% or 4 pods, the larger (100%)", current: 10, desired: 30, min: 1, max: 40, up: defaultUp, down: defaultDown,
			want: 20, wantAble: "ReadyForNewScale", wantLimited: true, wantLimitedReason: "ScaleUpLimit"},
		{name: "scale-up counts from the period's start", current: 6, desired: 20, min: 1, max: 40, up: defaultUp, down: defaultDown,
			ups:  []scaleEvent{{4, ago(10 * time.Second)}},
			want: 6, wantAble: "ReadyForNewScale", wantLimited: true, wantLimitedReason: "ScaleUpLimit"},
		{name: "scale-up events older than the period do not count", current: 6, desired: 20, min: 1, max: 40, up: defaultUp, down: defaultDown,
			ups:  []scaleEvent{{4, ago(16 * time.Second)}},
			want: 12, wantAble: "ReadyForNewScale", wantLimited: true, wantLimitedReason: "ScaleUpLimit"},
		{name: "maxReplicas", current: 5, desired: 20, min: 1, max: 8, up: defaultUp, down: defaultDown,
			want: 8, wantAble: "ReadyForNewScale", wantLimited: true, wantLimitedReason: "TooManyReplicas"},
		{name: "minReplicas", current: 5, desired: 1, min: 2, max: 8, up: defaultUp, down: noWindowDefaultDown,
			want: 2, wantAble: "ReadyForNewScale", wantLimited: true, wantLimitedReason: "TooFewReplicas"},
		{name: "scale-down stabilization keeps the window's highest", current: 10, desired: 3, min: 1, max: 20, up: defaultUp, down: defaultDown,
			recs: []recommendation{{8, ago(4 * time.Minute)}, {10, ago(6 * time.Minute)}},
			want: 8, wantAble: "ScaleDownStabilized", wantLimitedReason: "DesiredWithinRange", wantRecommendationsAfter: 2},
		{name: "scale-down stabilization: nothing higher in the window", current: 10, desired: 3, min: 1, max: 20, up: defaultUp, down: defaultDown,
			recs: []recommendation{{2, ago(4 * time.Minute)}, {10, ago(6 * time.Minute)}},
			want: 3, wantAble: "ReadyForNewScale", wantLimitedReason: "DesiredWithinRange", wantRecommendationsAfter: 2},
		{name: "scale-up stabilization keeps the window's lowest", current: 2, desired: 8, min: 1, max: 20,
			up: func() scalingRules { u, _ := custom(rules(60, "", pods(100, 15)), nil); return u }(), down: defaultDown,
			recs: []recommendation{{4, ago(30 * time.Second)}, {2, ago(90 * time.Second)}},
			want: 4, wantAble: "ScaleUpStabilized", wantLimitedReason: "DesiredWithinRange", wantRecommendationsAfter: 3},
		{name: "scale-up stabilization never goes below current", current: 5, desired: 8, min: 1, max: 20,
			up: func() scalingRules { u, _ := custom(rules(60, "", pods(100, 15)), nil); return u }(), down: defaultDown,
			recs: []recommendation{{3, ago(30 * time.Second)}},
			want: 5, wantAble: "ScaleUpStabilized", wantLimitedReason: "DesiredWithinRange", wantRecommendationsAfter: 2},
		{name: "scale-down Percent policy rounds the count down", current: 5, desired: 1, min: 1, max: 20, up: defaultUp,
			down: func() scalingRules { _, d := custom(nil, rules(0, "", percent(50, 60))); return d }(),
			want: 2, wantAble: "ReadyForNewScale", wantLimited: true, wantLimitedReason: "ScaleDownLimit"},
		{name: "scale-down Pods policy", current: 10, desired: 1, min: 1, max: 20, up: defaultUp,
			down: func() scalingRules { _, d := custom(nil, rules(0, "", pods(2, 60))); return d }(),
			want: 8, wantAble: "ReadyForNewScale", wantLimited: true, wantLimitedReason: "ScaleDownLimit"},
		{name: "scale-down counts from the period's start", current: 8, desired: 1, min: 1, max: 20, up: defaultUp,
			down:  func() scalingRules { _, d := custom(nil, rules(0, "", pods(2, 60))); return d }(),
			downs: []scaleEvent{{2, ago(30 * time.Second)}},
			want:  8, wantAble: "ReadyForNewScale", wantLimited: true, wantLimitedReason: "ScaleDownLimit"},
		{name: "scale-down: the policy allows below minReplicas", current: 3, desired: 1, min: 2, max: 20, up: defaultUp,
			down: func() scalingRules { _, d := custom(nil, rules(0, "", pods(2, 60))); return d }(),
			want: 2, wantAble: "ReadyForNewScale", wantLimited: true, wantLimitedReason: "TooFewReplicas"},
		{name: "selectPolicy Max scales down the most", current: 10, desired: 1, min: 1, max: 20, up: defaultUp,
			down: func() scalingRules {
				_, d := custom(nil, rules(0, autoscalingv2.MaxChangePolicySelect, pods(2, 60), percent(50, 60)))
				return d
			}(),
			want: 5, wantAble: "ReadyForNewScale", wantLimited: true, wantLimitedReason: "ScaleDownLimit"},
		{name: "selectPolicy Min scales down the least", current: 10, desired: 1, min: 1, max: 20, up: defaultUp,
			down: func() scalingRules {
				_, d := custom(nil, rules(0, autoscalingv2.MinChangePolicySelect, pods(2, 60), percent(50, 60)))
				return d
			}(),
			want: 8, wantAble: "ReadyForNewScale", wantLimited: true, wantLimitedReason: "ScaleDownLimit"},
		{name: "selectPolicy Min scales up the least", current: 10, desired: 40, min: 1, max: 50,
			up: func() scalingRules {
				u, _ := custom(rules(0, autoscalingv2.MinChangePolicySelect, pods(4, 15), percent(100, 15)), nil)
				return u
			}(), down: defaultDown,
			want: 14, wantAble: "ReadyForNewScale", wantLimited: true, wantLimitedReason: "ScaleUpLimit"},
		{name: "Percent scale-up rounds up", current: 1, desired: 5, min: 1, max: 10,
			up: func() scalingRules { u, _ := custom(rules(0, "", percent(50, 15)), nil); return u }(), down: defaultDown,
			want: 2, wantAble: "ReadyForNewScale", wantLimited: true, wantLimitedReason: "ScaleUpLimit"},
		{name: "scale-up Disabled", current: 3, desired: 10, min: 1, max: 20,
			up: func() scalingRules { u, _ := custom(rules(0, autoscalingv2.DisabledPolicySelect), nil); return u }(), down: defaultDown,
			want: 3, wantAble: "ReadyForNewScale", wantLimited: true, wantLimitedReason: "ScaleUpLimit"},
		{name: "scale-down Disabled", current: 10, desired: 2, min: 1, max: 20, up: defaultUp,
			down: func() scalingRules { _, d := custom(nil, rules(0, autoscalingv2.DisabledPolicySelect)); return d }(),
			want: 10, wantAble: "ReadyForNewScale", wantLimited: true, wantLimitedReason: "ScaleDownLimit"},
		{name: "Disabled scale-up still allows scaling down", current: 10, desired: 2, min: 1, max: 20,
			up: func() scalingRules { u, _ := custom(rules(0, autoscalingv2.DisabledPolicySelect), nil); return u }(), down: noWindowDefaultDown,
			want: 2, wantAble: "ReadyForNewScale", wantLimitedReason: "DesiredWithinRange"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &history{recommendations: append([]rec(nil), tc.recs...), scaleUps: tc.ups, scaleDowns: tc.downs}
			d := h.normalize(t0, tc.current, tc.desired, tc.min, tc.max, tc.up, tc.down)
			if d.replicas != tc.want {
				t.Errorf("replicas = %d, want %d", d.replicas, tc.want)
			}
			if d.ableReason != tc.wantAble {
				t.Errorf("AbleToScale reason = %s, want %s", d.ableReason, tc.wantAble)
			}
			if d.limited != tc.wantLimited || d.limitedReason != tc.wantLimitedReason {
				t.Errorf("ScalingLimited = %v %s, want %v %s", d.limited, d.limitedReason, tc.wantLimited, tc.wantLimitedReason)
			}
			if want := max(tc.wantRecommendationsAfter, 1); len(h.recommendations) != want {
				t.Errorf("%d recommendations kept, want %d: %+v", len(h.recommendations), want, h.recommendations)
			}
			if last := h.recommendations[len(h.recommendations)-1]; last.replicas != tc.desired || !last.at.Equal(t0) {
				t.Errorf("last recommendation = %+v, want the unstabilized %d at now", last, tc.desired)
			}
		})
	}
}

// step is one evaluation in a sequence: after advancing the clock, the
// metrics recommend desired; the target had current replicas.
type step struct {
	advance          time.Duration
	current, desired int32
	want             int32
	wantAble         string
}

// runSteps evaluates steps in order on one history, recording the scale
// changes made as the controller does.
func runSteps(t *testing.T, up, down scalingRules, min, max int32, steps []step) {
	t.Helper()
	clk := testingclock.NewFakeClock(t0)
	h := &history{}
	for i, s := range steps {
		clk.Step(s.advance)
		h.initialize(clk.Now(), s.current)
		d := h.normalize(clk.Now(), s.current, s.desired, min, max, up, down)
		if d.replicas != s.want || (s.wantAble != "" && d.ableReason != s.wantAble) {
			t.Fatalf("step %d (t0+%s, %d -> %d): got %d (%s), want %d (%s)", i, clk.Since(t0), s.current, s.desired,
				d.replicas, d.ableReason, s.want, s.wantAble)
		}
		if d.replicas != s.current {
			h.recordScale(clk.Now(), s.current, d.replicas, up, down)
		}
	}
}

func TestScaleDownStabilizationOverTime(t *testing.T) {
	// A fresh history (a new HPA, or a restarted controller) starts from
	// the current count: a scale-down waits a whole window.
	up, down := completeRules(nil, 5*time.Minute, 0.1)
	runSteps(t, up, down, 1, 10, []step{
		{0, 6, 2, 6, "ScaleDownStabilized"},
		{time.Minute, 6, 2, 6, "ScaleDownStabilized"},
		{3*time.Minute + 59*time.Second, 6, 2, 6, "ScaleDownStabilized"},
		{time.Second, 6, 2, 2, "ReadyForNewScale"}, // t0+5m: the first sample is out
	})
	// A spike inside the window holds the count up until it leaves it.
	_, short := completeRules(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: rules(60, "")}, 5*time.Minute, 0.1)
	runSteps(t, up, short, 1, 10, []step{
		{0, 4, 4, 4, "ReadyForNewScale"},
		{15 * time.Second, 4, 8, 8, "ReadyForNewScale"},
		{15 * time.Second, 8, 3, 8, "ScaleDownStabilized"},
		{15 * time.Second, 8, 3, 8, "ScaleDownStabilized"},
		{15 * time.Second, 8, 3, 8, "ScaleDownStabilized"},
		{14 * time.Second, 8, 3, 8, "ScaleDownStabilized"},
		{time.Second, 8, 3, 3, "ReadyForNewScale"}, // t0+75s: the 8 is 60s old, out
	})
}

func TestScaleUpRateOverTime(t *testing.T) {
	// Default scale-up: at most +max(4, 100%) per 15s, from where the
	// period started.
	up, down := completeRules(nil, 5*time.Minute, 0.1)
	runSteps(t, up, down, 1, 100, []step{
		{0, 1, 50, 5, ""},
		{5 * time.Second, 5, 50, 5, ""},   // +4 already this period
		{10 * time.Second, 5, 50, 10, ""}, // t0+15s: the +4 is out of the period
		{15 * time.Second, 10, 50, 20, ""},
		{15 * time.Second, 20, 50, 40, ""},
		{15 * time.Second, 40, 50, 50, ""},
	})
}

func TestScaleDownRateOverTime(t *testing.T) {
	up, _ := completeRules(nil, 0, 0.1)
	_, down := completeRules(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: rules(0, "", percent(50, 60))}, 0, 0.1)
	runSteps(t, up, down, 1, 100, []step{
		{0, 16, 1, 8, ""},
		{30 * time.Second, 8, 1, 8, ""}, // 16 at the period's start: -50% is 8
		{31 * time.Second, 8, 1, 4, ""}, // the first scale-down is out of the period
		{60 * time.Second, 4, 1, 2, ""},
		{60 * time.Second, 2, 1, 1, ""},
	})
}

func TestRecordScalePrunesOldEvents(t *testing.T) {
	up, down := completeRules(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(0, "", pods(4, 60))}, 0, 0.1)
	h := &history{}
	h.recordScale(t0, 1, 5, up, down)
	h.recordScale(t0.Add(30*time.Second), 5, 3, up, down)
	h.recordScale(t0.Add(61*time.Second), 3, 7, up, down)
	if len(h.scaleUps) != 1 || h.scaleUps[0].change != 4 || !h.scaleUps[0].at.Equal(t0.Add(61*time.Second)) {
		t.Errorf("scale-ups = %+v, want only the last one", h.scaleUps)
	}
	if len(h.scaleDowns) != 1 || h.scaleDowns[0].change != 2 {
		t.Errorf("scale-downs = %+v, want the one within 60s", h.scaleDowns)
	}
}
