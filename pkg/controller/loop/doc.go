// Package loop is the run loop the controllers share: a rate-limited work
// queue of keys drained by a pool of workers into the controller's
// Reconcile, started once the informer caches have synced.
//
// It owns the mechanics around a Reconcile: waiting for the caches,
// starting and stopping the workers, requeueing a failed key with
// back-off (Forget on success), logging failures, and shutting the queue
// down when the loop ends. It also has the helpers
// that feed a queue from informer events by namespace/name key.
//
// It knows nothing of any resource: what a key names, what a Reconcile
// does, and which events enqueue which keys stay with each controller. It
// must not import a controller package. Events, and the set-up a
// controller's loop shares with the others, are pkg/controller/kit's.
package loop
