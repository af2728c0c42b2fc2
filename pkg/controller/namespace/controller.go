package namespace

import (
	"context"
	"errors"
	"fmt"
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
	remaining, err := c.deleteContent(ctx, name)
	if err != nil {
		return false, err
	}
	if remaining > 0 {
		return true, nil
	}
	return false, c.finalize(ctx, ns)
}

// deleteContent issues a delete for everything in the namespace and
// returns how many objects still exist.
func (c *Controller) deleteContent(ctx context.Context, ns string) (int, error) {
	lists, err := c.discovery.ServerPreferredNamespacedResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return 0, fmt.Errorf("discover namespaced resources: %w", err)
	}
	remaining := 0
	var errs []error
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if !hasVerbs(r.Verbs, "list", "deletecollection") {
				continue
			}
			client := c.dynamic.Resource(gv.WithResource(r.Name)).Namespace(ns)
			background := metav1.DeletePropagationBackground
			if err := client.DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete %s in %s: %w", r.Name, ns, err))
				continue
			}
			left, err := client.List(ctx, metav1.ListOptions{})
			if err != nil {
				errs = append(errs, err)
				continue
			}
			remaining += len(left.Items)
		}
	}
	return remaining, errors.Join(errs...)
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
