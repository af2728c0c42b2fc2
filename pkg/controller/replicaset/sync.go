package replicaset

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/controllerref"
	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/podutil"
)

// statusUpdateRetries is how many times a failed status write is retried
// on a freshly read ReplicaSet before the sync is requeued.
const statusUpdateRetries = 1

// Reconcile moves one ReplicaSet (namespace/name) a step toward
// spec.replicas pods and writes its status.
func (c *Controller) Reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	rs, err := c.src.Get(ns, name)
	if apierrors.IsNotFound(err) {
		c.expectations.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil || selector.Empty() {
		// The apiserver rejects such ReplicaSets; one that got in
		// anyway must not claim every pod in the namespace.
		c.Log.Warn("ignoring replicaset with an invalid or empty selector", "replicaset", key, "err", err)
		return nil
	}
	// Read before the pods: a pod the informer reports after this
	// point is covered by the next sync.
	needsSync := c.expectations.Satisfied(key)

	all, err := c.podLister.Pods(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	var active []*corev1.Pod
	var terminating int32
	for _, p := range all {
		switch {
		case podutil.IsActive(p):
			active = append(active, p)
		case podutil.IsTerminating(p) && metav1.IsControlledBy(p, rs):
			terminating++
		}
	}
	pods, err := c.claimPods(ctx, rs, selector, active)
	if err != nil {
		return err
	}

	var manageErr error
	if needsSync && rs.DeletionTimestamp == nil {
		manageErr = c.manageReplicas(ctx, key, rs, pods)
	}
	status := calculateStatus(rs, pods, terminating, manageErr, c.Clock.Now())
	if c.src.NoTerminatingReplicas {
		status.TerminatingReplicas = nil
	}
	updated, err := c.updateStatus(ctx, rs.DeepCopy(), status)
	if err != nil {
		return err
	}
	if manageErr == nil && updated.Spec.MinReadySeconds > 0 &&
		updated.Status.ReadyReplicas == replicasOf(updated) && updated.Status.AvailableReplicas != replicasOf(updated) {
		// Some ready pods are not yet available: look again when they
		// will be.
		c.enqueueAfter(updated, time.Duration(updated.Spec.MinReadySeconds)*time.Second)
	}
	return manageErr
}

func replicasOf(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

// claimPods returns the active pods rs controls after adopting the
// orphans its selector matches and releasing its pods it no longer
// matches.
func (c *Controller) claimPods(ctx context.Context, rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	m := &controllerref.Claimer[*corev1.Pod]{
		Owner: rs, Kind: c.src.Kind, Selector: selector, Dependent: "pod", Logger: c.Log,
		Get: func(ctx context.Context) (metav1.Object, error) {
			return c.src.Fetch(ctx, rs.Namespace, rs.Name)
		},
		Patch: controllerref.PatchWith(c.Client.CoreV1().Pods(rs.Namespace).Patch),
	}
	return m.Claim(ctx, pods)
}

// manageReplicas creates or deletes pods so that rs has spec.replicas.
func (c *Controller) manageReplicas(ctx context.Context, key string, rs *appsv1.ReplicaSet, pods []*corev1.Pod) error {
	diff := len(pods) - int(replicasOf(rs))
	switch {
	case diff < 0:
		n := min(-diff, c.burst)
		// Expect all n before the first call: the informer may report
		// a pod before its create call returns.
		c.expectations.ExpectCreations(key, n)
		created, err := slowStartBatch(n, 1, func() error { return c.createPod(ctx, rs) })
		// Creations never issued will never be observed.
		c.expectations.CreationsObserved(key, n-created)
		return err
	case diff > 0:
		n := min(diff, c.burst)
		victims := podsToDelete(pods, c.relatedPods(rs), n, c.Clock.Now())
		keys := make([]string, len(victims))
		for i, p := range victims {
			keys[i] = podKey(p)
		}
		c.expectations.ExpectDeletions(key, keys...)
		errCh := make(chan error, len(victims))
		var wg sync.WaitGroup
		for _, p := range victims {
			wg.Go(func() {
				if err := c.deletePodOf(ctx, rs, p); err != nil {
					// Never observed either.
					c.expectations.DeletionObserved(key, podKey(p))
					if !apierrors.IsNotFound(err) {
						errCh <- err
					}
				}
			})
		}
		wg.Wait()
		close(errCh)
		// They are likely all the same: report the first.
		return <-errCh
	}
	return nil
}

// slowStartBatch calls fn count times, in batches that start at
// initial and double while every call succeeds; it stops at the first
// batch with a failure. It returns how many calls succeeded.
func slowStartBatch(count, initial int, fn func() error) (int, error) {
	remaining, succeeded := count, 0
	for batch := min(remaining, initial); batch > 0; batch = min(2*batch, remaining) {
		errCh := make(chan error, batch)
		var wg sync.WaitGroup
		for range batch {
			wg.Go(func() {
				if err := fn(); err != nil {
					errCh <- err
				}
			})
		}
		wg.Wait()
		close(errCh)
		failed := len(errCh)
		succeeded += batch - failed
		if failed > 0 {
			return succeeded, <-errCh
		}
		remaining -= batch
	}
	return succeeded, nil
}

// podFromTemplate is the pod rs creates: its template, named after rs,
// controlled by rs, an object of kind.
func podFromTemplate(rs *appsv1.ReplicaSet, kind schema.GroupVersionKind) *corev1.Pod {
	t := rs.Spec.Template.DeepCopy()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    rs.Name + "-",
			Namespace:       rs.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, kind)},
		},
		Spec: t.Spec,
	}
}

func (c *Controller) createPod(ctx context.Context, rs *appsv1.ReplicaSet) error {
	pod, err := c.Client.CoreV1().Pods(rs.Namespace).Create(ctx, podFromTemplate(rs, c.src.Kind), metav1.CreateOptions{})
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// The namespace is going away, and the ReplicaSet with it.
			return nil
		}
		c.Recorder.Eventf(rs, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating: %v", err)
		return fmt.Errorf("create pod for %s %s/%s: %w", c.src.Name, rs.Namespace, rs.Name, err)
	}
	c.Recorder.Eventf(rs, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: %s", pod.Name)
	return nil
}

func (c *Controller) deletePodOf(ctx context.Context, rs *appsv1.ReplicaSet, pod *corev1.Pod) error {
	err := c.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		c.Recorder.Eventf(rs, corev1.EventTypeWarning, ReasonFailedDelete, "Error deleting: %v", err)
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	c.Recorder.Eventf(rs, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: %s", pod.Name)
	return nil
}

// relatedPods are the active pods of every ReplicaSet controlled by the
// same owner as rs (rs's alone when it has no controller): the
// population whose spread across nodes scale-down evens out.
func (c *Controller) relatedPods(rs *appsv1.ReplicaSet) []*corev1.Pod {
	uids := map[types.UID]bool{rs.UID: true}
	if owner := metav1.GetControllerOf(rs); owner != nil {
		siblings, err := c.src.List(rs.Namespace)
		if err == nil {
			for _, s := range siblings {
				if ref := metav1.GetControllerOf(s); ref != nil && ref.UID == owner.UID {
					uids[s.UID] = true
				}
			}
		}
	}
	pods, err := c.podLister.Pods(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var related []*corev1.Pod
	for _, p := range pods {
		if ref := metav1.GetControllerOf(p); ref != nil && uids[ref.UID] && podutil.IsActive(p) {
			related = append(related, p)
		}
	}
	return related
}

// calculateStatus is rs's status for its claimed active pods, the count
// of its terminating pods, and the outcome of manageReplicas.
func calculateStatus(rs *appsv1.ReplicaSet, pods []*corev1.Pod, terminating int32, manageErr error, now time.Time) appsv1.ReplicaSetStatus {
	st := *rs.Status.DeepCopy()
	templateLabels := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	var fullyLabeled, ready, available int32
	for _, p := range pods {
		if templateLabels.Matches(labels.Set(p.Labels)) {
			fullyLabeled++
		}
		if podutil.IsReady(p) {
			ready++
			if isPodAvailable(p, rs.Spec.MinReadySeconds, now) {
				available++
			}
		}
	}
	failure := kit.GetCondition(st.Conditions, appsv1.ReplicaSetReplicaFailure)
	switch {
	case manageErr != nil && failure == nil:
		reason := "FailedCreate"
		if len(pods) > int(replicasOf(rs)) {
			reason = "FailedDelete"
		}
		st.Conditions = kit.SetCondition(st.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now), Reason: reason, Message: manageErr.Error(),
		})
	case manageErr == nil && failure != nil:
		st.Conditions = kit.RemoveCondition(st.Conditions, appsv1.ReplicaSetReplicaFailure)
	}
	st.Replicas = int32(len(pods))
	st.FullyLabeledReplicas = fullyLabeled
	st.ReadyReplicas = ready
	st.AvailableReplicas = available
	st.TerminatingReplicas = ptr.To(terminating)
	return st
}

// updateStatus writes st (with observedGeneration) unless rs already has
// it, retrying once on a fresh read; it returns the ReplicaSet as stored.
func (c *Controller) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, st appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
	// The generation the pods were counted for, even if the retry reads
	// a newer one.
	st.ObservedGeneration = rs.Generation
	if equality.Semantic.DeepEqual(rs.Status, st) {
		return rs, nil
	}
	for i := 0; ; i++ {
		rs.Status = st
		updated, err := c.src.UpdateStatus(ctx, rs)
		if err == nil {
			return updated, nil
		}
		if apierrors.IsNotFound(err) {
			// Deleted meanwhile: the next sync forgets it.
			return rs, nil
		}
		if i >= statusUpdateRetries {
			return nil, fmt.Errorf("update status of %s %s/%s: %w", c.src.Name, rs.Namespace, rs.Name, err)
		}
		if rs, err = c.src.Fetch(ctx, rs.Namespace, rs.Name); err != nil {
			return nil, fmt.Errorf("update status of %s %s/%s: %w", c.src.Name, rs.Namespace, rs.Name, err)
		}
	}
}
