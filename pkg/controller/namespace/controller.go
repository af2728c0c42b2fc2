package namespace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// Controller empties and finalizes namespaces that are being deleted.
type Controller struct {
	kit.Base
	dynamic   dynamic.Interface
	discovery discovery.DiscoveryInterface
	lister    corelisters.NamespaceLister
	// recheck is how soon a namespace whose content is still going away
	// (pods terminating gracefully, finalizers) is looked at again.
	recheck time.Duration
}

// New wires the controller to kc's Namespace informer; it deletes
// namespaces' content through kc.Dynamic.
func New(kc *kit.Context) (*Controller, error) {
	inf := kc.Factory.Core().V1().Namespaces()
	b := kc.NewBase("namespace", "namespace", 1, "")
	l := b.Loop
	c := &Controller{
		dynamic: kc.Dynamic, discovery: kc.Client.Discovery(),
		lister:  inf.Lister(),
		Base:    b,
		recheck: 2 * time.Second,
	}
	l.ReconcileAfter = c.reconcileAfter
	return c, l.Watch(inf.Informer(), loop.KeyHandler(c.Queue))
}

// reconcileAfter looks at a namespace again after recheck while its
// content is still going away.
func (c *Controller) reconcileAfter(ctx context.Context, name string) (time.Duration, error) {
	again, err := c.Reconcile(ctx, name)
	if again {
		return c.recheck, err
	}
	return 0, err
}

// Reconcile moves one namespace toward deletion. It reports whether
// content is still going away and the namespace must be looked at again.
func (c *Controller) Reconcile(ctx context.Context, name string) (bool, error) {
	ns, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if ns.DeletionTimestamp == nil || !hasFinalizer(ns) {
		return false, nil
	}
	progress := c.deleteContent(ctx, name)
	ns, err = c.writeConditions(ctx, ns, progress.conditions())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if progress.err() != nil {
		return false, progress.err()
	}
	if len(progress.remaining) > 0 {
		return true, nil
	}
	return false, c.finalize(ctx, ns)
}

// deletion is how far the deletion of a namespace's content got.
type deletion struct {
	discoveryErr, parseErr error
	deleteErrs             []error
	// remaining counts the objects left by resource ("pods."),
	// finalizers those left by the finalizers holding them.
	remaining  map[string]int
	finalizers map[string]int
}

func (d *deletion) err() error {
	return errors.Join(append([]error{d.discoveryErr, d.parseErr}, d.deleteErrs...)...)
}

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// deleteContent deletes everything in the namespace, its pods first
// and alone: while any pod is left, nothing else is deleted, so that a
// pod's ConfigMaps, Secrets and ServiceAccount outlive it, as with
// Kubernetes' ordered namespace deletion.
func (c *Controller) deleteContent(ctx context.Context, ns string) *deletion {
	d := &deletion{remaining: map[string]int{}, finalizers: map[string]int{}}
	lists, err := c.discovery.ServerPreferredNamespacedResources()
	if err != nil {
		if !discovery.IsGroupDiscoveryFailedError(err) {
			d.discoveryErr = fmt.Errorf("discover namespaced resources: %w", err)
			return d
		}
		d.discoveryErr = err
	}
	var resources []schema.GroupVersionResource
	hasPods := false
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			d.parseErr = errors.Join(d.parseErr, err)
			continue
		}
		for _, r := range list.APIResources {
			if !hasVerbs(r.Verbs, "list", "deletecollection") {
				continue
			}
			if gvr := gv.WithResource(r.Name); gvr == podsResource {
				hasPods = true
			} else {
				resources = append(resources, gvr)
			}
		}
	}
	if hasPods {
		c.deleteAll(ctx, ns, podsResource, d)
		if d.remaining[podsResource.Resource+"."] > 0 {
			return d
		}
	}
	for _, gvr := range resources {
		c.deleteAll(ctx, ns, gvr, d)
	}
	return d
}

// deleteAll deletes one resource's objects in the namespace and counts
// those left.
func (c *Controller) deleteAll(ctx context.Context, ns string, gvr schema.GroupVersionResource, d *deletion) {
	client := c.dynamic.Resource(gvr).Namespace(ns)
	background := metav1.DeletePropagationBackground
	if err := client.DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		d.deleteErrs = append(d.deleteErrs, fmt.Errorf("failed to delete %s in %s: %w", gvr.Resource, ns, err))
		return
	}
	left, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		d.deleteErrs = append(d.deleteErrs, fmt.Errorf("failed to list %s in %s: %w", gvr.Resource, ns, err))
		return
	}
	if len(left.Items) == 0 {
		return
	}
	d.remaining[gvr.Resource+"."+gvr.Group] += len(left.Items)
	for _, o := range left.Items {
		for _, f := range o.GetFinalizers() {
			d.finalizers[f]++
		}
	}
}

// conditions are the namespace's deletion conditions, in Kubernetes'
// words: each type True with what went wrong or is left, else False
// with its "all done" reason.
func (d *deletion) conditions() []corev1.NamespaceCondition {
	var out []corev1.NamespaceCondition
	set := func(t corev1.NamespaceConditionType, failed bool, reason, message, okReason, okMessage string) {
		if failed {
			out = append(out, corev1.NamespaceCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message})
		} else {
			out = append(out, corev1.NamespaceCondition{Type: t, Status: corev1.ConditionFalse, Reason: okReason, Message: okMessage})
		}
	}
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	set(corev1.NamespaceDeletionDiscoveryFailure, d.discoveryErr != nil, "DiscoveryFailed", errText(d.discoveryErr),
		"ResourcesDiscovered", "All resources successfully discovered")
	set(corev1.NamespaceDeletionGVParsingFailure, d.parseErr != nil, "GroupVersionParsingFailed", errText(d.parseErr),
		"ParsedGroupVersions", "All legacy kube types successfully parsed")
	msgs := make([]string, 0, len(d.deleteErrs))
	for _, err := range d.deleteErrs {
		msgs = append(msgs, err.Error())
	}
	slices.Sort(msgs)
	set(corev1.NamespaceDeletionContentFailure, len(msgs) > 0, "ContentDeletionFailed",
		fmt.Sprintf("Failed to delete all resource types, %d remaining: %s", len(msgs), strings.Join(msgs, ", ")),
		"ContentDeleted", "All content successfully deleted, may be waiting on finalization")
	var left []string
	for r, n := range d.remaining {
		left = append(left, fmt.Sprintf("%s has %d resource instances", r, n))
	}
	slices.Sort(left)
	set(corev1.NamespaceContentRemaining, len(left) > 0, "SomeResourcesRemain",
		"Some resources are remaining: "+strings.Join(left, ", "), "ContentRemoved", "All content successfully removed")
	var held []string
	for f, n := range d.finalizers {
		held = append(held, fmt.Sprintf("%s in %d resource instances", f, n))
	}
	slices.Sort(held)
	set(corev1.NamespaceFinalizersRemaining, len(held) > 0, "SomeFinalizersRemain",
		"Some content in the namespace has finalizers remaining: "+strings.Join(held, ", "),
		"ContentHasNoFinalizers", "All content-preserving finalizers finished")
	return out
}

// writeConditions writes the deletion conditions that changed, a
// transition time moving only with a status, and returns the namespace
// as now stored.
func (c *Controller) writeConditions(ctx context.Context, ns *corev1.Namespace, conditions []corev1.NamespaceCondition) (*corev1.Namespace, error) {
	updated := ns.DeepCopy()
	changed := false
	now := metav1.NewTime(c.Clock.Now())
	for _, want := range conditions {
		i := slices.IndexFunc(updated.Status.Conditions, func(c corev1.NamespaceCondition) bool { return c.Type == want.Type })
		if i < 0 {
			want.LastTransitionTime = now
			updated.Status.Conditions = append(updated.Status.Conditions, want)
			changed = true
			continue
		}
		old := &updated.Status.Conditions[i]
		if old.Status == want.Status && old.Reason == want.Reason && old.Message == want.Message {
			continue
		}
		if old.Status != want.Status {
			old.LastTransitionTime = now
		}
		old.Status, old.Reason, old.Message = want.Status, want.Reason, want.Message
		changed = true
	}
	if !changed {
		return ns, nil
	}
	return c.Client.CoreV1().Namespaces().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
}

func (c *Controller) finalize(ctx context.Context, ns *corev1.Namespace) error {
	ns = ns.DeepCopy()
	kept := ns.Spec.Finalizers[:0]
	for _, f := range ns.Spec.Finalizers {
		if f != corev1.FinalizerKubernetes {
			kept = append(kept, f)
		}
	}
	ns.Spec.Finalizers = kept
	_, err := c.Client.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func hasFinalizer(ns *corev1.Namespace) bool {
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			return true
		}
	}
	return false
}

func hasVerbs(have metav1.Verbs, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			if h == w {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
