// Package serviceaccount is Kubernetes' serviceaccounts controller: every
// active namespace has the "default" service account, created when the
// namespace appears (the apiserver already creates it with the namespace,
// so this mostly re-creates one that was deleted). It owns the existence
// of those accounts and nothing of their content.
package serviceaccount

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
	"github.com/minik8s/minik8s/pkg/serviceaccount"
)

// Controller keeps the default service account of every namespace.
type Controller struct {
	kit.Base
	namespaces corelisters.NamespaceLister
	accounts   corelisters.ServiceAccountLister
	names      []string
}

// New wires the controller to kc's Namespace and ServiceAccount
// informers: a namespace added or changed, or an account deleted, has its
// namespace looked at.
func New(kc *kit.Context) (*Controller, error) {
	nsInf := kc.Factory.Core().V1().Namespaces()
	saInf := kc.Factory.Core().V1().ServiceAccounts()
	c := &Controller{
		Base:       kc.NewBase("serviceaccount", "namespace", 1, ""),
		namespaces: nsInf.Lister(), accounts: saInf.Lister(),
		names: []string{serviceaccount.DefaultServiceAccountName},
	}
	c.Loop.Reconcile = c.Reconcile
	return c, errors.Join(
		c.Loop.Watch(nsInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { loop.Enqueue(c.Queue, obj) },
			UpdateFunc: func(_, cur any) { loop.Enqueue(c.Queue, cur) },
		}),
		c.Loop.Watch(saInf.Informer(), cache.ResourceEventHandlerFuncs{
			DeleteFunc: func(obj any) {
				if sa, ok := loop.As[*corev1.ServiceAccount](obj); ok && c.managed(sa.Name) {
					c.Queue.Add(sa.Namespace)
				}
			},
		}),
	)
}

func (c *Controller) managed(name string) bool {
	for _, n := range c.names {
		if n == name {
			return true
		}
	}
	return false
}

// Reconcile creates the missing accounts of namespace ns, unless it is
// gone or going.
func (c *Controller) Reconcile(ctx context.Context, ns string) error {
	n, err := c.namespaces.Get(ns)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if n.Status.Phase != corev1.NamespaceActive || n.DeletionTimestamp != nil {
		return nil
	}
	var errs []error
	for _, name := range c.names {
		if _, err := c.accounts.ServiceAccounts(ns).Get(name); err == nil {
			continue
		} else if !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}
		_, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
		// A namespace being deleted refuses new content: nothing to do.
		if err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) && !apierrors.IsForbidden(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
