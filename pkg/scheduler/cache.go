package scheduler

import (
	"fmt"
	"maps"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// podState is a pod the cache counts on a node.
type podState struct {
	info *PodInfo
	node string
	// assumed: bound (or being bound) by this scheduler, not yet seen
	// assigned by the informer.
	assumed bool
	// deadline, once binding has finished, is when an assumed pod the
	// informer never confirmed stops counting.
	deadline *time.Time
}

// nodeCache is what each node has and what its pods take: the informers'
// pods plus the assumed ones. Safe for concurrent use.
type nodeCache struct {
	clock clock.Clock
	ttl   time.Duration

	mu         sync.Mutex
	nodes      map[string]*NodeInfo
	pods       map[string]*podState
	generation int64
}

func newNodeCache(clk clock.Clock, ttl time.Duration) *nodeCache {
	return &nodeCache{clock: clk, ttl: ttl, nodes: map[string]*NodeInfo{}, pods: map[string]*podState{}}
}

// touch returns the entry of a node, creating it (without its Node: pods
// may be seen before their node) and marking it changed.
func (c *nodeCache) touch(name string) *NodeInfo {
	ni, ok := c.nodes[name]
	if !ok {
		ni = &NodeInfo{}
		c.nodes[name] = ni
	}
	c.generation++
	ni.generation = c.generation
	return ni
}

// dropIfEmpty forgets an entry whose node is gone and which has no pods.
func (c *nodeCache) dropIfEmpty(name string) {
	if ni, ok := c.nodes[name]; ok && ni.Node == nil && len(ni.Pods) == 0 {
		delete(c.nodes, name)
	}
}

func (c *nodeCache) addNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.touch(node.Name).setNode(node)
}

func (c *nodeCache) removeNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.nodes[name]; !ok {
		return
	}
	c.touch(name).setNode(nil)
	c.dropIfEmpty(name)
}

// removeLocked takes a pod off its node.
func (c *nodeCache) removeLocked(key string) bool {
	ps, ok := c.pods[key]
	if !ok {
		return false
	}
	delete(c.pods, key)
	c.touch(ps.node).removePod(ps.info)
	c.dropIfEmpty(ps.node)
	return true
}

// addOrUpdatePod counts an assigned pod the informer reports; it replaces
// the assumed copy, if any. It reports whether the pod is news to other
// pods' affinity and spreading: not counted before, or only assumed, or
// on another node or with other labels.
func (c *nodeCache) addOrUpdatePod(pod *v1.Pod) bool {
	key := podKey(pod)
	info := NewPodInfo(pod)
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.pods[key]
	news := !ok || old.assumed || old.node != pod.Spec.NodeName || !maps.Equal(old.info.Pod.Labels, pod.Labels)
	c.removeLocked(key)
	c.pods[key] = &podState{info: info, node: pod.Spec.NodeName}
	c.touch(pod.Spec.NodeName).addPod(info)
	return news
}

// removePod stops counting a pod (deleted, finished, or an assumed pod
// whose binding failed). It reports whether the pod was counted.
func (c *nodeCache) removePod(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.removeLocked(key)
}

// assume counts a pod on the node it is about to be bound to.
func (c *nodeCache) assume(info *PodInfo) error {
	key := podKey(info.Pod)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pods[key]; ok {
		return fmt.Errorf("pod %s is already in the cache", key)
	}
	c.pods[key] = &podState{info: info, node: info.Pod.Spec.NodeName, assumed: true}
	c.touch(info.Pod.Spec.NodeName).addPod(info)
	return nil
}

// finishBinding starts the expiry of an assumed pod.
func (c *nodeCache) finishBinding(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.pods[key]; ok && ps.assumed {
		d := c.clock.Now().Add(c.ttl)
		ps.deadline = &d
	}
}

// forget drops an assumed pod whose binding failed.
func (c *nodeCache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.pods[key]; ok && ps.assumed {
		c.removeLocked(key)
	}
}

// counted reports whether the cache counts the pod on a node already.
func (c *nodeCache) counted(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pods[key]
	return ok
}

// expire drops the assumed pods past their deadline and says how many.
func (c *nodeCache) expire() int {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for key, ps := range c.pods {
		if ps.assumed && ps.deadline != nil && now.After(*ps.deadline) {
			c.removeLocked(key)
			n++
		}
	}
	return n
}

// snapshot is a consistent copy of the cache's nodes for one scheduling
// attempt; only the nodes that changed since the last one are copied.
type snapshot struct {
	infos map[string]*NodeInfo
	list  []*NodeInfo
}

// updateSnapshot brings s up to date and returns its nodes (only those
// whose Node object is known).
func (c *nodeCache) updateSnapshot(s *snapshot) []*NodeInfo {
	if s.infos == nil {
		s.infos = map[string]*NodeInfo{}
	}
	c.mu.Lock()
	for name, ni := range c.nodes {
		if cur, ok := s.infos[name]; !ok || cur.generation != ni.generation {
			s.infos[name] = ni.clone()
		}
	}
	if len(s.infos) != len(c.nodes) {
		for name := range s.infos {
			if _, ok := c.nodes[name]; !ok {
				delete(s.infos, name)
			}
		}
	}
	c.mu.Unlock()
	s.list = s.list[:0]
	for _, ni := range s.infos {
		if ni.Node != nil {
			s.list = append(s.list, ni)
		}
	}
	return s.list
}

func podKey(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }
