// Package rootcacertpublisher is Kubernetes' root-ca-cert-publisher
// controller: every active namespace has the ConfigMap kube-root-ca.crt
// whose ca.crt is the cluster CA, so that pods (through the projected
// volume the ServiceAccount admission gives them) can verify the
// apiserver. It owns that ConfigMap's data and its kubernetes.io/description
// annotation; a changed or deleted one is put back.
package rootcacertpublisher

import (
	"context"
	"errors"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
	"github.com/minik8s/minik8s/pkg/serviceaccount"
)

// DescriptionAnnotation and Description say what the ConfigMap is for,
// in Kubernetes' words.
const (
	DescriptionAnnotation = "kubernetes.io/description"
	Description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Controller publishes the cluster CA in every namespace.
type Controller struct {
	kit.Base
	rootCA     []byte
	namespaces corelisters.NamespaceLister
	configMaps corelisters.ConfigMapLister
}

// New wires the controller to kc's Namespace and ConfigMap informers;
// rootCA is the PEM to publish.
func New(kc *kit.Context, rootCA []byte) (*Controller, error) {
	if len(rootCA) == 0 {
		return nil, errors.New("root-ca-cert-publisher: no CA to publish")
	}
	nsInf := kc.Factory.Core().V1().Namespaces()
	cmInf := kc.Factory.Core().V1().ConfigMaps()
	c := &Controller{
		Base:       kc.NewBase("root-ca-cert-publisher", "namespace", 1, ""),
		rootCA:     rootCA,
		namespaces: nsInf.Lister(), configMaps: cmInf.Lister(),
	}
	c.Loop.Reconcile = c.Reconcile
	ours := func(obj any) {
		if cm, ok := loop.As[*corev1.ConfigMap](obj); ok && cm.Name == serviceaccount.RootCAConfigMapName {
			c.Queue.Add(cm.Namespace)
		}
	}
	return c, errors.Join(
		c.Loop.Watch(nsInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { loop.Enqueue(c.Queue, obj) },
			UpdateFunc: func(_, cur any) { loop.Enqueue(c.Queue, cur) },
		}),
		c.Loop.Watch(cmInf.Informer(), cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, cur any) { ours(cur) },
			DeleteFunc: ours,
		}),
	)
}

// Reconcile creates or repairs kube-root-ca.crt in namespace ns, unless
// the namespace is gone or going.
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
	data := map[string]string{serviceaccount.RootCAConfigMapKey: string(c.rootCA)}
	cm, err := c.configMaps.ConfigMaps(ns).Get(serviceaccount.RootCAConfigMapName)
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: serviceaccount.RootCAConfigMapName, Annotations: map[string]string{DescriptionAnnotation: Description}},
			Data:       data,
		}
		_, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) || apierrors.IsForbidden(err) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	if maps.Equal(cm.Data, data) && cm.Annotations[DescriptionAnnotation] != "" {
		return nil
	}
	cm = cm.DeepCopy()
	cm.Data = data
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[DescriptionAnnotation] = Description
	_, err = c.Client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile: the delete event brings it back
	}
	return err
}
