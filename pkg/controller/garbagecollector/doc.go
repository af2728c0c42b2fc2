// Package garbagecollector deletes objects whose owners are gone, as
// Kubernetes' garbage collector does, and carries out the three deletion
// propagation policies:
//
//   - Background (the default): once an owner is gone, a dependent whose
//     every owner is gone is deleted; a dependent that still has a live
//     owner only loses its references to the dead ones.
//   - Foreground: the apiserver keeps the owner, with a deletionTimestamp
//     and the "foregroundDeletion" finalizer; the collector deletes its
//     dependents (in the foreground too when they have dependents of their
//     own) and removes the finalizer once no dependent with
//     blockOwnerDeletion=true is left.
//   - Orphan: the apiserver keeps the owner with the "orphan" finalizer;
//     the collector removes the ownerReferences that point at it from its
//     dependents, then the finalizer.
//
// It discovers every resource that supports list, watch and delete (again
// every Config.ResyncPeriod, so new resources are picked up), watches them
// with metadata-only informers and keeps an owner-to-dependents graph
// keyed by UID. An owner that no informer has shown (never existed, not
// seen yet, or of a kind not watched) is a "virtual" node until a GET
// tells whether an object with that name and UID exists: a missing object
// or one with another UID is gone for good.
//
// The graph is in memory and rebuilt from the informers at start; workers
// start only once every informer has synced, so no dependent is missed.
// It decides from the graph but reads the dependent again before it
// acts, and every write carries the resourceVersion it was decided on: a
// conflict requeues, nothing is overwritten blindly. It writes only
// metadata.ownerReferences and metadata.finalizers, and deletes; it never
// touches storage.
package garbagecollector
