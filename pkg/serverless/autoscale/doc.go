// Package autoscale sets the number of instances of each Function — the
// replicas of its Deployment fnmeta.DeploymentName — from the requests
// the router observes, as Knative's pod autoscaler (KPA) does, and
// scales a function from zero at once when the router asks for an
// instance (Poke).
//
// # What it owns
//
// spec.replicas of the functions' Deployments, written only through the
// apps/v1 deployments/scale subresource with the resourceVersion it read
// (a conflict is retried on the next tick). It reads the Deployments
// (those labelled fnmeta.FunctionLabel) through its own informer, the
// Functions through Config.Functions and the traffic through
// Config.Stats (the router). It creates and deletes nothing: a function
// whose Deployment does not exist yet is skipped; the function
// controller makes it, and must leave its replicas alone once made.
//
// # The policy (policy.go)
//
// Decide is a pure function of what was observed, tested as a table.
// Every Config.Tick (2s) each function's desired instances are:
//
//   - ceil(stable concurrency / target), the stable concurrency being the
//     time-weighted average of requests in flight (held ones included)
//     over Config.StableWindow (60s);
//   - while panicking, ceil(panic concurrency / target) over the panic
//     window (Config.PanicWindow, 10% of the stable window), and never
//     fewer than now. A function panics when that panic proposal is at
//     least twice its ready instances (at least one), and stops once it
//     has not been so for a whole stable window;
//   - never fewer than half the ready instances (a scale-down at most
//     halves them per tick);
//   - at least 1 while a request is in flight; 0 only when minScale is 0
//     and no request arrived or finished for scaleToZeroAfter (until
//     then an instance that exists is kept, but none is started);
//   - bounded by [minScale, maxScale].
//
// A function's target, bounds and grace come from its spec.scale, with
// fnmeta's defaults where unset. Scaling from zero does not wait for a
// tick: the router's Poke sets a Deployment at 0 replicas to 1 at once.
package autoscale
