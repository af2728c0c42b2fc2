package daemonset

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
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/minik8s/minik8s/pkg/controller/controllerref"
	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
	"github.com/minik8s/minik8s/pkg/controller/podutil"
)

// Defaults, as in Kubernetes' kube-controller-manager
// (--concurrent-daemonset-syncs, the controller's BurstReplicas and its
// failed-pod back-off).
const (
	DefaultWorkers       = 2
	DefaultBurstReplicas = 250
	DefaultBackoffBase   = time.Second
	DefaultBackoffMax    = 15 * time.Minute
)

// Event reasons, as Kubernetes' DaemonSet controller records them.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedDelete     = "FailedDelete"
	ReasonFailedDaemonPod  = "FailedDaemonPod"
	ReasonSelectingAll     = "SelectingAll"
)

// controllerKind is what the pods' and revisions' ownerReferences name.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// Config configures the controller; the rest comes from the kit.Context
// (its Clock drives availability, back-off and expectations).
type Config struct {
	// Workers is how many DaemonSets are synced at once (default 2).
	Workers int
	// BurstReplicas caps the pods created or deleted in one sync
	// (default 250).
	BurstReplicas int
	// BackoffBase and BackoffMax bound the wait before a node's failed
	// daemon pod is replaced again (default 1s doubling up to 15m).
	BackoffBase, BackoffMax time.Duration
}

// Controller runs every DaemonSet's pods, one per eligible node.
type Controller struct {
	kit.Base
	dsLister      appslisters.DaemonSetLister
	podLister     corelisters.PodLister
	nodeLister    corelisters.NodeLister
	historyLister appslisters.ControllerRevisionLister
	expectations  *kit.Expectations
	backoff       *flowcontrol.Backoff
	burst         int
}

// New validates cfg and wires the controller to kc's DaemonSet, Pod,
// Node and ControllerRevision informers. Nothing runs until Start.
func New(kc *kit.Context, cfg Config) (*Controller, error) {
	if cfg.BurstReplicas < 0 || cfg.BackoffBase < 0 || cfg.BackoffMax < 0 {
		return nil, fmt.Errorf("daemonset: burst and back-off must not be negative")
	}
	workers, err := kit.Workers("daemonset", cfg.Workers, DefaultWorkers)
	if err != nil {
		return nil, err
	}
	apps, core := kc.Factory.Apps().V1(), kc.Factory.Core().V1()
	dsInf, podInf, nodeInf, crInf := apps.DaemonSets(), core.Pods(), core.Nodes(), apps.ControllerRevisions()
	b := kc.NewBase("daemonset", "daemonset", workers, "daemonset-controller")
	c := &Controller{
		Base:     b,
		dsLister: dsInf.Lister(), podLister: podInf.Lister(), nodeLister: nodeInf.Lister(), historyLister: crInf.Lister(),
		expectations: kit.NewExpectations(kc.Clock),
		backoff:      flowcontrol.NewFakeBackOff(cmp.Or(cfg.BackoffBase, DefaultBackoffBase), cmp.Or(cfg.BackoffMax, DefaultBackoffMax), kc.Clock),
		burst:        cmp.Or(cfg.BurstReplicas, DefaultBurstReplicas),
	}
	l := b.Loop
	l.Reconcile = c.Reconcile
	dsHandler := loop.KeyHandler(c.Queue)
	dsHandler.DeleteFunc = c.deleteDaemonSet
	return c, errors.Join(
		l.Watch(dsInf.Informer(), dsHandler),
		l.Watch(podInf.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: c.addPod, UpdateFunc: c.updatePod, DeleteFunc: c.deletePod}),
		l.Watch(nodeInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { c.enqueueAll() }, DeleteFunc: func(any) { c.enqueueAll() }, UpdateFunc: c.updateNode,
		}),
		l.Watch(crInf.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: c.deleteRevision}),
	)
}

func (c *Controller) enqueue(obj any) { loop.Enqueue(c.Queue, obj) }

func (c *Controller) enqueueAfter(ds *appsv1.DaemonSet, d time.Duration) {
	if key, err := cache.MetaNamespaceKeyFunc(ds); err == nil {
		c.Queue.AddAfter(key, d)
	}
}

// enqueueAll queues every DaemonSet: a node came, went or changed what
// may run on it.
func (c *Controller) enqueueAll() {
	all, err := c.dsLister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range all {
		c.enqueue(ds)
	}
}

// updateNode queues every DaemonSet when something eligibility reads
// changed: labels, taints, unschedulable. Heartbeats change none of them.
func (c *Controller) updateNode(old, cur any) {
	o, n := old.(*corev1.Node), cur.(*corev1.Node)
	if equality.Semantic.DeepEqual(o.Labels, n.Labels) && equality.Semantic.DeepEqual(o.Spec, n.Spec) {
		return
	}
	c.enqueueAll()
}

func (c *Controller) deleteDaemonSet(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.expectations.Forget(key)
	c.Queue.Add(key)
}

// deleteRevision queues its owner: a DaemonSet whose current revision was
// deleted writes it again.
func (c *Controller) deleteRevision(obj any) {
	cr, ok := loop.As[*appsv1.ControllerRevision](obj)
	if !ok {
		return
	}
	if ds := c.resolve(cr.Namespace, metav1.GetControllerOf(cr)); ds != nil {
		c.enqueue(ds)
	}
}

// resolve is the DaemonSet a controller reference in namespace ns names,
// if it still exists with that UID.
func (c *Controller) resolve(ns string, ref *metav1.OwnerReference) *appsv1.DaemonSet {
	return controllerref.Resolve(ref, controllerKind.Kind, c.dsLister.DaemonSets(ns).Get)
}

// enqueueMatching queues every DaemonSet whose selector matches an
// orphan pod: one of them may adopt it.
func (c *Controller) enqueueMatching(pod *corev1.Pod) {
	all, err := c.dsLister.DaemonSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range all {
		sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels)) {
			c.enqueue(ds)
		}
	}
}

func (c *Controller) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		c.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if ds := c.resolve(pod.Namespace, ref); ds != nil {
			key, _ := cache.MetaNamespaceKeyFunc(ds)
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
		return
	}
	if curPod.DeletionTimestamp != nil {
		// Graceful deletion started: the replacement need not wait for
		// the kubelet.
		c.deletePod(curPod)
		return
	}
	oldRef, curRef := metav1.GetControllerOf(oldPod), metav1.GetControllerOf(curPod)
	if !equality.Semantic.DeepEqual(oldRef, curRef) && oldRef != nil {
		if ds := c.resolve(oldPod.Namespace, oldRef); ds != nil {
			c.enqueue(ds)
		}
	}
	if curRef != nil {
		ds := c.resolve(curPod.Namespace, curRef)
		if ds == nil {
			return
		}
		c.enqueue(ds)
		if !podutil.IsReady(oldPod) && podutil.IsReady(curPod) && ds.Spec.MinReadySeconds > 0 {
			// Available only after minReadySeconds: look again then.
			c.enqueueAfter(ds, time.Duration(ds.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if !equality.Semantic.DeepEqual(oldPod.Labels, curPod.Labels) || oldRef != nil {
		c.enqueueMatching(curPod)
	}
}

func (c *Controller) deletePod(obj any) {
	pod, ok := loop.As[*corev1.Pod](obj)
	if !ok {
		return
	}
	ds := c.resolve(pod.Namespace, metav1.GetControllerOf(pod))
	if ds == nil {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(ds)
	if err != nil {
		return
	}
	c.expectations.DeletionObserved(key, podKey(pod))
	c.Queue.Add(key)
}

// podKey is the pod's namespace/name, the key expectations track.
func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }
