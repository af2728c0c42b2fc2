package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Condition reasons of PodScheduled=False, as Kubernetes sets them.
const (
	ReasonUnschedulableCondition = v1.PodReasonUnschedulable // "Unschedulable"
	ReasonSchedulerError         = v1.PodReasonSchedulerError
)

// Event reasons.
const (
	EventScheduled        = "Scheduled"
	EventFailedScheduling = "FailedScheduling"
)

// scheduleNext takes one key off the queue and makes one attempt at it. It
// returns false once the queue has shut down.
func (s *Scheduler) scheduleNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	if ctx.Err() != nil {
		return false
	}
	s.attempt(ctx, q, key)
	return true
}

// attempt reads the pod as it is now and, if it is still pending and
// ours, finds it a node and starts binding it there.
func (s *Scheduler) attempt(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], key string) {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	pod, err := s.pods.Pods(ns).Get(name)
	if err != nil || !s.responsible(pod) || s.cache.counted(key) {
		// Gone, bound, or being bound: nothing to do.
		q.Forget(key)
		s.mu.Lock()
		delete(s.unschedulable, key)
		s.mu.Unlock()
		return
	}
	defer s.attempts.Add(1)
	s.mu.Lock()
	moves, podMoves := s.moves, s.podMoves
	s.mu.Unlock()

	info := NewPodInfo(pod)
	nodes := s.withNominated(pod, s.cache.updateSnapshot(&s.snap))
	node, err := s.profile.schedule(info, nodes, s.rnd)
	if err != nil {
		var fe *FitError
		if errors.As(err, &fe) && fe.NumAllNodes > 0 && fe.PreFilterMsg == "" {
			s.preempt(ctx, info, nodes)
		}
		s.failed(ctx, q, key, pod, moves, podMoves, err)
		return
	}
	// Count the pod on its node before binding, so the next attempts see
	// it. The copy shares the informer's (read-only) fields.
	assumed := *pod
	assumed.Spec.NodeName = node.Node.Name
	info.Pod = &assumed
	if err := s.cache.assume(info); err != nil {
		s.log.Error("assume pod", "pod", key, "err", err)
		q.AddRateLimited(key)
		return
	}
	s.inflight.Add(1)
	go s.bind(ctx, q, key, &assumed)
}

// failed sends a pod that fits nowhere back to the queue and tells why: the
// PodScheduled condition and a FailedScheduling event.
func (s *Scheduler) failed(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], key string, pod *v1.Pod, moves, podMoves uint64, err error) {
	msg := err.Error()
	s.log.Info("pod does not fit", "pod", key, "reason", msg)
	var fe *FitError
	byPods := errors.As(err, &fe) && fe.keptOutByPods()
	s.mu.Lock()
	if s.moves != moves || (byPods && s.podMoves != podMoves) {
		// Something that may make it fit happened during the attempt.
		s.limiter.When(key)
		q.Add(key)
	} else {
		s.unschedulable[key] = byPods
		q.AddRateLimited(key)
	}
	s.mu.Unlock()
	s.recorder.Event(pod, v1.EventTypeWarning, EventFailedScheduling, msg)
	s.inflight.Add(1)
	go func() {
		defer s.inflight.Done()
		s.setNotScheduled(ctx, pod, ReasonUnschedulableCondition, msg)
	}()
}

// bind posts the binding of an assumed pod.
func (s *Scheduler) bind(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], key string, pod *v1.Pod) {
	defer s.inflight.Done()
	node := pod.Spec.NodeName
	// The pod's WaitForFirstConsumer claims learn their node first, so
	// that their volumes are made there; the kubelet starts the pod once
	// they are bound.
	vb := VolumeBinding{Listers: &s.listers.Volumes}
	err := s.selectNode(ctx, vb.claimsToAnnotate(pod, node), node)
	if err == nil {
		err = s.client.CoreV1().Pods(pod.Namespace).Bind(ctx, &v1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
			Target:     v1.ObjectReference{Kind: "Node", Name: node},
		}, metav1.CreateOptions{})
	}
	if err == nil {
		s.cache.finishBinding(key)
		q.Forget(key)
		s.log.Debug("bound", "pod", key, "node", node)
		s.recorder.Eventf(pod, v1.EventTypeNormal, EventScheduled, "Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node)
		return
	}
	// The node's resources are free again.
	s.cache.forget(key)
	s.moveAll("BindingFailed")
	switch {
	case ctx.Err() != nil:
		return
	case apierrors.IsNotFound(err):
		q.Forget(key)
		return
	case apierrors.IsConflict(err):
		// Bound by someone else, or being deleted: the informer will say;
		// look again then.
		s.log.Info("binding conflict", "pod", key, "node", node, "err", err)
		q.AddRateLimited(key)
		return
	}
	s.log.Warn("binding failed", "pod", key, "node", node, "err", err)
	q.AddRateLimited(key)
	msg := fmt.Sprintf("Binding rejected: %v", err)
	s.recorder.Event(pod, v1.EventTypeWarning, EventFailedScheduling, msg)
	s.setNotScheduled(ctx, pod, ReasonSchedulerError, msg)
}

// setNotScheduled sets PodScheduled=False with the reason and message, by
// a strategic merge patch of pods/status, unless it says that already.
func (s *Scheduler) setNotScheduled(ctx context.Context, pod *v1.Pod, reason, msg string) {
	cond := v1.PodCondition{
		Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: reason, Message: msg,
		ObservedGeneration: pod.Generation,
	}
	conditions, changed := withCondition(pod.Status.Conditions, cond, metav1.NewTime(s.clock.Now()))
	if !changed {
		return
	}
	patch, err := conditionsPatch(pod.Status.Conditions, conditions)
	if err == nil {
		_, err = s.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	}
	if err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) {
		s.log.Warn("update pod condition", "pod", podKey(pod), "err", err)
	}
}

// withCondition returns conditions with cond set, and whether that changed
// anything. The transition time moves only when the status does.
func withCondition(conditions []v1.PodCondition, cond v1.PodCondition, now metav1.Time) ([]v1.PodCondition, bool) {
	out := make([]v1.PodCondition, 0, len(conditions)+1)
	found := false
	for _, c := range conditions {
		if c.Type != cond.Type {
			out = append(out, c)
			continue
		}
		if found {
			continue
		}
		found = true
		if c.Status == cond.Status && c.Reason == cond.Reason && c.Message == cond.Message &&
			c.ObservedGeneration == cond.ObservedGeneration {
			return conditions, false
		}
		cond.LastTransitionTime = now
		if c.Status == cond.Status {
			cond.LastTransitionTime = c.LastTransitionTime
		}
		out = append(out, cond)
	}
	if !found {
		cond.LastTransitionTime = now
		out = append(out, cond)
	}
	return out, true
}

// conditionsPatch is the strategic merge patch from one list of pod
// conditions to another.
func conditionsPatch(old, cur []v1.PodCondition) ([]byte, error) {
	oldData, err := json.Marshal(v1.Pod{Status: v1.PodStatus{Conditions: old}})
	if err != nil {
		return nil, err
	}
	curData, err := json.Marshal(v1.Pod{Status: v1.PodStatus{Conditions: cur}})
	if err != nil {
		return nil, err
	}
	return strategicpatch.CreateTwoWayMergePatch(oldData, curData, &v1.Pod{})
}
