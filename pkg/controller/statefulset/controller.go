package statefulset

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

// DefaultWorkers is Kubernetes' --concurrent-statefulset-syncs.
const DefaultWorkers = 5

// Event reasons, as Kubernetes' StatefulSet controller records them.
const (
	ReasonSuccessfulCreate        = "SuccessfulCreate"
	ReasonFailedCreate            = "FailedCreate"
	ReasonSuccessfulDelete        = "SuccessfulDelete"
	ReasonFailedDelete            = "FailedDelete"
	ReasonSuccessfulUpdate        = "SuccessfulUpdate"
	ReasonFailedUpdate            = "FailedUpdate"
	ReasonRecreatingFailedPod     = "RecreatingFailedPod"
	ReasonRecreatingTerminatedPod = "RecreatingTerminatedPod"
)

// controllerKind is what the pods' and revisions' ownerReferences name.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// Config configures the controller; the rest comes from the kit.Context.
type Config struct {
	// Workers is how many StatefulSets are synced at once (default 5).
	Workers int
}

// Controller keeps every StatefulSet's pods, claims and revisions.
type Controller struct {
	kit.Base
	setLister      appslisters.StatefulSetLister
	podLister      corelisters.PodLister
	revisionLister appslisters.ControllerRevisionLister
	claimLister    corelisters.PersistentVolumeClaimLister
}

// New wires the controller to kc's StatefulSet, Pod, ControllerRevision
// and PersistentVolumeClaim informers. Nothing runs until Start.
func New(kc *kit.Context, cfg Config) (*Controller, error) {
	workers, err := kit.Workers("statefulset", cfg.Workers, DefaultWorkers)
	if err != nil {
		return nil, err
	}
	setInf, podInf := kc.Factory.Apps().V1().StatefulSets(), kc.Factory.Core().V1().Pods()
	revInf, claimInf := kc.Factory.Apps().V1().ControllerRevisions(), kc.Factory.Core().V1().PersistentVolumeClaims()
	c := &Controller{
		Base:      kc.NewBase("statefulset", "statefulset", workers, "statefulset-controller"),
		setLister: setInf.Lister(), podLister: podInf.Lister(),
		revisionLister: revInf.Lister(), claimLister: claimInf.Lister(),
	}
	l := c.Loop
	l.ReconcileAfter = c.Reconcile
	return c, errors.Join(
		l.Watch(setInf.Informer(), loop.KeyHandler(c.Queue)),
		l.Watch(podInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.podChanged, DeleteFunc: c.podChanged,
			UpdateFunc: func(old, cur any) {
				oldPod, curPod := old.(*corev1.Pod), cur.(*corev1.Pod)
				if oldPod.ResourceVersion == curPod.ResourceVersion {
					return
				}
				if !equality.Semantic.DeepEqual(metav1.GetControllerOf(oldPod), metav1.GetControllerOf(curPod)) ||
					!equality.Semantic.DeepEqual(oldPod.Labels, curPod.Labels) {
					// The set it left, or whose selector it left,
					// counts one pod less.
					c.podChanged(oldPod)
				}
				c.podChanged(curPod)
			},
		}),
		// A revision's controller is told of it so that one the user
		// deleted is made again; a claim's deletion can unblock the pod of
		// a scaled-up ordinal that waits for its old claim to go.
		l.Watch(revInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.ownedChanged, DeleteFunc: c.ownedChanged,
			UpdateFunc: func(_, cur any) { c.ownedChanged(cur) },
		}),
		l.Watch(claimInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: c.claimChanged, DeleteFunc: c.claimChanged,
			UpdateFunc: func(_, cur any) { c.claimChanged(cur) },
		}),
	)
}

func (c *Controller) enqueue(obj any) { loop.Enqueue(c.Queue, obj) }

// resolve is the StatefulSet a controller reference in ns names, if it
// still exists with that UID.
func (c *Controller) resolve(ns string, ref *metav1.OwnerReference) *appsv1.StatefulSet {
	return controllerref.Resolve(ref, controllerKind.Kind, c.setLister.StatefulSets(ns).Get)
}

// podChanged queues the pod's controller, or for an orphan every set
// whose selector matches it: one of them may adopt it.
func (c *Controller) podChanged(obj any) {
	pod, ok := loop.As[*corev1.Pod](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if set := c.resolve(pod.Namespace, ref); set != nil {
			c.enqueue(set)
		}
		return
	}
	c.enqueueMatching(pod.Namespace, pod.Labels)
}

func (c *Controller) ownedChanged(obj any) {
	m, ok := loop.As[metav1.Object](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(m); ref != nil {
		if set := c.resolve(m.GetNamespace(), ref); set != nil {
			c.enqueue(set)
		}
		return
	}
	c.enqueueMatching(m.GetNamespace(), m.GetLabels())
}

// claimChanged queues the sets whose selector matches a claim's labels:
// the claims a set makes carry its matchLabels.
func (c *Controller) claimChanged(obj any) {
	claim, ok := loop.As[*corev1.PersistentVolumeClaim](obj)
	if !ok {
		return
	}
	c.enqueueMatching(claim.Namespace, claim.Labels)
}

func (c *Controller) enqueueMatching(ns string, l map[string]string) {
	if len(l) == 0 {
		return
	}
	sets, err := c.setLister.StatefulSets(ns).List(labels.Everything())
	if err != nil {
		return
	}
	for _, set := range sets {
		sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		if sel.Matches(labels.Set(l)) {
			c.enqueue(set)
		}
	}
}
