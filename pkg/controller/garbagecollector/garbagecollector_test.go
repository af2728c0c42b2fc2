package garbagecollector

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
)

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	nodes      = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	cmKind     = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	nodeKind   = schema.GroupVersionKind{Version: "v1", Kind: "Node"}
)

// obj is a ConfigMap's metadata in namespace "default".
func obj(name string, uid types.UID, owners ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: uid, ResourceVersion: "1", OwnerReferences: owners},
	}
}

func ownedBy(name string, uid types.UID, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: uid, BlockOwnerDeletion: ptr.To(block)}
}

func deleting(o *metav1.PartialObjectMetadata, finalizers ...string) *metav1.PartialObjectMetadata {
	o = o.DeepCopy()
	now := metav1.Now()
	o.DeletionTimestamp = &now
	o.Finalizers = finalizers
	return o
}

func withFinalizers(o *metav1.PartialObjectMetadata, finalizers ...string) *metav1.PartialObjectMetadata {
	o = o.DeepCopy()
	o.Finalizers = finalizers
	return o
}

// newTestController is a collector on fake clients holding objs; the
// graph is filled by the test.
func newTestController(t *testing.T, objs ...runtime.Object) (*Controller, *metadatafake.FakeMetadataClient) {
	t.Helper()
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	md := metadatafake.NewSimpleMetadataClient(scheme, objs...)
	client := fake.NewClientset()
	all := metav1.Verbs{"get", "list", "watch", "delete", "patch"}
	client.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
		GroupVersion: "v1",
		APIResources: []metav1.APIResource{
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: all},
			{Name: "nodes", Kind: "Node", Verbs: all},
		},
	}}
	c, err := New(&kit.Context{Client: client, Metadata: md, Logger: slog.New(slog.DiscardHandler)}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	return c, md
}

func TestDecide(t *testing.T) {
	a, b := ownedBy("a", "ua", true), ownedBy("b", "ub", false)
	for _, tc := range []struct {
		name          string
		owners        []metav1.OwnerReference
		states        map[types.UID]ownerState
		hasDependents bool
		finalizers    []string
		want          action
	}{
		{name: "no owners", want: action{}},
		{name: "solid owner keeps it", owners: []metav1.OwnerReference{a},
			states: map[types.UID]ownerState{"ua": ownerSolid}, want: action{}},
		{name: "only owner gone", owners: []metav1.OwnerReference{a},
			states: map[types.UID]ownerState{"ua": ownerDangling},
			want:   action{kind: actionDelete, policy: metav1.DeletePropagationBackground}},
		{name: "every owner gone", owners: []metav1.OwnerReference{a, b},
			states: map[types.UID]ownerState{"ua": ownerDangling, "ub": ownerDangling},
			want:   action{kind: actionDelete, policy: metav1.DeletePropagationBackground}},
		{name: "one owner left: the dead reference goes", owners: []metav1.OwnerReference{a, b},
			states: map[types.UID]ownerState{"ua": ownerDangling, "ub": ownerSolid},
			want:   action{kind: actionRemoveRefs, remove: []types.UID{"ua"}}},
		{name: "one owner left: the foreground owner's reference goes", owners: []metav1.OwnerReference{a, b},
			states: map[types.UID]ownerState{"ua": ownerWaiting, "ub": ownerSolid},
			want:   action{kind: actionRemoveRefs, remove: []types.UID{"ua"}}},
		{name: "foreground owner, leaf dependent", owners: []metav1.OwnerReference{a},
			states: map[types.UID]ownerState{"ua": ownerWaiting},
			want:   action{kind: actionDelete, policy: metav1.DeletePropagationBackground}},
		{name: "foreground owner, dependent with dependents", owners: []metav1.OwnerReference{a},
			states: map[types.UID]ownerState{"ua": ownerWaiting}, hasDependents: true,
			want: action{kind: actionDelete, policy: metav1.DeletePropagationForeground}},
		{name: "foreground and dead owners", owners: []metav1.OwnerReference{a, b},
			states: map[types.UID]ownerState{"ua": ownerWaiting, "ub": ownerDangling},
			want:   action{kind: actionDelete, policy: metav1.DeletePropagationBackground}},
		{name: "dead owner, dependent asks to orphan", owners: []metav1.OwnerReference{a},
			states: map[types.UID]ownerState{"ua": ownerDangling}, finalizers: []string{metav1.FinalizerOrphanDependents},
			want: action{kind: actionDelete, policy: metav1.DeletePropagationOrphan}},
		{name: "dead owner, dependent asks for foreground", owners: []metav1.OwnerReference{a},
			states: map[types.UID]ownerState{"ua": ownerDangling}, finalizers: []string{metav1.FinalizerDeleteDependents},
			want: action{kind: actionDelete, policy: metav1.DeletePropagationForeground}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decide(tc.owners, tc.states, tc.hasDependents, tc.finalizers)
			if got.kind != tc.want.kind || got.policy != tc.want.policy || !slices.Equal(got.remove, tc.want.remove) {
				t.Errorf("decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestGraph(t *testing.T) {
	owner := obj("owner", "uo")
	dep := obj("dep", "ud", ownedBy("owner", "uo", true))
	type step struct {
		observe *metav1.PartialObjectMetadata
		forget  types.UID
	}
	for _, tc := range []struct {
		name        string
		steps       []step
		wantSize    int
		wantDelete  []types.UID // from the last step
		wantOrphan  []types.UID
		ownerState  ownerState
		ownerKnown  bool
		ownerDeps   int
		ownerExists bool
	}{
		{name: "dependent first: owner is virtual, unknown",
			steps:    []step{{observe: dep}},
			wantSize: 2, wantDelete: []types.UID{"ud"}, ownerKnown: false, ownerDeps: 1, ownerExists: true},
		{name: "owner observed: solid",
			steps:    []step{{observe: dep}, {observe: owner}},
			wantSize: 2, ownerState: ownerSolid, ownerKnown: true, ownerDeps: 1, ownerExists: true},
		{name: "dependent gone: virtual owner leaves",
			steps:    []step{{observe: dep}, {forget: "ud"}},
			wantSize: 0},
		{name: "owner deleted: absent, dependents rechecked",
			steps:    []step{{observe: owner}, {observe: dep}, {forget: "uo"}},
			wantSize: 2, wantDelete: []types.UID{"ud"}, ownerState: ownerDangling, ownerKnown: true, ownerDeps: 1, ownerExists: true},
		{name: "owner without dependents deleted: gone",
			steps:    []step{{observe: owner}, {forget: "uo"}},
			wantSize: 0},
		{name: "foreground owner: it and its dependents are looked at",
			steps:    []step{{observe: dep}, {observe: deleting(owner, metav1.FinalizerDeleteDependents)}},
			wantSize: 2, wantDelete: []types.UID{"uo", "ud"}, ownerState: ownerWaiting, ownerKnown: true, ownerDeps: 1, ownerExists: true},
		{name: "orphan owner",
			steps:    []step{{observe: dep}, {observe: deleting(owner, metav1.FinalizerOrphanDependents)}},
			wantSize: 2, wantOrphan: []types.UID{"uo"}, ownerState: ownerSolid, ownerKnown: true, ownerDeps: 1, ownerExists: true},
		{name: "dependent of a foreground owner leaves: owner looked at again",
			steps:    []step{{observe: deleting(owner, metav1.FinalizerDeleteDependents)}, {observe: dep}, {forget: "ud"}},
			wantSize: 1, wantDelete: []types.UID{"uo"}, ownerState: ownerWaiting, ownerKnown: true, ownerDeps: 0, ownerExists: true},
		{name: "reference removed: detached",
			steps:    []step{{observe: owner}, {observe: dep}, {observe: obj("dep", "ud")}},
			wantSize: 2, ownerState: ownerSolid, ownerKnown: true, ownerDeps: 0, ownerExists: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGraph()
			var ch changes
			for _, s := range tc.steps {
				if s.observe != nil {
					ch = g.observe(configMaps, cmKind, s.observe)
				} else {
					ch = g.forget(s.forget)
				}
			}
			if g.size() != tc.wantSize {
				t.Errorf("graph size = %d, want %d", g.size(), tc.wantSize)
			}
			if !slices.Equal(ch.attemptToDelete, tc.wantDelete) {
				t.Errorf("attemptToDelete = %v, want %v", ch.attemptToDelete, tc.wantDelete)
			}
			if !slices.Equal(ch.attemptToOrphan, tc.wantOrphan) {
				t.Errorf("attemptToOrphan = %v, want %v", ch.attemptToOrphan, tc.wantOrphan)
			}
			state, known := g.ownerState("uo")
			if known != tc.ownerKnown || (known && state != tc.ownerState) {
				t.Errorf("owner state = %v (known %v), want %v (known %v)", state, known, tc.ownerState, tc.ownerKnown)
			}
			v, ok := g.view("uo")
			if ok != tc.ownerExists || len(v.dependents) != tc.ownerDeps {
				t.Errorf("owner node exists=%v with %d dependents, want %v with %d", ok, len(v.dependents), tc.ownerExists, tc.ownerDeps)
			}
		})
	}
}

// deletes lists the objects the fake metadata client was asked to delete,
// with the propagation policy asked.
func deletes(md *metadatafake.FakeMetadataClient) map[string]metav1.DeletionPropagation {
	out := map[string]metav1.DeletionPropagation{}
	for _, a := range md.Actions() {
		if d, ok := a.(clienttesting.DeleteActionImpl); ok {
			p := metav1.DeletionPropagation("")
			if d.DeleteOptions.PropagationPolicy != nil {
				p = *d.DeleteOptions.PropagationPolicy
			}
			out[d.Name] = p
		}
	}
	return out
}

func gets(md *metadatafake.FakeMetadataClient) int {
	n := 0
	for _, a := range md.Actions() {
		if a.GetVerb() == "get" {
			n++
		}
	}
	return n
}

func TestReconcileDependent(t *testing.T) {
	live := obj("live", "ulive")
	for _, tc := range []struct {
		name string
		// stored are the objects the API has; observed those the informers
		// have shown (the dependent "dep" among them).
		stored, observed []*metav1.PartialObjectMetadata
		res              schema.GroupVersionResource
		wantDeleted      map[string]metav1.DeletionPropagation
		wantOwners       []types.UID // dep's owners after, when not deleted
		wantNoGet        bool
	}{
		{name: "owner never existed",
			stored:      []*metav1.PartialObjectMetadata{obj("dep", "ud", ownedBy("ghost", "ug", true))},
			wantDeleted: map[string]metav1.DeletionPropagation{"dep": metav1.DeletePropagationBackground}},
		{name: "owner name now has another UID",
			stored:      []*metav1.PartialObjectMetadata{obj("owner", "unew"), obj("dep", "ud", ownedBy("owner", "uold", true))},
			wantDeleted: map[string]metav1.DeletionPropagation{"dep": metav1.DeletePropagationBackground}},
		{name: "owner exists but is not observed yet",
			stored:     []*metav1.PartialObjectMetadata{obj("owner", "uo"), obj("dep", "ud", ownedBy("owner", "uo", true))},
			wantOwners: []types.UID{"uo"}},
		{name: "owner observed: nothing to read",
			stored:     []*metav1.PartialObjectMetadata{obj("owner", "uo"), obj("dep", "ud", ownedBy("owner", "uo", true))},
			observed:   []*metav1.PartialObjectMetadata{obj("owner", "uo")},
			wantOwners: []types.UID{"uo"}, wantNoGet: true},
		{name: "a live owner keeps it; the dead reference goes",
			stored:     []*metav1.PartialObjectMetadata{live, obj("dep", "ud", ownedBy("ghost", "ug", true), ownedBy("live", "ulive", false))},
			observed:   []*metav1.PartialObjectMetadata{live},
			wantOwners: []types.UID{"ulive"}},
		{name: "foreground owner: leaf dependent deleted",
			stored:      []*metav1.PartialObjectMetadata{deleting(obj("owner", "uo"), metav1.FinalizerDeleteDependents), obj("dep", "ud", ownedBy("owner", "uo", true))},
			wantDeleted: map[string]metav1.DeletionPropagation{"dep": metav1.DeletePropagationBackground}},
		{name: "foreground owner and a live one: only the reference goes",
			stored:     []*metav1.PartialObjectMetadata{live, deleting(obj("owner", "uo"), metav1.FinalizerDeleteDependents), obj("dep", "ud", ownedBy("owner", "uo", true), ownedBy("live", "ulive", false))},
			observed:   []*metav1.PartialObjectMetadata{live, deleting(obj("owner", "uo"), metav1.FinalizerDeleteDependents)},
			wantOwners: []types.UID{"ulive"}},
		{name: "foreground owner: dependent with dependents deleted in the foreground",
			stored: []*metav1.PartialObjectMetadata{deleting(obj("owner", "uo"), metav1.FinalizerDeleteDependents),
				obj("dep", "ud", ownedBy("owner", "uo", true)), obj("grandchild", "ugc", ownedBy("dep", "ud", true))},
			observed:    []*metav1.PartialObjectMetadata{obj("grandchild", "ugc", ownedBy("dep", "ud", true))},
			wantDeleted: map[string]metav1.DeletionPropagation{"dep": metav1.DeletePropagationForeground}},
		{name: "orphan-owner being deleted still keeps it",
			stored:     []*metav1.PartialObjectMetadata{deleting(obj("owner", "uo"), metav1.FinalizerOrphanDependents), obj("dep", "ud", ownedBy("owner", "uo", true))},
			wantOwners: []types.UID{"uo"}},
		{name: "dead owner, dependent with the orphan finalizer",
			stored:      []*metav1.PartialObjectMetadata{withFinalizers(obj("dep", "ud", ownedBy("ghost", "ug", true)), metav1.FinalizerOrphanDependents)},
			wantDeleted: map[string]metav1.DeletionPropagation{"dep": metav1.DeletePropagationOrphan}},
		{name: "cluster-scoped dependent cannot have a namespaced owner",
			stored: []*metav1.PartialObjectMetadata{obj("owner", "uo"), {
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
				ObjectMeta: metav1.ObjectMeta{Name: "dep", UID: "ud", ResourceVersion: "1", OwnerReferences: []metav1.OwnerReference{ownedBy("owner", "uo", true)}},
			}},
			res:         nodes,
			wantDeleted: map[string]metav1.DeletionPropagation{"dep": metav1.DeletePropagationBackground}},
		{name: "dependent already being deleted",
			stored:   []*metav1.PartialObjectMetadata{deleting(obj("dep", "ud", ownedBy("ghost", "ug", true)), "example.com/hold")},
			observed: nil, wantOwners: []types.UID{"ug"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			var dep *metav1.PartialObjectMetadata
			for _, o := range tc.stored {
				objs = append(objs, o)
				if o.Name == "dep" {
					dep = o
				}
			}
			c, md := newTestController(t, objs...)
			res, kind := configMaps, cmKind
			if tc.res == nodes {
				res, kind = nodes, nodeKind
			}
			for _, o := range tc.observed {
				c.graph.observe(configMaps, cmKind, o)
			}
			c.graph.observe(res, kind, dep)
			md.ClearActions()
			if err := c.Reconcile(context.Background(), "ud"); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			got := deletes(md)
			if len(got) != len(tc.wantDeleted) {
				t.Errorf("deleted %v, want %v", got, tc.wantDeleted)
			}
			for name, p := range tc.wantDeleted {
				if got[name] != p {
					t.Errorf("delete %s with policy %q, want %q", name, got[name], p)
				}
			}
			if tc.wantNoGet && gets(md) > 0 {
				t.Errorf("%d GETs, want none", gets(md))
			}
			if tc.wantDeleted != nil {
				return
			}
			after, err := md.Resource(res).Namespace(dep.Namespace).Get(context.Background(), "dep", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var owners []types.UID
			for _, o := range after.OwnerReferences {
				owners = append(owners, o.UID)
			}
			if !slices.Equal(owners, tc.wantOwners) {
				t.Errorf("dep's owners = %v, want %v", owners, tc.wantOwners)
			}
		})
	}
}

func TestForegroundFinalizerRemovedOnceNoDependentBlocks(t *testing.T) {
	owner := deleting(obj("owner", "uo"), metav1.FinalizerDeleteDependents, "example.com/keep")
	blocker := obj("blocker", "ub", ownedBy("owner", "uo", true))
	other := obj("other", "ux", ownedBy("owner", "uo", false))
	c, md := newTestController(t, owner, blocker, other)
	for _, o := range []*metav1.PartialObjectMetadata{blocker, other, owner} {
		c.graph.observe(configMaps, cmKind, o)
	}
	ctx := context.Background()

	if err := c.Reconcile(ctx, "uo"); err != nil {
		t.Fatal(err)
	}
	if got := finalizers(t, md, "owner"); !slices.Contains(got, metav1.FinalizerDeleteDependents) {
		t.Fatalf("finalizer removed while a blocking dependent exists: %v", got)
	}
	if n := c.attemptToDelete.Len(); n != 2 {
		t.Errorf("%d dependents queued for deletion, want 2", n)
	}
	for _, uid := range []types.UID{"ub", "ux"} {
		if err := c.Reconcile(ctx, uid); err != nil {
			t.Fatal(err)
		}
	}
	if got := deletes(md); len(got) != 2 {
		t.Errorf("deleted %v, want blocker and other", got)
	}

	// Only the non-blocking dependent is left: the owner may go.
	ch := c.graph.forget("ub")
	if !slices.Contains(ch.attemptToDelete, "uo") {
		t.Errorf("owner not looked at again when its blocking dependent went: %v", ch.attemptToDelete)
	}
	if err := c.Reconcile(ctx, "uo"); err != nil {
		t.Fatal(err)
	}
	if got := finalizers(t, md, "owner"); !slices.Equal(got, []string{"example.com/keep"}) {
		t.Errorf("owner finalizers = %v, want only example.com/keep", got)
	}
}

func TestOrphanRemovesReferencesThenFinalizer(t *testing.T) {
	owner := deleting(obj("owner", "uo"), metav1.FinalizerOrphanDependents)
	only := obj("only", "u1", ownedBy("owner", "uo", true))
	shared := obj("shared", "u2", ownedBy("other", "uother", false), ownedBy("owner", "uo", true))
	c, md := newTestController(t, owner, only, shared)
	var ch changes
	for _, o := range []*metav1.PartialObjectMetadata{only, shared, owner} {
		ch = c.graph.observe(configMaps, cmKind, o)
	}
	if !slices.Equal(ch.attemptToOrphan, []types.UID{"uo"}) {
		t.Fatalf("attemptToOrphan = %v, want the owner", ch.attemptToOrphan)
	}
	if err := c.ReconcileOrphan(context.Background(), "uo"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]types.UID{"only": nil, "shared": {"uother"}} {
		o, err := md.Resource(configMaps).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []types.UID
		for _, r := range o.OwnerReferences {
			got = append(got, r.UID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s owners = %v, want %v", name, got, want)
		}
	}
	if got := finalizers(t, md, "owner"); len(got) != 0 {
		t.Errorf("owner finalizers = %v, want none", got)
	}
	if got := deletes(md); len(got) != 0 {
		t.Errorf("orphaning deleted %v", got)
	}
}

func TestVerifiedAbsentOwnerIsRemembered(t *testing.T) {
	a := obj("a", "ua", ownedBy("ghost", "ug", true))
	b := obj("b", "ub", ownedBy("ghost", "ug", true))
	c, md := newTestController(t, a, b)
	c.graph.observe(configMaps, cmKind, a)
	c.graph.observe(configMaps, cmKind, b)
	ctx := context.Background()
	if err := c.Reconcile(ctx, "ua"); err != nil {
		t.Fatal(err)
	}
	md.ClearActions()
	if err := c.Reconcile(ctx, "ub"); err != nil {
		t.Fatal(err)
	}
	for _, act := range md.Actions() {
		if g, ok := act.(clienttesting.GetActionImpl); ok && g.Name == "ghost" {
			t.Errorf("owner verified twice")
		}
	}
	if _, err := md.Resource(configMaps).Namespace("default").Get(ctx, "b", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("b still exists (err %v)", err)
	}
}

func finalizers(t *testing.T, md *metadatafake.FakeMetadataClient, name string) []string {
	t.Helper()
	o, err := md.Resource(configMaps).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return o.Finalizers
}
