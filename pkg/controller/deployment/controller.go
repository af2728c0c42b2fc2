package deployment

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/controller/controllerref"
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

// Config configures the controller.
type Config struct {
	// Workers is how many Deployments are synced at once (default 5).
	Workers int
	Logger  *slog.Logger
	// Clock stamps conditions and measures progress deadlines; nil
	// means the real clock.
	Clock clock.PassiveClock
	// Recorder receives Events; nil means Events are written to the API
	// through the controller's client while it runs.
	Recorder record.EventRecorder
}

// DefaultConfig is the configuration Kubernetes runs with.
func DefaultConfig() Config {
	return Config{Workers: DefaultWorkers}
}

func (c *Config) complete() error {
	if c.Workers < 0 {
		return fmt.Errorf("deployment: workers (%d) must not be negative", c.Workers)
	}
	c.Workers = cmp.Or(c.Workers, DefaultWorkers)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	c.Clock = cmp.Or[clock.PassiveClock](c.Clock, clock.RealClock{})
	return nil
}

// Controller rolls Deployments out through ReplicaSets.
type Controller struct {
	client    kubernetes.Interface
	dLister   appslisters.DeploymentLister
	rsLister  appslisters.ReplicaSetLister
	podLister corelisters.PodLister
	queue     workqueue.TypedRateLimitingInterface[string]
	loop      *loop.Loop[string]
	recorder  record.EventRecorder
	clock     clock.PassiveClock
	log       *slog.Logger
}

// New validates cfg and wires the controller to factory's Deployment,
// ReplicaSet and Pod informers. Nothing runs until Start (the caller
// starts factory).
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, cfg Config) (*Controller, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	dInf, rsInf, podInf := factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods()
	c := &Controller{
		client: client, dLister: dInf.Lister(), rsLister: rsInf.Lister(), podLister: podInf.Lister(),
		queue:    loop.NewQueue[string]("deployment", nil),
		recorder: cfg.Recorder,
		clock:    cfg.Clock,
		log:      cfg.Logger.With("controller", "deployment"),
	}
	c.loop = &loop.Loop[string]{
		Queue: c.queue, Reconcile: c.Reconcile, Workers: cfg.Workers,
		Synced: []cache.InformerSynced{dInf.Informer().HasSynced, rsInf.Informer().HasSynced, podInf.Informer().HasSynced},
		Events: client.CoreV1().Events(""),
		Logger: c.log, KeyAttr: "deployment", Quiet: apierrors.IsConflict,
	}
	if c.recorder == nil {
		c.loop.Broadcaster = record.NewBroadcaster()
		c.recorder = c.loop.Broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "deployment-controller"})
	}
	if _, err := dInf.Informer().AddEventHandler(loop.KeyHandler(c.queue)); err != nil {
		return nil, fmt.Errorf("deployment: deployment handler: %w", err)
	}
	if _, err := rsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.addReplicaSet, UpdateFunc: c.updateReplicaSet, DeleteFunc: c.deleteReplicaSet,
	}); err != nil {
		return nil, fmt.Errorf("deployment: replicaset handler: %w", err)
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: c.deletePod}); err != nil {
		return nil, fmt.Errorf("deployment: pod handler: %w", err)
	}
	return c, nil
}

// Start syncs Deployments with Config.Workers workers until ctx ends.
func (c *Controller) Start(ctx context.Context) error { return c.loop.Run(ctx) }

func (c *Controller) enqueue(obj any) { loop.Enqueue(c.queue, obj) }

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
