package garbagecollector

import (
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// objectRef names one object of the graph.
type objectRef struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	UID        types.UID
}

func (r objectRef) String() string {
	if r.Namespace == "" {
		return fmt.Sprintf("%s %s/%s (uid %s)", r.Kind, r.APIVersion, r.Name, r.UID)
	}
	return fmt.Sprintf("%s %s/%s/%s (uid %s)", r.Kind, r.APIVersion, r.Namespace, r.Name, r.UID)
}

// node is one object: observed through an informer, or virtual, known
// only because a dependent names it as an owner.
type node struct {
	ref      objectRef
	resource schema.GroupVersionResource
	observed bool
	// absent marks a virtual node whose object is known to be gone: it was
	// deleted, or a GET found no object or one with another UID. A UID is
	// never reused, so this holds for good.
	absent          bool
	resourceVersion string
	owners          []metav1.OwnerReference
	deleting        bool
	finalizers      []string
	dependents      map[types.UID]*node
}

// waitingForDependents is an owner being deleted in the foreground.
func (n *node) waitingForDependents() bool {
	return n.observed && n.deleting && slices.Contains(n.finalizers, metav1.FinalizerDeleteDependents)
}

// view is a copy of a node and its dependents, for a worker to read
// without the graph's lock.
type view struct {
	ref             objectRef
	resource        schema.GroupVersionResource
	observed        bool
	resourceVersion string
	owners          []metav1.OwnerReference
	deleting        bool
	finalizers      []string
	dependents      []view
}

// changes are the graph nodes an event asks the workers to look at.
type changes struct {
	attemptToDelete []types.UID
	attemptToOrphan []types.UID
}

// graph is the owner-to-dependents graph, keyed by UID.
type graph struct {
	mu    sync.Mutex
	nodes map[types.UID]*node
}

func newGraph() *graph { return &graph{nodes: map[types.UID]*node{}} }

// observe records an object an informer showed (added or updated).
func (g *graph) observe(res schema.GroupVersionResource, gvk schema.GroupVersionKind, obj metav1.Object) changes {
	g.mu.Lock()
	defer g.mu.Unlock()
	var ch changes
	uid := obj.GetUID()
	n := g.nodes[uid]
	if n == nil {
		n = &node{dependents: map[types.UID]*node{}}
		g.nodes[uid] = n
	}
	oldOwners := n.owners
	n.ref = objectRef{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
		Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: uid}
	n.resource = res
	n.observed, n.absent = true, false
	n.resourceVersion = obj.GetResourceVersion()
	n.owners = slices.Clone(obj.GetOwnerReferences())
	n.deleting = obj.GetDeletionTimestamp() != nil
	n.finalizers = slices.Clone(obj.GetFinalizers())

	for _, o := range oldOwners {
		if !hasOwner(n.owners, o.UID) {
			g.detach(n, o.UID, &ch)
		}
	}
	for _, o := range n.owners {
		owner := g.nodes[o.UID]
		if owner == nil {
			owner = &node{ref: objectRef{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: obj.GetNamespace(), Name: o.Name, UID: o.UID},
				dependents: map[types.UID]*node{}}
			g.nodes[o.UID] = owner
		}
		owner.dependents[uid] = n
		if owner.waitingForDependents() {
			// The reference may have stopped blocking the owner.
			ch.attemptToDelete = append(ch.attemptToDelete, o.UID)
		}
	}
	if len(n.owners) > 0 {
		ch.attemptToDelete = append(ch.attemptToDelete, uid)
	}
	if n.deleting && slices.Contains(n.finalizers, metav1.FinalizerOrphanDependents) {
		ch.attemptToOrphan = append(ch.attemptToOrphan, uid)
	}
	if n.waitingForDependents() {
		ch.attemptToDelete = append(ch.attemptToDelete, uid)
		for d := range n.dependents {
			ch.attemptToDelete = append(ch.attemptToDelete, d)
		}
	}
	return ch
}

// forget records that an object was deleted. One that still has
// dependents stays as an absent virtual node, so they find it gone.
func (g *graph) forget(uid types.UID) changes {
	g.mu.Lock()
	defer g.mu.Unlock()
	var ch changes
	n := g.nodes[uid]
	if n == nil || !n.observed {
		return ch
	}
	for _, o := range n.owners {
		g.detach(n, o.UID, &ch)
	}
	if len(n.dependents) == 0 {
		delete(g.nodes, uid)
		return ch
	}
	n.observed, n.absent = false, true
	n.owners, n.finalizers, n.deleting = nil, nil, false
	for d := range n.dependents {
		ch.attemptToDelete = append(ch.attemptToDelete, d)
	}
	return ch
}

// detach removes dep from the dependents of the owner with UID owner; a
// virtual owner left without dependents leaves the graph.
func (g *graph) detach(dep *node, owner types.UID, ch *changes) {
	o := g.nodes[owner]
	if o == nil {
		return
	}
	delete(o.dependents, dep.ref.UID)
	switch {
	case !o.observed && len(o.dependents) == 0:
		delete(g.nodes, owner)
	case o.waitingForDependents():
		ch.attemptToDelete = append(ch.attemptToDelete, owner)
	}
}

// markAbsent records that a virtual node's object does not exist.
func (g *graph) markAbsent(uid types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n := g.nodes[uid]; n != nil && !n.observed {
		n.absent = true
	}
}

// ownerState is what the graph alone knows of an owner: known is false
// when it takes a GET to tell.
func (g *graph) ownerState(uid types.UID) (state ownerState, known bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.nodes[uid]
	switch {
	case n == nil:
		return 0, false
	case n.observed && n.waitingForDependents():
		return ownerWaiting, true
	case n.observed:
		return ownerSolid, true
	case n.absent:
		return ownerDangling, true
	}
	return 0, false
}

// view copies the node with UID uid and its dependents.
func (g *graph) view(uid types.UID) (view, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.nodes[uid]
	if n == nil {
		return view{}, false
	}
	v := n.view()
	for _, d := range n.dependents {
		v.dependents = append(v.dependents, d.view())
	}
	slices.SortFunc(v.dependents, func(a, b view) int { return compareRefs(a.ref, b.ref) })
	return v, true
}

func (n *node) view() view {
	return view{ref: n.ref, resource: n.resource, observed: n.observed, resourceVersion: n.resourceVersion,
		owners: slices.Clone(n.owners), deleting: n.deleting, finalizers: slices.Clone(n.finalizers)}
}

func compareRefs(a, b objectRef) int {
	for _, p := range [][2]string{{a.Namespace, b.Namespace}, {a.Name, b.Name}, {string(a.UID), string(b.UID)}} {
		if p[0] != p[1] {
			if p[0] < p[1] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// size is how many nodes the graph holds, virtual ones included.
func (g *graph) size() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.nodes)
}

func hasOwner(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid {
			return true
		}
	}
	return false
}
