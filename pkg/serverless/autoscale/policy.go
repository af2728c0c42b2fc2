package autoscale

import (
	"math"
	"time"
)

// PanicThreshold is how many times its ready instances a function's
// panic-window proposal must be for it to panic (Knative's 200%).
const PanicThreshold = 2.0

// MaxScaleDownRate bounds a scale-down: at most down to the ready
// instances divided by it, per decision (Knative's 2).
const MaxScaleDownRate = 2.0

// Input is what one decision is made from.
type Input struct {
	Now time.Time
	// Current is the replicas asked for now, Ready the ready instances.
	Current, Ready int32
	// StableConcurrency and PanicConcurrency are the average requests in
	// flight over the stable and the panic window.
	StableConcurrency, PanicConcurrency float64
	// InFlight is the requests in flight now.
	InFlight int
	// LastActive is when a request last arrived or finished.
	LastActive time.Time
	// Min, Max and Target are the function's bounds and its target of
	// requests in flight per instance.
	Min, Max, Target int32
	// StableWindow is how long a panic lasts after the threshold was last
	// crossed.
	StableWindow time.Duration
	// ScaleToZeroAfter is how long without requests before zero.
	ScaleToZeroAfter time.Duration
	// PanickedAt is the previous Decision's: when the panic threshold was
	// last crossed, zero when not panicking.
	PanickedAt time.Time
}

// Decision is the outcome of one Decide.
type Decision struct {
	// Desired is the number of instances to have.
	Desired int32
	// Panicking reports panic mode; PanickedAt goes into the next Input.
	Panicking  bool
	PanickedAt time.Time
	// Reason says, for the logs, what set Desired.
	Reason string
}

// Decide is the KPA-like policy the package doc describes.
func Decide(in Input) Decision {
	target := float64(max(in.Target, 1))
	ready := float64(max(in.Ready, 1))
	// The scale-down cap never asks for more than there are.
	floor := min(math.Floor(float64(max(in.Ready, 0))/MaxScaleDownRate), float64(max(in.Current, 0)))
	stableWant := max(math.Ceil(in.StableConcurrency/target), floor)
	panicWant := max(math.Ceil(in.PanicConcurrency/target), floor)

	d := Decision{PanickedAt: in.PanickedAt}
	switch {
	case panicWant/ready >= PanicThreshold:
		d.PanickedAt = in.Now
	case !d.PanickedAt.IsZero() && !in.Now.Before(d.PanickedAt.Add(in.StableWindow)):
		d.PanickedAt = time.Time{}
	}
	d.Panicking = !d.PanickedAt.IsZero()

	desired := int32(stableWant)
	d.Reason = "stable concurrency"
	if d.Panicking {
		desired, d.Reason = max(int32(panicWant), in.Current), "panic: burst of concurrency"
	}
	if desired == 0 {
		switch {
		case in.InFlight > 0:
			desired, d.Reason = 1, "requests in flight"
		case in.Now.Sub(in.LastActive) < in.ScaleToZeroAfter:
			desired, d.Reason = min(in.Current, 1), "idle, within scaleToZeroAfter"
		default:
			d.Reason = "idle for scaleToZeroAfter"
		}
	}
	hi := max(in.Max, in.Min)
	switch {
	case desired < in.Min:
		desired, d.Reason = in.Min, "minScale"
	case desired > hi:
		desired, d.Reason = hi, "maxScale"
	}
	d.Desired = desired
	return d
}
