package replicaset

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/controller/controllerref"
	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
	"github.com/minik8s/minik8s/pkg/controller/podutil"
)

// Defaults, as in Kubernetes' kube-controller-manager
// (--concurrent-replicaset-syncs, the controller's burstReplicas).
const (
	DefaultWorkers       = 5
	DefaultBurstReplicas = 500
)

// Event reasons, as Kubernetes' ReplicaSet controller records them.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedDelete     = "FailedDelete"
)

// Config configures the controller; the rest comes from the kit.Context
// (its Clock drives availability, minReadySeconds, and expectations).
type Config struct {
	// Workers is how many ReplicaSets are synced at once (default 5).
	Workers int
	// BurstReplicas caps the pods created or deleted in one sync
	// (default 500).
	BurstReplicas int
}

// DefaultConfig is the configuration Kubernetes runs with.
func DefaultConfig() Config {
	return Config{Workers: DefaultWorkers, BurstReplicas: DefaultBurstReplicas}
}

// Controller keeps every ReplicaSet's pods at spec.replicas.
type Controller struct {
	kit.Base
	src          Source
	podLister    corelisters.PodLister
	expectations *kit.Expectations
	burst        int
}

// New validates cfg and wires the controller to kc's ReplicaSet and Pod
// informers. Nothing runs until Start (kit.Run starts the informers).
func New(kc *kit.Context, cfg Config) (*Controller, error) {
	return NewFor(kc, cfg, ReplicaSets(kc))
}

// NewFor is New for the kind src converts to ReplicaSets.
func NewFor(kc *kit.Context, cfg Config, src Source) (*Controller, error) {
	if cfg.BurstReplicas < 0 {
		return nil, fmt.Errorf("%s: burst replicas (%d) must not be negative", src.Name, cfg.BurstReplicas)
	}
	workers, err := kit.Workers(src.Name, cfg.Workers, DefaultWorkers)
	if err != nil {
		return nil, err
	}
	podInf := kc.Factory.Core().V1().Pods()
	b := kc.NewBase(src.Name, src.Name, workers, src.Component)
	l := b.Loop
	c := &Controller{
		src: src, podLister: podInf.Lister(),
		Base:         b,
		expectations: kit.NewExpectations(kc.Clock),
		burst:        cmp.Or(cfg.BurstReplicas, DefaultBurstReplicas),
	}
	l.Reconcile = c.Reconcile
	rsHandler := loop.KeyHandler(c.Queue)
	rsHandler.DeleteFunc = c.deleteReplicaSet
	return c, errors.Join(
		l.Watch(src.Informer, rsHandler),
		l.Watch(podInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.addPod, UpdateFunc: c.updatePod, DeleteFunc: c.deletePod,
		}))
}

func (c *Controller) enqueue(obj any) { loop.Enqueue(c.Queue, obj) }

func (c *Controller) enqueueAfter(rs *appsv1.ReplicaSet, d time.Duration) {
	if key, err := cache.MetaNamespaceKeyFunc(rs); err == nil {
		c.Queue.AddAfter(key, d)
	}
}

func (c *Controller) deleteReplicaSet(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	// What was pending for the old object no longer matters; a
	// ReplicaSet of the same name starts afresh.
	c.expectations.Forget(key)
	c.Queue.Add(key)
}

// resolve is the ReplicaSet a controller reference in namespace ns
// names, if it still exists with that UID.
func (c *Controller) resolve(ns string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	return controllerref.Resolve(ref, c.src.Kind.Kind, func(name string) (*appsv1.ReplicaSet, error) { return c.src.Get(ns, name) })
}

// enqueueMatching queues every ReplicaSet whose non-empty selector
// matches an orphan pod: one of them may adopt it.
func (c *Controller) enqueueMatching(pod *corev1.Pod) {
	if len(pod.Labels) == 0 {
		return
	}
	rss, err := c.src.List(pod.Namespace)
	if err != nil {
		return
	}
	for _, rs := range rss {
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels)) {
			c.enqueue(rs)
		}
	}
}

func (c *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		// Seen for the first time already terminating (a restart of the
		// controller, or a relist): it counts as gone.
		c.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if rs := c.resolve(pod.Namespace, ref); rs != nil {
			key, _ := cache.MetaNamespaceKeyFunc(rs)
			c.expectations.CreationObserved(key)
			c.Queue.Add(key)
		}
		return
	}
	c.enqueueMatching(pod)
}

func (c *Controller) updatePod(old, cur any) {
	oldPod, curPod := old.(*corev1.Pod), cur.(*corev1.Pod)
	if oldPod.ResourceVersion == curPod.ResourceVersion {
		// A resync: nothing changed.
		return
	}
	labelsChanged := !equality.Semantic.DeepEqual(oldPod.Labels, curPod.Labels)
	if curPod.DeletionTimestamp != nil {
		// Graceful deletion started: the kubelet removes the pod later,
		// but a replacement should not wait for that.
		c.deletePod(curPod)
		if labelsChanged {
			c.deletePod(oldPod)
		}
		return
	}
	oldRef, curRef := metav1.GetControllerOf(oldPod), metav1.GetControllerOf(curPod)
	refChanged := !equality.Semantic.DeepEqual(oldRef, curRef)
	if refChanged && oldRef != nil {
		if rs := c.resolve(oldPod.Namespace, oldRef); rs != nil {
			c.enqueue(rs)
		}
	}
	if curRef != nil {
		rs := c.resolve(curPod.Namespace, curRef)
		if rs == nil {
			return
		}
		c.enqueue(rs)
		if !podutil.IsReady(oldPod) && podutil.IsReady(curPod) && rs.Spec.MinReadySeconds > 0 {
			// Available only after minReadySeconds: look again then
			// (plus a second, as Kubernetes does, to be past the edge).
			c.enqueueAfter(rs, time.Duration(rs.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if labelsChanged || refChanged {
		c.enqueueMatching(curPod)
	}
}

func (c *Controller) deletePod(obj any) {
	pod, ok := loop.As[*corev1.Pod](obj)
	if !ok {
		return
	}
	rs := c.resolve(pod.Namespace, metav1.GetControllerOf(pod))
	if rs == nil {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(rs)
	if err != nil {
		return
	}
	c.expectations.DeletionObserved(key, podKey(pod))
	c.Queue.Add(key)
}
