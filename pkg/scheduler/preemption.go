package scheduler

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// Preemption, as kube-scheduler's DefaultPreemption: a pod that fits no
// node may have pods of lower priority deleted from one node to make
// room. On each node the pods of lower priority are taken away in a copy
// of its NodeInfo; where the pod then passes the filters, victims are
// put back, the most important first, while the pod still fits: the rest
// are that node's victims. Of the candidate nodes the one whose most
// important victim has the lowest priority wins, then the lowest sum of
// victim priorities, then the fewest victims. The victims get the
// DisruptionTarget condition and are deleted (gracefully); the preemptor
// is nominated to the node (status.nominatedNodeName) and tried again
// when they are gone. While victims on its nominated node terminate, a
// pod preempts nothing more.
//
// A nominated pod holds its room: pods of no higher priority are
// filtered as if it already ran on its nominated node, so that the
// replacements its victims' controllers make do not take the room back
// (and get preempted in turn, without end).
//
// Unlike kube-scheduler, PodDisruptionBudgets do not order candidates.

// Reasons and messages of preemption, as Kubernetes spells them.
const (
	EventPreempted               = "Preempted"
	ReasonPreemptionByScheduler  = v1.PodReasonPreemptionByScheduler
	preemptionConditionMessageFn = "%s: preempting to accommodate a higher priority pod"
)

func podPriority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// candidate is one node where preemption makes the pod fit.
type candidate struct {
	node    *NodeInfo
	victims []*v1.Pod
}

// mayPreempt says whether pod may have others deleted for it now.
func (s *Scheduler) mayPreempt(pod *v1.Pod, nodes []*NodeInfo) bool {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return false
	}
	s.mu.Lock()
	nominated := s.nominated[podKey(pod)]
	s.mu.Unlock()
	if nominated == "" {
		nominated = pod.Status.NominatedNodeName
	}
	if nominated == "" {
		return true
	}
	prio := podPriority(pod)
	for _, n := range nodes {
		if n.Node == nil || n.Node.Name != nominated {
			continue
		}
		for _, p := range n.Pods {
			if p.Pod.DeletionTimestamp != nil && podPriority(p.Pod) < prio {
				return false
			}
		}
	}
	return true
}

// selectVictims finds the fewest pods of lower priority whose removal
// from node lets pod pass the filters; ok is false when none does.
func (p *profile) selectVictims(pod *PodInfo, node *NodeInfo, checks []NodeFilter) ([]*v1.Pod, bool) {
	prio := podPriority(pod.Pod)
	sim := node.clone()
	var lower []*PodInfo
	for _, pi := range node.Pods {
		if podPriority(pi.Pod) < prio && pi.Pod.DeletionTimestamp == nil {
			lower = append(lower, pi)
			sim.removePod(pi)
		}
	}
	if len(lower) == 0 || len(p.filterNode(pod, sim, checks)) > 0 {
		return nil, false
	}
	// The most important first: higher priority, then started earlier.
	slices.SortStableFunc(lower, func(a, b *PodInfo) int {
		if pa, pb := podPriority(a.Pod), podPriority(b.Pod); pa != pb {
			return int(pb) - int(pa)
		}
		return startTime(a.Pod).Compare(startTime(b.Pod).Time)
	})
	var victims []*v1.Pod
	for _, pi := range lower {
		sim.addPod(pi)
		if len(p.filterNode(pod, sim, checks)) > 0 {
			sim.removePod(pi)
			victims = append(victims, pi.Pod)
		}
	}
	return victims, len(victims) > 0
}

func startTime(pod *v1.Pod) metav1.Time {
	if pod.Status.StartTime != nil {
		return *pod.Status.StartTime
	}
	return pod.CreationTimestamp
}

// preemptionCandidate is the best node to preempt on, or nil.
func (p *profile) preemptionCandidate(pod *PodInfo, nodes []*NodeInfo) *candidate {
	var checks []NodeFilter
	for _, pf := range p.preFilters {
		if check := pf.PreFilter(pod, nodes); check != nil {
			checks = append(checks, check)
		}
	}
	var best *candidate
	var bestKey [3]int64
	for _, n := range nodes {
		victims, ok := p.selectVictims(pod, n, checks)
		if !ok {
			continue
		}
		highest, sum := int64(podPriority(victims[0])), int64(0)
		for _, v := range victims {
			highest = max(highest, int64(podPriority(v)))
			// Offset so that negative priorities still add up to more
			// with more victims, as kube-scheduler does.
			sum += int64(podPriority(v)) + 1<<31
		}
		key := [3]int64{highest, sum, int64(len(victims))}
		if best == nil || slices.Compare(key[:], bestKey[:]) < 0 {
			best, bestKey = &candidate{node: n, victims: victims}, key
		}
	}
	return best
}

// preempt deletes the victims of the best candidate node for pod, if
// there is one, and nominates pod to that node.
func (s *Scheduler) preempt(ctx context.Context, info *PodInfo, nodes []*NodeInfo) {
	pod := info.Pod
	if !s.mayPreempt(pod, nodes) {
		return
	}
	c := s.profile.preemptionCandidate(info, nodes)
	if c == nil {
		return
	}
	node := c.node.Node.Name
	s.log.Info("preempting", "pod", podKey(pod), "node", node, "victims", len(c.victims))
	s.mu.Lock()
	s.nominated[podKey(pod)] = node
	s.mu.Unlock()
	patch := fmt.Appendf(nil, `{"status":{"nominatedNodeName":%q}}`, node)
	if _, err := s.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil && !apierrors.IsNotFound(err) {
		s.log.Warn("nominate pod", "pod", podKey(pod), "node", node, "err", err)
	}
	schedulerName := pod.Spec.SchedulerName
	if schedulerName == "" {
		schedulerName = DefaultSchedulerName
	}
	for _, victim := range c.victims {
		cond := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: ReasonPreemptionByScheduler,
			Message: fmt.Sprintf(preemptionConditionMessageFn, schedulerName)}
		if conditions, changed := withCondition(victim.Status.Conditions, cond, metav1.NewTime(s.clock.Now())); changed {
			patch, err := conditionsPatch(victim.Status.Conditions, conditions)
			if err == nil {
				_, err = s.client.CoreV1().Pods(victim.Namespace).Patch(ctx, victim.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
			}
			if err != nil && !apierrors.IsNotFound(err) {
				s.log.Warn("mark preempted pod", "pod", podKey(victim), "err", err)
			}
		}
		err := s.client.CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &victim.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			s.log.Warn("delete preempted pod", "pod", podKey(victim), "err", err)
			continue
		}
		s.recorder.Eventf(victim, v1.EventTypeNormal, EventPreempted, "Preempted by pod %s on node %s", pod.UID, node)
	}
}

// withNominated is nodes as pod must see them: where pods of at least
// its priority are nominated, a copy of the node that counts them as
// running there, as kube-scheduler filters with nominated pods.
func (s *Scheduler) withNominated(pod *v1.Pod, nodes []*NodeInfo) []*NodeInfo {
	self, prio := podKey(pod), podPriority(pod)
	s.mu.Lock()
	byNode := map[string][]*v1.Pod{}
	for key, node := range s.nominated {
		if key == self {
			continue
		}
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		p, err := s.pods.Pods(ns).Get(name)
		if err != nil || p.Spec.NodeName != "" || p.DeletionTimestamp != nil || podPriority(p) < prio {
			continue // gone, bound (counted already), or of lower priority
		}
		byNode[node] = append(byNode[node], p)
	}
	s.mu.Unlock()
	if len(byNode) == 0 {
		return nodes
	}
	out := make([]*NodeInfo, len(nodes))
	for i, n := range nodes {
		out[i] = n
		if n.Node == nil || len(byNode[n.Node.Name]) == 0 {
			continue
		}
		c := n.clone()
		for _, p := range byNode[n.Node.Name] {
			c.addPod(NewPodInfo(p))
		}
		out[i] = c
	}
	return out
}
