// Package kit is what every controller is built from, so that a
// controller is mostly its Reconcile: one build Context per
// controller-manager term (the client, the shared informer factory, one
// event broadcaster, the clock and the logger), the queue-and-loop
// set-up, Run to run a set of controllers and stop them all when one
// fails, and the pieces several controllers share: Expectations of
// writes the cache has not shown yet, condition helpers over the
// workload condition types, and the handler that queues the Services
// selecting a Pod.
//
// It owns the wiring, not the logic: what a key names, what a Reconcile
// does and which events enqueue which keys stay with each controller. It
// must not import a controller package.
package kit
