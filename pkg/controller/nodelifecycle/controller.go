package nodelifecycle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// Defaults, as in Kubernetes' kube-controller-manager.
const (
	DefaultNodeMonitorPeriod      = 5 * time.Second
	DefaultNodeMonitorGracePeriod = 40 * time.Second
	DefaultNodeStartupGracePeriod = 60 * time.Second
)

// Event reasons, as Kubernetes records them.
const (
	ReasonNodeNotReady         = "NodeNotReady"
	ReasonTaintManagerEviction = "TaintManagerEviction"
)

// podsByNode is the pod informer index this controller adds.
const podsByNode = "nodelifecycle/spec.nodeName"

// Config configures the controller.
type Config struct {
	// NodeMonitorPeriod is how often every node's health is checked
	// (default 5s).
	NodeMonitorPeriod time.Duration
	// NodeMonitorGracePeriod is how long a node may go without a Lease
	// renewal or Ready heartbeat before it is Unknown (default 40s).
	NodeMonitorGracePeriod time.Duration
	// NodeStartupGracePeriod replaces it for a node that never posted a
	// Ready condition (default 60s).
	NodeStartupGracePeriod time.Duration
}

func (c *Config) complete() error {
	if c.NodeMonitorPeriod < 0 || c.NodeMonitorGracePeriod < 0 || c.NodeStartupGracePeriod < 0 {
		return errors.New("nodelifecycle: negative period")
	}
	c.NodeMonitorPeriod = cmp.Or(c.NodeMonitorPeriod, DefaultNodeMonitorPeriod)
	c.NodeMonitorGracePeriod = cmp.Or(c.NodeMonitorGracePeriod, DefaultNodeMonitorGracePeriod)
	c.NodeStartupGracePeriod = cmp.Or(c.NodeStartupGracePeriod, DefaultNodeStartupGracePeriod)
	return nil
}

// Controller watches node health, taints nodes and evicts pods.
type Controller struct {
	kit.Base
	cfg      Config
	nodes    corelisters.NodeLister
	leases   coordlisters.LeaseLister
	pods     corelisters.PodLister
	podIndex cache.Indexer
	podQueue workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// health is what was last seen of each node's heartbeats.
	health map[string]*nodeHealth
	// evictions holds when each pod waiting out its tolerationSeconds was
	// first seen on a tainted node.
	evictions map[string]time.Time
}

// nodeHealth is the controller's record of a node's heartbeats.
type nodeHealth struct {
	// probe is when (on the controller's clock) a heartbeat last moved.
	probe     time.Time
	heartbeat metav1.Time
	renew     time.Time
}

// New validates cfg and wires the controller to kc's Node, Lease and
// Pod informers. Nothing runs until Start (kit.Run starts the
// informers).
func New(kc *kit.Context, cfg Config) (*Controller, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	nodeInf := kc.Factory.Core().V1().Nodes()
	leaseInf := kc.Factory.Coordination().V1().Leases()
	podInf := kc.Factory.Core().V1().Pods()
	if err := podInf.Informer().AddIndexers(cache.Indexers{podsByNode: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("nodelifecycle: pod index: %w", err)
	}
	b := kc.NewBase("nodelifecycle", "node", 1, "node-controller")
	l := b.Loop
	c := &Controller{
		cfg: cfg, nodes: nodeInf.Lister(), leases: leaseInf.Lister(), pods: podInf.Lister(), podIndex: podInf.Informer().GetIndexer(),
		Base:      b,
		podQueue:  loop.NewQueue[string]("nodelifecycle_eviction", kc.Clock),
		health:    map[string]*nodeHealth{},
		evictions: map[string]time.Time{},
	}
	evictions := &loop.Loop[string]{
		Queue: c.podQueue, ReconcileAfter: c.ReconcilePod, Workers: 2,
		Logger: c.Log.With("queue", "nodelifecycle_eviction"), KeyAttr: "pod",
	}
	l.Reconcile = c.Reconcile
	l.Also = []func(context.Context){evictions.Work, c.monitor}
	onNode := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if n, ok := obj.(*corev1.Node); ok {
			c.Queue.Add(n.Name)
			c.enqueuePods(n.Name)
		}
	}
	onLease := func(obj any) {
		if lease, ok := obj.(*coordinationv1.Lease); ok && lease.Namespace == corev1.NamespaceNodeLease {
			c.Queue.Add(lease.Name)
		}
	}
	return c, errors.Join(
		l.Watch(nodeInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: onNode, UpdateFunc: func(_, obj any) { onNode(obj) }, DeleteFunc: onNode,
		}),
		l.Watch(leaseInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: onLease, UpdateFunc: func(_, obj any) { onLease(obj) },
		}),
		l.Watch(podInf.Informer(), loop.KeyHandler(c.podQueue)))
}

// Start checks node health every NodeMonitorPeriod and evicts pods until
// ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	defer c.podQueue.ShutDown()
	return c.Loop.Run(ctx)
}

// monitor queues every node each NodeMonitorPeriod until ctx ends: time
// passing is what makes a node unhealthy, so each is looked at again,
// events or not.
func (c *Controller) monitor(ctx context.Context) {
	wait.UntilWithContext(ctx, func(context.Context) {
		nodes, err := c.nodes.List(labels.Everything())
		if err != nil {
			return
		}
		for _, n := range nodes {
			c.Queue.Add(n.Name)
		}
	}, c.cfg.NodeMonitorPeriod)
}

func (c *Controller) enqueuePods(node string) {
	objs, err := c.podIndex.ByIndex(podsByNode, node)
	if err != nil {
		return
	}
	for _, obj := range objs {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			c.podQueue.Add(key)
		}
	}
}

func (c *Controller) podsOn(node string) []*corev1.Pod {
	objs, err := c.podIndex.ByIndex(podsByNode, node)
	if err != nil {
		return nil
	}
	var out []*corev1.Pod
	for _, obj := range objs {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out
}

// Reconcile brings one node a step toward what its health says: its
// conditions Unknown once its heartbeats have stopped for the grace
// period (and its pods not Ready), its taints matching its conditions.
func (c *Controller) Reconcile(ctx context.Context, name string) error {
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		delete(c.health, name)
		c.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	now := c.Clock.Now()
	probe, grace := c.observe(node, now)
	if deadline := probe.Add(grace); now.After(deadline) {
		updated, changed, wasReady := markUnknown(node, metav1.NewTime(now))
		if changed {
			node, err = c.Client.CoreV1().Nodes().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
			if err != nil {
				return fmt.Errorf("mark node %s unknown: %w", name, err)
			}
			c.Log.Info("node stopped posting status", "node", name, "lastSeen", probe, "gracePeriod", grace)
			if wasReady {
				c.Recorder.Eventf(node, corev1.EventTypeNormal, ReasonNodeNotReady, "Node %s status is now: %s", name, ReasonNodeNotReady)
			}
		}
	} else {
		c.Queue.AddAfter(name, deadline.Sub(now)+time.Millisecond)
	}
	if ready := condition(node, corev1.NodeReady); ready != nil && ready.Status == corev1.ConditionUnknown {
		if err := c.markPodsNotReady(ctx, node, now); err != nil {
			return err
		}
	}
	taints, changed := reconcileTaints(node.Spec.Taints, desiredTaints(node), metav1.NewTime(now))
	if !changed {
		return nil
	}
	updated := node.DeepCopy()
	updated.Spec.Taints = taints
	if _, err := c.Client.CoreV1().Nodes().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("taint node %s: %w", name, err)
	}
	c.Log.Info("node taints updated", "node", name, "taints", taintStrings(taints))
	return nil
}

// observe records the node's heartbeats and returns when it was last seen
// alive, and the grace period that applies.
func (c *Controller) observe(node *corev1.Node, now time.Time) (probe time.Time, grace time.Duration) {
	ready := condition(node, corev1.NodeReady)
	var heartbeat metav1.Time
	if ready != nil {
		heartbeat = ready.LastHeartbeatTime
	}
	var renew time.Time
	if l, err := c.leases.Leases(corev1.NamespaceNodeLease).Get(node.Name); err == nil && l.Spec.RenewTime != nil {
		renew = l.Spec.RenewTime.Time
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.health[node.Name]
	switch {
	case h == nil:
		h = &nodeHealth{probe: now, heartbeat: heartbeat, renew: renew}
		if ready == nil {
			h.probe = node.CreationTimestamp.Time
		}
		c.health[node.Name] = h
	default:
		if !heartbeat.Equal(&h.heartbeat) {
			h.heartbeat, h.probe = heartbeat, now
		}
		if renew.After(h.renew) {
			h.renew, h.probe = renew, now
		}
	}
	grace = c.cfg.NodeMonitorGracePeriod
	if ready == nil {
		grace = c.cfg.NodeStartupGracePeriod
	}
	return h.probe, grace
}

// markPodsNotReady sets the Ready condition of the node's pods to False:
// no kubelet is there to say they are.
func (c *Controller) markPodsNotReady(ctx context.Context, node *corev1.Node, now time.Time) error {
	var errs []error
	for _, pod := range c.podsOn(node.Name) {
		i := -1
		for j, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodReady {
				i = j
			}
		}
		if i < 0 || pod.Status.Conditions[i].Status != corev1.ConditionTrue {
			continue
		}
		updated := pod.DeepCopy()
		updated.Status.Conditions[i].Status = corev1.ConditionFalse
		updated.Status.Conditions[i].LastTransitionTime = metav1.NewTime(now)
		_, err := c.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("mark pod %s/%s not ready: %w", pod.Namespace, pod.Name, err))
		default:
			c.Log.Info("pod marked not ready", "pod", pod.Namespace+"/"+pod.Name, "node", node.Name)
		}
	}
	return errors.Join(errs...)
}

// ReconcilePod evicts one pod if its node has a NoExecute taint it does
// not tolerate, or no longer tolerates. It returns how long until the pod
// must be looked at again when its eviction is still ahead.
func (c *Controller) ReconcilePod(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.cancelEviction(key, nil)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" {
		c.cancelEviction(key, nil)
		return 0, nil
	}
	node, err := c.nodes.Get(pod.Spec.NodeName)
	if apierrors.IsNotFound(err) {
		c.cancelEviction(key, nil)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	after, evict := tolerationWindow(pod.Spec.Tolerations, noExecuteTaints(node))
	if !evict {
		c.cancelEviction(key, pod)
		return 0, nil
	}
	now := c.Clock.Now()
	if after > 0 {
		c.mu.Lock()
		start, ok := c.evictions[key]
		if !ok {
			start = now
			c.evictions[key] = now
		}
		c.mu.Unlock()
		if deadline := start.Add(after); now.Before(deadline) {
			return deadline.Sub(now), nil
		}
	}
	c.Recorder.Eventf(pod, corev1.EventTypeNormal, ReasonTaintManagerEviction, "Marking for deletion Pod %s/%s", ns, name)
	c.Log.Info("evicting pod from tainted node", "pod", key, "node", node.Name, "taints", taintStrings(noExecuteTaints(node)))
	err = c.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return 0, fmt.Errorf("evict pod %s: %w", key, err)
	}
	c.cancelEviction(key, nil)
	return 0, nil
}

// cancelEviction forgets a pod's pending eviction; with pod set, one that
// was pending is reported as cancelled.
func (c *Controller) cancelEviction(key string, pod *corev1.Pod) {
	c.mu.Lock()
	_, pending := c.evictions[key]
	delete(c.evictions, key)
	c.mu.Unlock()
	if pending && pod != nil {
		c.Recorder.Eventf(pod, corev1.EventTypeNormal, ReasonTaintManagerEviction, "Cancelling deletion of Pod %s", key)
	}
}

func taintStrings(ts []corev1.Taint) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.ToString())
	}
	return out
}
