package integration

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/garbagecollector"
	"github.com/minik8s/minik8s/pkg/controller/kit"
)

// startGC runs a garbage collector against the cluster until the test ends.
func startGC(t *testing.T, c *cluster) {
	t.Helper()
	kc := &kit.Context{Client: c.client, Metadata: metadata.NewForConfigOrDie(c.config),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	gc, err := garbagecollector.New(kc, garbagecollector.Config{ResyncPeriod: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gc.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("garbage collector: %v", err)
		}
	})
}

// gcOwner creates a ConfigMap to own others.
func gcOwner(t *testing.T, c *cluster, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := c.client.CoreV1().ConfigMaps("default").Create(ctxT(t), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func ownerRef(cm *corev1.ConfigMap, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID, BlockOwnerDeletion: ptr.To(block)}
}

// gcDependent creates a ConfigMap owned by owners, with finalizers.
func gcDependent(t *testing.T, c *cluster, name string, finalizers []string, owners ...metav1.OwnerReference) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners, Finalizers: finalizers}}
	if _, err := c.client.CoreV1().ConfigMaps("default").Create(ctxT(t), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitGone(t *testing.T, c *cluster, names ...string) {
	t.Helper()
	for _, name := range names {
		waitFor(t, "configmap "+name+" to be deleted", func(ctx context.Context) (bool, error) {
			_, err := c.client.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}
}

// ownersOf is the UIDs a ConfigMap's ownerReferences name.
func ownersOf(t *testing.T, c *cluster, name string) []types.UID {
	t.Helper()
	cm, err := c.client.CoreV1().ConfigMaps("default").Get(ctxT(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	var out []types.UID
	for _, r := range cm.OwnerReferences {
		out = append(out, r.UID)
	}
	return out
}

// stillThere checks for a while that the configmaps stay.
func stillThere(t *testing.T, c *cluster, names ...string) {
	t.Helper()
	time.Sleep(2 * time.Second)
	for _, name := range names {
		if _, err := c.client.CoreV1().ConfigMaps("default").Get(ctxT(t), name, metav1.GetOptions{}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestGCMetadataListWatch: the apiserver serves the metadata-only forms
// the collector's informers ask for, in lists and in watches.
func TestGCMetadataListWatch(t *testing.T) {
	c := startClusterWith(t, withoutControllers("garbagecollector"))
	ctx := ctxT(t)
	md := metadata.NewForConfigOrDie(c.config).Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("default")
	gcOwner(t, c, "listed")
	list, err := md.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(list.Items, func(o metav1.PartialObjectMetadata) bool { return o.Name == "listed" && o.UID != "" }) {
		t.Fatalf("list = %+v", list)
	}
	w, err := md.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	gcOwner(t, c, "watched")
	select {
	case ev := <-w.ResultChan():
		o, ok := ev.Object.(*metav1.PartialObjectMetadata)
		if ev.Type != watch.Added || !ok || o.Name != "watched" || o.UID == "" {
			t.Fatalf("event %s %T %+v", ev.Type, ev.Object, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}
}

func TestGarbageCollectorBackground(t *testing.T) {
	c := startClusterWith(t, withoutControllers("garbagecollector"))
	startGC(t, c)
	ctx := ctxT(t)
	owner := gcOwner(t, c, "owner")
	keeper := gcOwner(t, c, "keeper")
	gcDependent(t, c, "child", nil, ownerRef(owner, false))
	gcDependent(t, c, "shared", nil, ownerRef(owner, true), ownerRef(keeper, false))
	// A dependent of an owner that never existed, and of one whose name
	// now belongs to another object: both owners are absent.
	gcDependent(t, c, "orphan-of-ghost", nil, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: "4c0ffee0-0000-0000-0000-000000000000"})
	gcDependent(t, c, "stale-uid", nil, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "keeper", UID: "4c0ffee0-0000-0000-0000-000000000001"})
	waitGone(t, c, "orphan-of-ghost", "stale-uid")
	stillThere(t, c, "child", "shared")

	if err := c.client.CoreV1().ConfigMaps("default").Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c, "owner", "child")
	waitFor(t, "shared to keep only its live owner", func(ctx context.Context) (bool, error) {
		return slices.Equal(ownersOf(t, c, "shared"), []types.UID{keeper.UID}), nil
	})

	// With no policy at all, background is the default.
	gcDependent(t, c, "child2", nil, ownerRef(keeper, false))
	if err := c.client.CoreV1().ConfigMaps("default").Delete(ctx, "keeper", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c, "keeper", "shared", "child2")
}

func TestGarbageCollectorForeground(t *testing.T) {
	c := startClusterWith(t, withoutControllers("garbagecollector"))
	startGC(t, c)
	ctx := ctxT(t)
	cms := c.client.CoreV1().ConfigMaps("default")
	owner := gcOwner(t, c, "owner")
	// blocker holds the owner until it is really gone: a finalizer of its
	// own keeps it Terminating.
	gcDependent(t, c, "blocker", []string{"example.com/hold"}, ownerRef(owner, true))
	gcDependent(t, c, "free", nil, ownerRef(owner, false))
	gcDependent(t, c, "parent", nil, ownerRef(owner, true))
	parent, err := cms.Get(ctx, "parent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gcDependent(t, c, "grandchild", nil, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "parent", UID: parent.UID, BlockOwnerDeletion: ptr.To(true)})

	if err := cms.Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	got, err := cms.Get(ctx, "owner", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("owner gone at once in the foreground: %v", err)
	}
	if got.DeletionTimestamp == nil || !slices.Contains(got.Finalizers, metav1.FinalizerDeleteDependents) {
		t.Fatalf("owner = %+v, want a deletionTimestamp and the foregroundDeletion finalizer", got.ObjectMeta)
	}
	waitGone(t, c, "free", "grandchild", "parent")
	waitFor(t, "blocker to be terminating", func(ctx context.Context) (bool, error) {
		b, err := cms.Get(ctx, "blocker", metav1.GetOptions{})
		return err == nil && b.DeletionTimestamp != nil, nil
	})
	time.Sleep(time.Second)
	if got, err := cms.Get(ctx, "owner", metav1.GetOptions{}); err != nil || !slices.Contains(got.Finalizers, metav1.FinalizerDeleteDependents) {
		t.Fatalf("owner went before its blocking dependent: %v %+v", err, got)
	}

	b, err := cms.Get(ctx, "blocker", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Finalizers = nil
	if _, err := cms.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c, "blocker", "owner")
}

func TestGarbageCollectorOrphan(t *testing.T) {
	c := startClusterWith(t, withoutControllers("garbagecollector"))
	startGC(t, c)
	ctx := ctxT(t)
	owner := gcOwner(t, c, "owner")
	other := gcOwner(t, c, "other")
	gcDependent(t, c, "a", nil, ownerRef(owner, true))
	gcDependent(t, c, "b", nil, ownerRef(owner, false), ownerRef(other, false))

	if err := c.client.CoreV1().ConfigMaps("default").Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c, "owner")
	if got := ownersOf(t, c, "a"); len(got) != 0 {
		t.Errorf("a still has owners %v", got)
	}
	if got := ownersOf(t, c, "b"); !slices.Equal(got, []types.UID{other.UID}) {
		t.Errorf("b owners = %v, want only %s", got, other.UID)
	}
	stillThere(t, c, "a", "b")
}

// TestGarbageCollectorKubectlCascade: what `kubectl delete --cascade`
// asks for is what happens.
func TestGarbageCollectorKubectlCascade(t *testing.T) {
	c := startClusterWith(t, withoutControllers("garbagecollector"))
	startGC(t, c)
	k := newKubectl(t, c)

	fg := gcOwner(t, c, "fg")
	gcDependent(t, c, "fg-child", nil, ownerRef(fg, true))
	// kubectl waits until the owner is gone, which takes the collector.
	k.ok(t, "delete", "configmap", "fg", "--cascade=foreground")
	waitGone(t, c, "fg", "fg-child")

	or := gcOwner(t, c, "or")
	gcDependent(t, c, "or-child", nil, ownerRef(or, true))
	k.ok(t, "delete", "configmap", "or", "--cascade=orphan")
	waitGone(t, c, "or")
	if got := ownersOf(t, c, "or-child"); len(got) != 0 {
		t.Errorf("or-child still has owners %v", got)
	}

	bg := gcOwner(t, c, "bg")
	gcDependent(t, c, "bg-child", nil, ownerRef(bg, true))
	k.ok(t, "delete", "configmap", "bg")
	waitGone(t, c, "bg", "bg-child")
	stillThere(t, c, "or-child")
}

// An ownership cycle (one owns two owns three owns one, each reference
// blocking) deleted in the foreground still goes, as upstream's collector
// breaks it, rather than every object waiting for the next forever.
func TestGarbageCollectorForegroundCycle(t *testing.T) {
	c := startClusterWith(t, withoutControllers("garbagecollector"))
	startGC(t, c)
	ctx := ctxT(t)
	cms := c.client.CoreV1().ConfigMaps("default")
	one := gcOwner(t, c, "one")
	gcDependent(t, c, "two", nil, ownerRef(one, true))
	two, err := cms.Get(ctx, "two", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gcDependent(t, c, "three", nil, ownerRef(two, true))
	three, err := cms.Get(ctx, "three", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	one.OwnerReferences = []metav1.OwnerReference{ownerRef(three, true)}
	if _, err := cms.Update(ctx, one, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "one", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c, "one", "two", "three")
}
