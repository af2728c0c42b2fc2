package deployment

import (
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/controller/controllerref"
	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// DefaultWorkers is Kubernetes' --concurrent-deployment-syncs.
const DefaultWorkers = 5

// Event reasons, as Kubernetes' Deployment controller records them.
const (
	ReasonScalingReplicaSet = "ScalingReplicaSet"
	ReasonSelectingAll      = "SelectingAll"
)

// controllerKind is what the ReplicaSets' ownerReferences name.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// Config configures the controller; the rest comes from the kit.Context
// (its Clock stamps conditions and measures progress deadlines).
type Config struct {
	// Workers is how many Deployments are synced at once (default 5).
	Workers int
}

// DefaultConfig is the configuration Kubernetes runs with.
func DefaultConfig() Config {
	return Config{Workers: DefaultWorkers}
}

// Controller rolls Deployments out through ReplicaSets.
type Controller struct {
	kit.Base
	dLister   appslisters.DeploymentLister
	rsLister  appslisters.ReplicaSetLister
	podLister corelisters.PodLister
}

// New validates cfg and wires the controller to kc's Deployment,
// ReplicaSet and Pod informers. Nothing runs until Start (kit.Run starts
// the informers).
func New(kc *kit.Context, cfg Config) (*Controller, error) {
	workers, err := kit.Workers("deployment", cfg.Workers, DefaultWorkers)
	if err != nil {
		return nil, err
	}
	f := kc.Factory
	dInf, rsInf, podInf := f.Apps().V1().Deployments(), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods()
	b := kc.NewBase("deployment", "deployment", workers, "deployment-controller")
	l := b.Loop
	c := &Controller{
		dLister: dInf.Lister(), rsLister: rsInf.Lister(), podLister: podInf.Lister(),
		Base: b,
	}
	l.Reconcile = c.Reconcile
	return c, errors.Join(
		l.Watch(dInf.Informer(), loop.KeyHandler(c.Queue)),
		l.Watch(rsInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.addReplicaSet, UpdateFunc: c.updateReplicaSet, DeleteFunc: c.deleteReplicaSet,
		}),
		l.Watch(podInf.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: c.deletePod}))
}

func (c *Controller) enqueue(obj any) { loop.Enqueue(c.Queue, obj) }

// resolve is the Deployment a controller reference in namespace ns
// names, if it still exists with that UID.
func (c *Controller) resolve(ns string, ref *metav1.OwnerReference) *appsv1.Deployment {
	return controllerref.Resolve(ref, controllerKind.Kind, c.dLister.Deployments(ns).Get)
}

// enqueueMatching queues the Deployments whose selector matches an
// orphan ReplicaSet: one of them may adopt it.
func (c *Controller) enqueueMatching(rs *appsv1.ReplicaSet) {
	if len(rs.Labels) == 0 {
		return
	}
	ds, err := c.dLister.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, d := range ds {
		s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || s.Empty() || !s.Matches(labels.Set(rs.Labels)) {
			continue
		}
		c.enqueue(d)
	}
}

func (c *Controller) addReplicaSet(obj any) {
	rs := obj.(*appsv1.ReplicaSet)
	if rs.DeletionTimestamp != nil {
		c.deleteReplicaSet(rs)
		return
	}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if d := c.resolve(rs.Namespace, ref); d != nil {
			c.enqueue(d)
		}
		return
	}
	c.enqueueMatching(rs)
}

func (c *Controller) updateReplicaSet(old, cur any) {
	oldRS, curRS := old.(*appsv1.ReplicaSet), cur.(*appsv1.ReplicaSet)
	if oldRS.ResourceVersion == curRS.ResourceVersion {
		return
	}
	oldRef, curRef := metav1.GetControllerOf(oldRS), metav1.GetControllerOf(curRS)
	refChanged := !equality.Semantic.DeepEqual(oldRef, curRef)
	if refChanged && oldRef != nil {
		if d := c.resolve(oldRS.Namespace, oldRef); d != nil {
			c.enqueue(d)
		}
	}
	if curRef != nil {
		if d := c.resolve(curRS.Namespace, curRef); d != nil {
			c.enqueue(d)
		}
		return
	}
	if refChanged || !equality.Semantic.DeepEqual(oldRS.Labels, curRS.Labels) {
		c.enqueueMatching(curRS)
	}
}

func (c *Controller) deleteReplicaSet(obj any) {
	rs, ok := loop.As[*appsv1.ReplicaSet](obj)
	if !ok {
		return
	}
	if d := c.resolve(rs.Namespace, metav1.GetControllerOf(rs)); d != nil {
		c.enqueue(d)
	}
}

// deletePod wakes a Recreate Deployment waiting for its old pods to go.
func (c *Controller) deletePod(obj any) {
	pod, ok := loop.As[*corev1.Pod](obj)
	if !ok {
		return
	}
	rs := controllerref.Resolve(metav1.GetControllerOf(pod), "ReplicaSet", c.rsLister.ReplicaSets(pod.Namespace).Get)
	if rs == nil {
		return
	}
	if d := c.resolve(rs.Namespace, metav1.GetControllerOf(rs)); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		c.enqueue(d)
	}
}
