package replicaset

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// controllerKind is what the pods' ownerReferences name.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// Config configures the controller.
type Config struct {
	// Workers is how many ReplicaSets are synced at once (default 5).
	Workers int
	// BurstReplicas caps the pods created or deleted in one sync
	// (default 500).
	BurstReplicas int
	Logger        *slog.Logger
	// Clock drives availability (minReadySeconds) and expectations;
	// nil means the real clock.
	Clock clock.PassiveClock
	// Recorder receives Events; nil means Events are written to the API
	// through the controller's client while it runs.
	Recorder record.EventRecorder
}

// DefaultConfig is the configuration Kubernetes runs with.
func DefaultConfig() Config {
	return Config{Workers: DefaultWorkers, BurstReplicas: DefaultBurstReplicas}
}

func (c *Config) complete() error {
	if c.Workers < 0 || c.BurstReplicas < 0 {
		return fmt.Errorf("replicaset: workers (%d) and burst replicas (%d) must not be negative", c.Workers, c.BurstReplicas)
	}
	c.Workers = cmp.Or(c.Workers, DefaultWorkers)
	c.BurstReplicas = cmp.Or(c.BurstReplicas, DefaultBurstReplicas)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	c.Clock = cmp.Or[clock.PassiveClock](c.Clock, clock.RealClock{})
	return nil
}

// Controller keeps every ReplicaSet's pods at spec.replicas.
type Controller struct {
	client       kubernetes.Interface
	rsLister     appslisters.ReplicaSetLister
	podLister    corelisters.PodLister
	queue        workqueue.TypedRateLimitingInterface[string]
	loop         *loop.Loop[string]
	expectations *expectations
	recorder     record.EventRecorder
	clock        clock.PassiveClock
	burst        int
	log          *slog.Logger
}

// New validates cfg and wires the controller to factory's ReplicaSet and
// Pod informers. Nothing runs until Start (the caller starts factory).
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, cfg Config) (*Controller, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	rsInf, podInf := factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods()
	c := &Controller{
		client: client, rsLister: rsInf.Lister(), podLister: podInf.Lister(),
		queue:        loop.NewQueue[string]("replicaset", nil),
		expectations: newExpectations(cfg.Clock),
		recorder:     cfg.Recorder,
		clock:        cfg.Clock,
		burst:        cfg.BurstReplicas,
		log:          cfg.Logger.With("controller", "replicaset"),
	}
	c.loop = &loop.Loop[string]{
		Queue: c.queue, Reconcile: c.Reconcile, Workers: cfg.Workers,
		Synced: []cache.InformerSynced{rsInf.Informer().HasSynced, podInf.Informer().HasSynced},
		Events: client.CoreV1().Events(""),
		Logger: c.log, KeyAttr: "replicaset", Quiet: apierrors.IsConflict,
	}
	if c.recorder == nil {
		c.loop.Broadcaster = record.NewBroadcaster()
		c.recorder = c.loop.Broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "replicaset-controller"})
	}
	if _, err := rsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
		DeleteFunc: c.deleteReplicaSet,
	}); err != nil {
		return nil, fmt.Errorf("replicaset: replicaset handler: %w", err)
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.addPod, UpdateFunc: c.updatePod, DeleteFunc: c.deletePod,
	}); err != nil {
		return nil, fmt.Errorf("replicaset: pod handler: %w", err)
	}
	return c, nil
}

// Start syncs ReplicaSets with Config.Workers workers until ctx ends.
func (c *Controller) Start(ctx context.Context) error { return c.loop.Run(ctx) }

func (c *Controller) enqueue(obj any) { loop.Enqueue(c.queue, obj) }

func (c *Controller) enqueueAfter(rs *appsv1.ReplicaSet, d time.Duration) {
	if key, err := cache.MetaNamespaceKeyFunc(rs); err == nil {
		c.queue.AddAfter(key, d)
	}
}

func (c *Controller) deleteReplicaSet(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	// What was pending for the old object no longer matters; a
	// ReplicaSet of the same name starts afresh.
	c.expectations.forget(key)
	c.queue.Add(key)
}

// resolve is the ReplicaSet a controller reference in namespace ns
// names, if it still exists with that UID.
func (c *Controller) resolve(ns string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	return controllerref.Resolve(ref, controllerKind.Kind, c.rsLister.ReplicaSets(ns).Get)
}

// enqueueMatching queues every ReplicaSet whose selector matches an
// orphan pod: one of them may adopt it.
func (c *Controller) enqueueMatching(pod *corev1.Pod) {
	rss, err := c.rsLister.GetPodReplicaSets(pod)
	if err != nil {
		return
	}
	for _, rs := range rss {
		c.enqueue(rs)
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
			c.expectations.creationObserved(key)
			c.queue.Add(key)
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
	c.expectations.deletionObserved(key, podKey(pod))
	c.queue.Add(key)
}
