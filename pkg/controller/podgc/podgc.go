package podgc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
	"github.com/minik8s/minik8s/pkg/controller/podutil"
)

// DefaultPeriod is how often every pod is checked, as Kubernetes'
// gcCheckPeriod.
const DefaultPeriod = 20 * time.Second

// DefaultQuarantine is how long a node must be missing before its pods
// are collected, as Kubernetes' quarantineTime: a node object deleted and
// created again (an agent re-registering) keeps its pods.
const DefaultQuarantine = 40 * time.Second

// Reason is the DisruptionTarget condition's reason on a collected pod.
const Reason = "DeletionByPodGC"

// Config configures the collector.
type Config struct {
	// Period between sweeps over every pod (default 20s).
	Period time.Duration
	// Quarantine is how long a pod's node must be missing before the pod
	// is collected (default 40s).
	Quarantine time.Duration
}

// Controller deletes pods that no kubelet will finish.
type Controller struct {
	kit.Base
	pods       corelisters.PodLister
	nodes      corelisters.NodeLister
	period     time.Duration
	quarantine time.Duration

	mu sync.Mutex
	// missing is when each node was first seen missing from the cache.
	missing map[string]time.Time
}

// New wires the collector to kc's Pod and Node informers.
func New(kc *kit.Context, cfg Config) (*Controller, error) {
	if cfg.Period < 0 || cfg.Quarantine < 0 {
		return nil, fmt.Errorf("podgc: period (%v) and quarantine (%v) must not be negative", cfg.Period, cfg.Quarantine)
	}
	podInf, nodeInf := kc.Factory.Core().V1().Pods(), kc.Factory.Core().V1().Nodes()
	b := kc.NewBase("podgc", "pod", 1, "")
	c := &Controller{Base: b, pods: podInf.Lister(), nodes: nodeInf.Lister(), period: cmp.Or(cfg.Period, DefaultPeriod),
		quarantine: cmp.Or(cfg.Quarantine, DefaultQuarantine), missing: map[string]time.Time{}}
	b.Loop.Reconcile = c.Reconcile
	b.Loop.Also = append(b.Loop.Also, c.sweep)
	onPod := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && c.collectable(p) {
			loop.Enqueue(c.Queue, p)
		}
	}
	return c, errors.Join(
		b.Loop.Watch(podInf.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: onPod, UpdateFunc: func(_, cur any) { onPod(cur) },
		}),
		b.Loop.Watch(nodeInf.Informer(), cache.ResourceEventHandlerFuncs{
			DeleteFunc: func(any) { c.enqueueCollectable() },
		}),
	)
}

// collectable says, from the caches, whether p may need collecting.
func (c *Controller) collectable(p *corev1.Pod) bool {
	if p.Spec.NodeName == "" {
		return p.DeletionTimestamp != nil
	}
	_, err := c.nodes.Get(p.Spec.NodeName)
	return apierrors.IsNotFound(err)
}

func (c *Controller) enqueueCollectable() {
	all, err := c.pods.List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range all {
		if c.collectable(p) {
			loop.Enqueue(c.Queue, p)
		}
	}
}

// sweep looks at every pod each period, for what events missed.
func (c *Controller) sweep(ctx context.Context) {
	t := c.Clock.NewTicker(c.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			c.enqueueCollectable()
		}
	}
}

// Reconcile collects one pod (namespace/name) if no kubelet will finish
// it.
func (c *Controller) Reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		if pod.DeletionTimestamp == nil {
			return nil
		}
		c.Log.Info("deleting unscheduled terminating pod", "pod", key)
		return c.forceDelete(ctx, pod)
	}
	if _, err := c.nodes.Get(pod.Spec.NodeName); !apierrors.IsNotFound(err) {
		c.forget(pod.Spec.NodeName)
		return err
	}
	if wait := c.quarantined(pod.Spec.NodeName); wait > 0 {
		c.Queue.AddAfter(key, wait)
		return nil
	}
	// The cache may not have seen a node that just joined: only the API
	// says it is gone.
	_, err = c.Client.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		c.forget(pod.Spec.NodeName)
		return err
	}
	c.Log.Info("deleting orphaned pod", "pod", key, "node", pod.Spec.NodeName)
	if !podutil.IsTerminal(pod) {
		if err := c.markFailed(ctx, pod); err != nil {
			return err
		}
	}
	return c.forceDelete(ctx, pod)
}

// quarantined is how much longer node must stay missing before its pods
// are collected; the first call for a node starts its quarantine.
func (c *Controller) quarantined(node string) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.Clock.Now()
	since, ok := c.missing[node]
	if !ok {
		c.missing[node], since = now, now
	}
	return c.quarantine - now.Sub(since)
}

// forget ends node's quarantine: it exists.
func (c *Controller) forget(node string) {
	c.mu.Lock()
	delete(c.missing, node)
	c.mu.Unlock()
}

// markFailed records why the pod ends, as Kubernetes does, so that its
// controller (a Job counting failures) sees a disruption, not a crash.
func (c *Controller) markFailed(ctx context.Context, pod *corev1.Pod) error {
	p := pod.DeepCopy()
	now := metav1.NewTime(c.Clock.Now())
	p.Status.Phase = corev1.PodFailed
	p.Status.Conditions = kit.SetCondition(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: Reason,
		Message: "PodGC: node no longer exists", LastTransitionTime: now,
	})
	_, err := c.Client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mark pod %s/%s failed: %w", p.Namespace, p.Name, err)
	}
	return nil
}

func (c *Controller) forceDelete(ctx context.Context, pod *corev1.Pod) error {
	err := c.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0), Preconditions: metav1.NewUIDPreconditions(string(pod.UID)),
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
