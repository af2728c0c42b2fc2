package nodeipam

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// Defaults, as in Kubernetes' kube-controller-manager and flannel.
const (
	DefaultClusterCIDR  = "10.244.0.0/16"
	DefaultNodeMaskSize = 24
)

// Event reasons, as Kubernetes' node IPAM controller uses them.
const (
	ReasonCIDRNotAvailable = "CIDRNotAvailable"
	ReasonCIDRConflict     = "CIDRAssignmentFailed"
)

// Config configures the controller.
type Config struct {
	// ClusterCIDR is carved into node pod CIDRs (default 10.244.0.0/16).
	ClusterCIDR string
	// NodeMaskSize is each node's prefix length (default 24).
	NodeMaskSize int
}

func (c *Config) complete() error {
	c.ClusterCIDR = cmp.Or(c.ClusterCIDR, DefaultClusterCIDR)
	c.NodeMaskSize = cmp.Or(c.NodeMaskSize, DefaultNodeMaskSize)
	return nil
}

// Controller gives every Node a pod CIDR of its own.
type Controller struct {
	kit.Base
	lister corelisters.NodeLister
	alloc  *allocator
}

// New validates cfg and wires the controller to kc's Node informer.
// Nothing runs until Start (kit.Run starts the informers).
func New(kc *kit.Context, cfg Config) (*Controller, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	cluster, err := netip.ParsePrefix(cfg.ClusterCIDR)
	if err != nil {
		return nil, fmt.Errorf("nodeipam: cluster CIDR: %w", err)
	}
	alloc, err := newAllocator(cluster, cfg.NodeMaskSize)
	if err != nil {
		return nil, fmt.Errorf("nodeipam: %w", err)
	}
	inf := kc.Factory.Core().V1().Nodes()
	// One worker: allocation decisions are serialized, and a node's
	// update is written before the next node is looked at.
	b := kc.NewBase("nodeipam", "node", 1, "nodeipam-controller")
	l := b.Loop
	l.Logger = l.Logger.With("clusterCIDR", cluster.String())
	c := &Controller{
		lister: inf.Lister(),
		Base:   b,
		alloc:  alloc,
	}
	l.Reconcile = c.Reconcile
	l.Ready = func(context.Context) error { return c.rebuild() }
	return c, l.Watch(inf.Informer(), loop.KeyHandler(c.Queue))
}

// rebuild reserves every pod CIDR the nodes already have.
func (c *Controller) rebuild() error {
	nodes, err := c.lister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("nodeipam: list nodes: %w", err)
	}
	for _, n := range nodes {
		if i, ok := c.indexOf(n); ok {
			if holder := c.alloc.holder(i); holder != "" && holder != n.Name {
				c.Log.Warn("two nodes have the same pod CIDR", "node", n.Name, "other", holder, "podCIDR", n.Spec.PodCIDR)
				continue
			}
			c.alloc.occupy(n.Name, i)
		}
	}
	c.Log.Info("pod CIDRs in use", "count", c.alloc.used())
	return nil
}

// indexOf is the subnet the node's spec.podCIDR names, if it is one of
// ours.
func (c *Controller) indexOf(n *corev1.Node) (int, bool) {
	if n.Spec.PodCIDR == "" {
		return 0, false
	}
	p, err := netip.ParsePrefix(n.Spec.PodCIDR)
	if err != nil {
		return 0, false
	}
	return c.alloc.index(p)
}

// Reconcile brings one node's pod CIDR to its desired state: a gone node
// frees its subnet; a node with a pod CIDR keeps it (reserved here); a
// node without one gets the subnet reserved for it, or a free one.
func (c *Controller) Reconcile(ctx context.Context, name string) error {
	node, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		c.alloc.release(name)
		c.enqueueWaiting()
		return nil
	}
	if err != nil {
		return err
	}
	if node.Spec.PodCIDR != "" {
		i, ok := c.indexOf(node)
		if !ok {
			// Set by someone else, outside our range: not ours to track.
			c.alloc.release(name)
			return nil
		}
		if holder := c.alloc.holder(i); holder != "" && holder != name {
			if other, err := c.lister.Get(holder); err == nil && other.Spec.PodCIDR == node.Spec.PodCIDR {
				c.Recorder.Eventf(node, corev1.EventTypeWarning, ReasonCIDRConflict,
					"pod CIDR %s is also node %s's", node.Spec.PodCIDR, holder)
				return nil
			}
			// The holder only had a reservation: the CIDR in the API wins,
			// and the holder gets another one.
			defer c.Queue.Add(holder)
		}
		c.alloc.occupy(name, i)
		return nil
	}

	i, err := c.alloc.allocate(name)
	if errors.Is(err, errFull) {
		c.Recorder.Eventf(node, corev1.EventTypeWarning, ReasonCIDRNotAvailable,
			"Node %s status is now: %s (no free /%d left in %s)", name, ReasonCIDRNotAvailable, c.alloc.maskSize, c.alloc.cluster)
		return fmt.Errorf("node %s: %w", name, err)
	}
	cidr := c.alloc.prefix(i).String()
	updated := node.DeepCopy()
	updated.Spec.PodCIDR, updated.Spec.PodCIDRs = cidr, []string{cidr}
	_, err = c.Client.CoreV1().Nodes().Update(ctx, updated, metav1.UpdateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.alloc.release(name)
		return nil
	case err != nil:
		// The reservation stays with the node for the retry (on a
		// conflict, the next look may find a CIDR set by someone else).
		return fmt.Errorf("set pod CIDR %s on node %s: %w", cidr, name, err)
	}
	c.Log.Info("assigned pod CIDR", "node", name, "podCIDR", cidr)
	return nil
}

// enqueueWaiting looks again at the nodes still without a pod CIDR: a
// subnet may just have been freed for them.
func (c *Controller) enqueueWaiting() {
	nodes, err := c.lister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, n := range nodes {
		if n.Spec.PodCIDR == "" {
			c.Queue.Add(n.Name)
		}
	}
}
