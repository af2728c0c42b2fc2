package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/scheduler"
)

// A pod of higher priority that fits nowhere has the fewest pods of lower
// priority deleted from a node (marked DisruptionTarget first) and takes
// their room; a pod with preemptionPolicy Never, or one that would not
// fit even then, deletes nothing.
func TestSchedulerPreemption(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	schedRun(t, c, scheduler.Config{Backoff: scheduler.BackoffConfig{Initial: 200 * time.Millisecond, Max: time.Second}}, nil)
	for _, pc := range []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 10},
		{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000},
		{ObjectMeta: metav1.ObjectMeta{Name: "high-never"}, Value: 1000, PreemptionPolicy: ptr.To(corev1.PreemptNever)},
	} {
		if _, err := c.client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.client.CoreV1().Nodes().Create(ctx, schedNode("preempt-node", "2", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := "default"
	pods := c.client.CoreV1().Pods(ns)
	withClass := func(name string) schedPodOpt { return func(p *corev1.Pod) { p.Spec.PriorityClassName = name } }
	for _, name := range []string{"low-1", "low-2"} {
		if _, err := pods.Create(ctx, schedPod(ns, name, "1", withClass("low")), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		schedWaitBound(t, ctx, c, ns, name, 30*time.Second)
	}

	// Neither of these may preempt: one never does, one would not fit.
	if _, err := pods.Create(ctx, schedPod(ns, "never", "1", withClass("high-never")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, schedPod(ns, "too-big", "3", withClass("high")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"never", "too-big"} {
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			return len(schedEvents(t, ctx, c, ns, name, scheduler.EventFailedScheduling)) > 0, nil
		}); err != nil {
			t.Fatalf("%s: no FailedScheduling event: %v", name, err)
		}
	}
	for _, name := range []string{"low-1", "low-2"} {
		if p, err := pods.Get(ctx, name, metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
			t.Fatalf("%s was preempted by a pod that may not preempt (%v)", name, err)
		}
	}
	if err := pods.Delete(ctx, "never", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "too-big", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}

	if _, err := pods.Create(ctx, schedPod(ns, "high", "1", withClass("high")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Stand in for the node's kubelet: a pod being deleted is gone once
	// its containers would have stopped. Only one low pod may go.
	var victim *corev1.Pod
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, name := range []string{"low-1", "low-2"} {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.DeletionTimestamp != nil {
				victim = p
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("no low-priority pod was preempted: %v", err)
	}
	if victim.Name != "low-2" {
		t.Errorf("victim %s, want low-2: of equals, the one that started later goes", victim.Name)
	}
	var marked bool
	for _, cond := range victim.Status.Conditions {
		marked = marked || cond.Type == corev1.DisruptionTarget && cond.Status == corev1.ConditionTrue && cond.Reason == "PreemptionByScheduler"
	}
	if !marked {
		t.Errorf("victim conditions %+v, want DisruptionTarget PreemptionByScheduler", victim.Status.Conditions)
	}
	if got, err := pods.Get(ctx, "high", metav1.GetOptions{}); err != nil || got.Status.NominatedNodeName != "preempt-node" && got.Spec.NodeName == "" {
		t.Errorf("preemptor: %v, nominatedNodeName %q", err, got.Status.NominatedNodeName)
	}
	// The victim's replacement, as its ReplicaSet would make it, may not
	// take the room the preemptor was nominated to.
	if _, err := pods.Create(ctx, schedPod(ns, "low-3", "1", withClass("low")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, victim.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if got := schedWaitBound(t, ctx, c, ns, "high", 30*time.Second); got.Spec.NodeName != "preempt-node" {
		t.Errorf("preemptor bound to %q", got.Spec.NodeName)
	}
	if p, err := pods.Get(ctx, "low-3", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Errorf("the replacement took the preemptor's room: %v, bound to %q", err, p.Spec.NodeName)
	}
	if p, err := pods.Get(ctx, "low-1", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Errorf("low-1 was preempted too (%v)", err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		return len(schedEvents(t, ctx, c, ns, victim.Name, scheduler.EventPreempted)) > 0, nil
	}); err != nil {
		t.Errorf("no Preempted event on the victim: %v", err)
	}
}
