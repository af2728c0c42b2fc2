package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// ownerState is how an owner stands for one of its dependents.
type ownerState int

const (
	// ownerSolid exists and is not waiting for its dependents: it keeps
	// the dependent alive.
	ownerSolid ownerState = iota
	// ownerWaiting is being deleted in the foreground: its dependents go
	// first.
	ownerWaiting
	// ownerDangling is gone, never existed, or was replaced by an object
	// with another UID.
	ownerDangling
)

func (s ownerState) String() string {
	return [...]string{"solid", "waiting", "dangling"}[s]
}

type actionKind int

const (
	actionNone actionKind = iota
	actionRemoveRefs
	actionDelete
)

// action is what the collector does to one dependent.
type action struct {
	kind actionKind
	// remove are the owner UIDs whose references go (actionRemoveRefs).
	remove []types.UID
	// policy is the propagation of the delete (actionDelete).
	policy metav1.DeletionPropagation
}

// decide is the collector's rule for a dependent, given how each of its
// owners stands:
//   - one solid owner keeps it; references to dangling owners and to
//     owners waiting for their dependents are removed (the latter so the
//     owner need not wait for an object that stays);
//   - otherwise, with an owner waiting for it, it is deleted, in the
//     foreground when it has dependents of its own so that the owner
//     waits for the whole tree;
//   - otherwise (every owner dangling) it is deleted with the policy its
//     own finalizers ask for, background by default.
func decide(owners []metav1.OwnerReference, states map[types.UID]ownerState, hasDependents bool, finalizers []string) action {
	solid, waiting := false, false
	var remove []types.UID
	for _, o := range owners {
		switch states[o.UID] {
		case ownerSolid:
			solid = true
		case ownerWaiting:
			waiting = true
			remove = append(remove, o.UID)
		case ownerDangling:
			remove = append(remove, o.UID)
		}
	}
	switch {
	case len(owners) == 0:
		return action{}
	case solid:
		if len(remove) == 0 {
			return action{}
		}
		return action{kind: actionRemoveRefs, remove: remove}
	case waiting:
		if hasDependents {
			return action{kind: actionDelete, policy: metav1.DeletePropagationForeground}
		}
		return action{kind: actionDelete, policy: metav1.DeletePropagationBackground}
	case slices.Contains(finalizers, metav1.FinalizerOrphanDependents):
		return action{kind: actionDelete, policy: metav1.DeletePropagationOrphan}
	case slices.Contains(finalizers, metav1.FinalizerDeleteDependents):
		return action{kind: actionDelete, policy: metav1.DeletePropagationForeground}
	}
	return action{kind: actionDelete, policy: metav1.DeletePropagationBackground}
}

// Reconcile looks at one object of the graph: a dependent is checked
// against its owners, an owner being deleted in the foreground loses its
// finalizer once no dependent blocks it.
func (c *Controller) Reconcile(ctx context.Context, uid types.UID) error {
	v, ok := c.graph.view(uid)
	if !ok || !v.observed {
		return nil
	}
	if v.deleting {
		if slices.Contains(v.finalizers, metav1.FinalizerDeleteDependents) {
			return c.finishForeground(ctx, v)
		}
		return nil
	}
	if len(v.owners) == 0 || c.allSolid(v.owners) {
		return nil
	}
	// The graph may lag behind: decide on the dependent as it is now.
	latest, err := c.metadata.Resource(v.resource).Namespace(v.ref.Namespace).Get(ctx, v.ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("get %s: %w", v.ref, err)
	case latest.UID != v.ref.UID || latest.DeletionTimestamp != nil:
		return nil
	}
	states := map[types.UID]ownerState{}
	for _, o := range latest.OwnerReferences {
		s, err := c.ownerState(ctx, v.ref.Namespace, o)
		if err != nil {
			return err
		}
		states[o.UID] = s
	}
	a := decide(latest.OwnerReferences, states, len(v.dependents) > 0, latest.Finalizers)
	switch a.kind {
	case actionRemoveRefs:
		c.log.Info("removing references to owners that are gone or deleting", "object", v.ref, "owners", a.remove)
		return c.removeOwnerRefs(ctx, v.resource, latest, a.remove)
	case actionDelete:
		if a.policy == metav1.DeletePropagationForeground && dependentWaiting(v) {
			// A dependent of this object waits for its own dependents
			// already: an ownership cycle, in which every object would
			// wait for the next. As upstream does, this object stops
			// blocking its owners before it goes, which breaks the cycle.
			c.log.Info("unblocking owners to break a possible ownership cycle", "object", v.ref)
			unblocked, err := c.unblockOwnerRefs(ctx, v.resource, latest)
			if err != nil || unblocked == nil {
				return err
			}
			latest = unblocked
		}
		c.log.Info("deleting dependent", "object", v.ref, "propagationPolicy", a.policy, "owners", states)
		return c.deleteObject(ctx, v.resource, latest, a.policy)
	}
	return nil
}

// allSolid is true when the graph alone shows every owner solid.
func (c *Controller) allSolid(owners []metav1.OwnerReference) bool {
	for _, o := range owners {
		if s, known := c.graph.ownerState(o.UID); !known || s != ownerSolid {
			return false
		}
	}
	return true
}

// ownerState tells how the owner ref of a dependent in namespace ns
// stands, from the graph or, for a virtual owner, from a GET.
func (c *Controller) ownerState(ctx context.Context, ns string, ref metav1.OwnerReference) (ownerState, error) {
	if s, known := c.graph.ownerState(ref.UID); known {
		return s, nil
	}
	info, err := c.resourceFor(ref.APIVersion, ref.Kind)
	if err != nil {
		return 0, err
	}
	if !info.namespaced {
		ns = ""
	} else if ns == "" {
		// A cluster-scoped object cannot be owned by a namespaced one.
		c.graph.markAbsent(ref.UID)
		return ownerDangling, nil
	}
	owner, err := c.metadata.Resource(info.resource).Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.graph.markAbsent(ref.UID)
		return ownerDangling, nil
	case err != nil:
		return 0, fmt.Errorf("get owner %s %s: %w", ref.Kind, ref.Name, err)
	case owner.UID != ref.UID:
		c.graph.markAbsent(ref.UID)
		return ownerDangling, nil
	case owner.DeletionTimestamp != nil && slices.Contains(owner.Finalizers, metav1.FinalizerDeleteDependents):
		return ownerWaiting, nil
	}
	return ownerSolid, nil
}

// finishForeground deletes the dependents of an owner being deleted in
// the foreground and removes its finalizer once none blocks it.
func (c *Controller) finishForeground(ctx context.Context, owner view) error {
	blocking := 0
	for _, d := range owner.dependents {
		c.attemptToDelete.Add(d.ref.UID)
		for _, o := range d.owners {
			if o.UID == owner.ref.UID && o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion {
				blocking++
			}
		}
	}
	if blocking > 0 {
		// Each dependent's deletion brings the owner back here.
		return nil
	}
	c.log.Info("dependents deleted, removing finalizer", "object", owner.ref, "finalizer", metav1.FinalizerDeleteDependents)
	return c.removeFinalizer(ctx, owner, metav1.FinalizerDeleteDependents)
}

// ReconcileOrphan finishes the deletion of an owner with the orphan
// finalizer: its dependents lose their references to it, then it loses
// the finalizer.
func (c *Controller) ReconcileOrphan(ctx context.Context, uid types.UID) error {
	v, ok := c.graph.view(uid)
	if !ok || !v.observed || !v.deleting || !slices.Contains(v.finalizers, metav1.FinalizerOrphanDependents) {
		return nil
	}
	var errs []error
	for _, d := range v.dependents {
		obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: d.ref.Namespace, Name: d.ref.Name,
			UID: d.ref.UID, ResourceVersion: d.resourceVersion, OwnerReferences: d.owners}}
		if err := c.removeOwnerRefs(ctx, d.resource, obj, []types.UID{uid}); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.log.Info("dependents orphaned, removing finalizer", "object", v.ref, "dependents", len(v.dependents))
	return c.removeFinalizer(ctx, v, metav1.FinalizerOrphanDependents)
}

// removeOwnerRefs drops the references to the given owners from obj, at
// obj's resourceVersion.
func (c *Controller) removeOwnerRefs(ctx context.Context, res schema.GroupVersionResource, obj *metav1.PartialObjectMetadata, owners []types.UID) error {
	var kept []metav1.OwnerReference
	for _, o := range obj.OwnerReferences {
		if !slices.Contains(owners, o.UID) {
			kept = append(kept, o)
		}
	}
	if len(kept) == len(obj.OwnerReferences) {
		return nil
	}
	patch, err := metadataPatch(obj.ResourceVersion, "ownerReferences", kept)
	if err != nil {
		return err
	}
	_, err = c.metadata.Resource(res).Namespace(obj.Namespace).Patch(ctx, obj.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove owner references from %s %s/%s: %w", res.Resource, obj.Namespace, obj.Name, err)
	}
	return nil
}

// dependentWaiting is true when one of v's dependents is itself being
// deleted in the foreground.
func dependentWaiting(v view) bool {
	for _, d := range v.dependents {
		if d.deleting && slices.Contains(d.finalizers, metav1.FinalizerDeleteDependents) {
			return true
		}
	}
	return false
}

// unblockOwnerRefs sets blockOwnerDeletion false on obj's owner
// references, at obj's resourceVersion, and returns obj as written (nil
// when it is gone).
func (c *Controller) unblockOwnerRefs(ctx context.Context, res schema.GroupVersionResource, obj *metav1.PartialObjectMetadata) (*metav1.PartialObjectMetadata, error) {
	refs := slices.Clone(obj.OwnerReferences)
	for i := range refs {
		refs[i].BlockOwnerDeletion = nil
	}
	patch, err := metadataPatch(obj.ResourceVersion, "ownerReferences", refs)
	if err != nil {
		return nil, err
	}
	out, err := c.metadata.Resource(res).Namespace(obj.Namespace).Patch(ctx, obj.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("unblock owner references of %s %s/%s: %w", res.Resource, obj.Namespace, obj.Name, err)
	}
	return out, nil
}

// removeFinalizer drops finalizer f from the object v, at the
// resourceVersion the graph last saw.
func (c *Controller) removeFinalizer(ctx context.Context, v view, f string) error {
	var kept []string
	for _, have := range v.finalizers {
		if have != f {
			kept = append(kept, have)
		}
	}
	if len(kept) == len(v.finalizers) {
		return nil
	}
	patch, err := metadataPatch(v.resourceVersion, "finalizers", kept)
	if err != nil {
		return err
	}
	_, err = c.metadata.Resource(v.resource).Namespace(v.ref.Namespace).Patch(ctx, v.ref.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove finalizer %s from %s: %w", f, v.ref, err)
	}
	return nil
}

// deleteObject deletes obj as it was read: a change since (a new owner
// reference, a new object with the name) makes the delete fail with a
// conflict and the dependent is looked at again.
func (c *Controller) deleteObject(ctx context.Context, res schema.GroupVersionResource, obj *metav1.PartialObjectMetadata, policy metav1.DeletionPropagation) error {
	uid, rv := obj.UID, obj.ResourceVersion
	err := c.metadata.Resource(res).Namespace(obj.Namespace).Delete(ctx, obj.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
		PropagationPolicy: &policy,
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete %s %s/%s: %w", res.Resource, obj.Namespace, obj.Name, err)
	}
	return nil
}

// metadataPatch is a JSON merge patch setting one metadata field, with
// resourceVersion as a precondition. A nil or empty value removes the
// field.
func metadataPatch[T any](resourceVersion, field string, value []T) ([]byte, error) {
	var v any = value
	if len(value) == 0 {
		v = nil
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": resourceVersion, field: v}})
}
