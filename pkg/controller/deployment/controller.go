package deployment

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
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
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return nil
}

// Controller rolls Deployments out through ReplicaSets.
type Controller struct {
	client      kubernetes.Interface
	dLister     appslisters.DeploymentLister
	rsLister    appslisters.ReplicaSetLister
	podLister   corelisters.PodLister
	synced      []cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	broadcaster record.EventBroadcaster // nil with Config.Recorder
	recorder    record.EventRecorder
	clock       clock.PassiveClock
	workers     int
	log         *slog.Logger
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
		synced: []cache.InformerSynced{dInf.Informer().HasSynced, rsInf.Informer().HasSynced, podInf.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "deployment"}),
		recorder: cfg.Recorder,
		clock:    cfg.Clock,
		workers:  cfg.Workers,
		log:      cfg.Logger.With("controller", "deployment"),
	}
	if c.recorder == nil {
		c.broadcaster = record.NewBroadcaster()
		c.recorder = c.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "deployment-controller"})
	}
	if _, err := dInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue, UpdateFunc: func(_, cur any) { c.enqueue(cur) }, DeleteFunc: c.enqueue,
	}); err != nil {
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
func (c *Controller) Start(ctx context.Context) error {
	defer c.queue.ShutDown()
	if c.broadcaster != nil {
		c.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.client.CoreV1().Events("")})
		defer c.broadcaster.Shutdown()
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return ctx.Err()
	}
	c.log.Info("started", "workers", c.workers)
	for range c.workers {
		go wait.UntilWithContext(ctx, c.work, time.Second)
	}
	<-ctx.Done()
	return nil
}

func (c *Controller) work(ctx context.Context) {
	for {
		key, quit := c.queue.Get()
		if quit {
			return
		}
		if err := c.Reconcile(ctx, key); err != nil {
			if apierrors.IsConflict(err) {
				// Our cache was behind a write (often our own): look
				// again once it has caught up.
				c.log.Debug("sync conflict", "deployment", key, "err", err)
			} else {
				c.log.Warn("sync failed", "deployment", key, "err", err)
			}
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}

func (c *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

// resolve is the Deployment a controller reference in namespace ns
// names, if it still exists with that UID.
func (c *Controller) resolve(ns string, ref *metav1.OwnerReference) *appsv1.Deployment {
	if ref == nil || ref.Kind != controllerKind.Kind {
		return nil
	}
	d, err := c.dLister.Deployments(ns).Get(ref.Name)
	if err != nil || d.UID != ref.UID {
		return nil
	}
	return d
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
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		tomb, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			return
		}
		if rs, ok = tomb.Obj.(*appsv1.ReplicaSet); !ok {
			return
		}
	}
	if d := c.resolve(rs.Namespace, metav1.GetControllerOf(rs)); d != nil {
		c.enqueue(d)
	}
}

// deletePod wakes a Recreate Deployment waiting for its old pods to go.
func (c *Controller) deletePod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		tomb, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			return
		}
		if pod, ok = tomb.Obj.(*corev1.Pod); !ok {
			return
		}
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return
	}
	rs, err := c.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return
	}
	if d := c.resolve(rs.Namespace, metav1.GetControllerOf(rs)); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		c.enqueue(d)
	}
}
