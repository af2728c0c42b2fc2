package statefulset

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/controllerref"
	"github.com/minik8s/minik8s/pkg/controller/history"
	"github.com/minik8s/minik8s/pkg/controller/podutil"
)

// statusUpdateRetries is how many times a failed status write is retried
// on a freshly read StatefulSet before the sync is requeued.
const statusUpdateRetries = 1

// Reconcile moves one StatefulSet (namespace/name) a step toward its
// spec and writes its status; a positive delay asks to look again then
// (a pod that becomes available after minReadySeconds).
func (c *Controller) Reconcile(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	set, err := c.setLister.StatefulSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if set.DeletionTimestamp != nil {
		// The garbage collector removes its pods; nothing is created or
		// adopted meanwhile.
		return 0, nil
	}
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || selector.Empty() {
		// The apiserver refuses such sets; one that got in anyway must
		// not claim every pod of the namespace.
		c.Log.Warn("ignoring statefulset with an invalid or empty selector", "statefulset", key, "err", err)
		return 0, nil
	}
	set = set.DeepCopy()

	pods, err := c.claimPods(ctx, set, selector)
	if err != nil {
		return 0, err
	}
	revisions, err := c.claimRevisions(ctx, set, selector)
	if err != nil {
		return 0, err
	}
	current, update, collisions, err := c.revisions(ctx, set, revisions)
	if err != nil {
		return 0, err
	}
	status, syncErr := c.syncPods(ctx, set, pods, current, update)
	status.ObservedGeneration = set.Generation
	status.CurrentRevision, status.UpdateRevision = current.Name, update.Name
	status.CollisionCount = ptr.To(collisions)
	completeRollingUpdate(set, &status)
	if err := c.updateStatus(ctx, set, status); err != nil {
		return 0, err
	}
	if syncErr != nil {
		return 0, syncErr
	}
	if err := c.truncateHistory(ctx, set, pods, append(revisions, update), status); err != nil {
		return 0, err
	}
	if set.Spec.MinReadySeconds > 0 && status.AvailableReplicas < status.ReadyReplicas {
		// Ready pods become available later: look again then.
		return time.Duration(set.Spec.MinReadySeconds) * time.Second, nil
	}
	return 0, nil
}

// claimPods are set's pods: those it controls, and orphans its selector
// matches (adopted), less those released; only members (named
// <set>-<ordinal>) count.
func (c *Controller) claimPods(ctx context.Context, set *appsv1.StatefulSet, selector labels.Selector) ([]*corev1.Pod, error) {
	all, err := c.podLister.Pods(set.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	candidates := make([]*corev1.Pod, 0, len(all))
	for _, p := range all {
		// An orphan that is not named as one of this set's pods is left
		// alone, as Kubernetes does.
		if metav1.GetControllerOf(p) != nil || isMemberOf(set, p) {
			candidates = append(candidates, p)
		}
	}
	m := &controllerref.Claimer[*corev1.Pod]{
		Owner: set, Kind: controllerKind, Selector: selector, Dependent: "pod", Logger: c.Log,
		Get:   controllerref.GetWith(c.Client.AppsV1().StatefulSets(set.Namespace).Get, set.Name),
		Patch: controllerref.PatchWith(c.Client.CoreV1().Pods(set.Namespace).Patch),
	}
	claimed, err := m.Claim(ctx, candidates)
	members := claimed[:0]
	for _, p := range claimed {
		if isMemberOf(set, p) {
			members = append(members, p)
		}
	}
	return members, err
}

// claimRevisions are set's ControllerRevisions, adopting orphans its
// selector matches as Kubernetes does.
func (c *Controller) claimRevisions(ctx context.Context, set *appsv1.StatefulSet, selector labels.Selector) ([]*appsv1.ControllerRevision, error) {
	all, err := c.revisionLister.ControllerRevisions(set.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	m := &controllerref.Claimer[*appsv1.ControllerRevision]{
		Owner: set, Kind: controllerKind, Selector: selector, Dependent: "controllerrevision", Logger: c.Log,
		Get:   controllerref.GetWith(c.Client.AppsV1().StatefulSets(set.Namespace).Get, set.Name),
		Patch: controllerref.PatchWith(c.Client.AppsV1().ControllerRevisions(set.Namespace).Patch),
	}
	return m.Claim(ctx, all)
}

// revisions are set's current and update revisions, making the update
// revision when the template is new: a template equal to an older
// revision (a rollback) renumbers that one instead, so `kubectl rollout
// history` lists it last.
func (c *Controller) revisions(ctx context.Context, set *appsv1.StatefulSet, revisions []*appsv1.ControllerRevision) (current, update *appsv1.ControllerRevision, collisions int32, err error) {
	history.Sort(revisions)
	collisions = ptr.Deref(set.Status.CollisionCount, 0)
	data, err := history.Patch(&set.Spec.Template)
	if err != nil {
		return nil, nil, 0, err
	}
	update = history.New(set, controllerKind, set.Spec.Template.Labels, data, history.Next(revisions), &collisions)
	update.Annotations = maps.Clone(set.Annotations)
	equal := history.FindEqual(revisions, update)
	switch {
	case len(equal) > 0 && equal[len(equal)-1] == revisions[len(revisions)-1]:
		update = equal[len(equal)-1]
	case len(equal) > 0:
		r := equal[len(equal)-1].DeepCopy()
		r.Revision = update.Revision
		if update, err = c.Client.AppsV1().ControllerRevisions(set.Namespace).Update(ctx, r, metav1.UpdateOptions{}); err != nil {
			return nil, nil, 0, fmt.Errorf("renumber controllerrevision %s/%s: %w", r.Namespace, r.Name, err)
		}
	default:
		if update, err = history.Create(ctx, c.Client.AppsV1(), set, controllerKind, update, &collisions); err != nil {
			return nil, nil, 0, fmt.Errorf("create controllerrevision for statefulset %s/%s: %w", set.Namespace, set.Name, err)
		}
	}
	for _, r := range revisions {
		if r.Name == set.Status.CurrentRevision {
			current = r
		}
	}
	if current == nil {
		current = update
	}
	return current, update, collisions, nil
}

// atRevision is set with the template of revision r.
func atRevision(set *appsv1.StatefulSet, r *appsv1.ControllerRevision) (*appsv1.StatefulSet, error) {
	t, err := history.Template(r)
	if err != nil {
		return nil, err
	}
	out := set.DeepCopy()
	out.Spec.Template = *t
	return out, nil
}

// syncPods creates, deletes and updates set's pods a step toward the
// spec and returns the status they add up to.
func (c *Controller) syncPods(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, current, update *appsv1.ControllerRevision) (appsv1.StatefulSetStatus, error) {
	now := c.Clock.Now()
	var status appsv1.StatefulSetStatus
	for _, p := range pods {
		status.Replicas++
		if isRunningAndReady(p) {
			status.ReadyReplicas++
			if isAvailable(p, set.Spec.MinReadySeconds, now) {
				status.AvailableReplicas++
			}
		}
		if p.DeletionTimestamp == nil {
			countRevision(&status, revisionOf(p), current, update, 1)
		}
	}
	currentSet, err := atRevision(set, current)
	if err != nil {
		return status, err
	}

	start := startOrdinal(set)
	replicas := make([]*corev1.Pod, replicasOf(set))
	var condemned []*corev1.Pod
	for _, p := range pods {
		if i := ordinalOf(p); inRange(set, i) {
			replicas[i-start] = p
		} else {
			condemned = append(condemned, p)
		}
	}
	// Scale-down goes from the highest ordinal.
	sort.Slice(condemned, func(i, j int) bool { return ordinalOf(condemned[i]) > ordinalOf(condemned[j]) })
	// The first unhealthy pod by ordinal, the replicas' before the
	// condemned ones': the only one an ordered scale-down may remove
	// while it is unhealthy, so that a scale-down halts at an unhealthy
	// pod below the one it would remove, as Kubernetes' does.
	byOrdinal := append([]*corev1.Pod{}, replicas...)
	for i := len(condemned) - 1; i >= 0; i-- {
		byOrdinal = append(byOrdinal, condemned[i])
	}
	var firstUnhealthy *corev1.Pod
	for _, p := range byOrdinal {
		if p != nil && !isHealthy(p) && firstUnhealthy == nil {
			firstUnhealthy = p
		}
	}
	monotonic := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement

	// A condemned pod's claims get the owner the retention policy asks
	// for before the pod goes, so that whenScaled Delete takes them along.
	for _, p := range condemned {
		if err := c.ensureClaimOwners(ctx, set, ordinalOf(p), p); err != nil {
			return status, err
		}
	}

	for i := range replicas {
		ordinal := start + i
		pod := replicas[i]
		if pod == nil {
			pod = c.versionedPod(set, currentSet, ordinal, current, update)
			created, err := c.createPod(ctx, set, pod)
			if err != nil {
				return status, err
			}
			if !created {
				// Waiting for an old claim to go, or for the cache.
				if monotonic {
					return status, nil
				}
				continue
			}
			replicas[i] = pod
			status.Replicas++
			countRevision(&status, revisionOf(pod), current, update, 1)
			if monotonic {
				return status, nil
			}
			continue
		}
		if podutil.IsTerminal(pod) {
			// It comes back under the same name once this one is gone.
			if pod.DeletionTimestamp == nil {
				reason, what := ReasonRecreatingFailedPod, "failed"
				if pod.Status.Phase == corev1.PodSucceeded {
					reason, what = ReasonRecreatingTerminatedPod, "terminated"
				}
				c.Recorder.Eventf(set, corev1.EventTypeWarning, reason, "StatefulSet %s/%s is recreating %s Pod %s", set.Namespace, set.Name, what, pod.Name)
				if err := c.deletePod(ctx, set, pod); err != nil {
					return status, err
				}
			}
			if monotonic {
				return status, nil
			}
			continue
		}
		if pod.Status.Phase == corev1.PodPending {
			// Its claims may have been deleted under it.
			if _, err := c.createClaims(ctx, set, ordinal, pod); err != nil {
				return status, err
			}
		}
		if monotonic && (pod.DeletionTimestamp != nil || !isAvailable(pod, set.Spec.MinReadySeconds, now)) {
			// Each pod waits for all before it to be Running, Ready and
			// available.
			return status, nil
		}
		if err := c.ensureClaimOwners(ctx, set, ordinal, pod); err != nil {
			return status, err
		}
		if !identityMatches(set, pod) {
			if err := c.fixIdentity(ctx, set, pod, ordinal); err != nil {
				return status, err
			}
		}
	}

	for _, p := range condemned {
		if p.DeletionTimestamp != nil {
			if monotonic {
				return status, nil
			}
			continue
		}
		if monotonic && p != firstUnhealthy && !isAvailable(p, set.Spec.MinReadySeconds, now) {
			return status, nil
		}
		if err := c.deletePod(ctx, set, p); err != nil {
			return status, err
		}
		countRevision(&status, revisionOf(p), current, update, -1)
		if monotonic {
			return status, nil
		}
	}

	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		// Pods change revision when the user deletes them.
		return status, nil
	}
	updateMin := 0
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		updateMin = int(ptr.Deref(ru.Partition, 0))
	}
	for t := len(replicas) - 1; t >= updateMin; t-- {
		p := replicas[t]
		if p == nil {
			return status, nil
		}
		if revisionOf(p) != update.Name && p.DeletionTimestamp == nil {
			c.Log.Info("deleting pod for update", "statefulset", set.Namespace+"/"+set.Name, "pod", p.Name, "revision", update.Name)
			if err := c.deletePod(ctx, set, p); err != nil {
				return status, err
			}
			countRevision(&status, revisionOf(p), current, update, -1)
			return status, nil
		}
		if !isHealthy(p) {
			// One at a time: the replacement must be Ready first.
			return status, nil
		}
	}
	return status, nil
}

func countRevision(st *appsv1.StatefulSetStatus, rev string, current, update *appsv1.ControllerRevision, n int32) {
	if rev == current.Name {
		st.CurrentReplicas += n
	}
	if rev == update.Name {
		st.UpdatedReplicas += n
	}
}

// versionedPod is the pod of ordinal to create: at the current revision
// when a RollingUpdate's partition keeps that ordinal back, at the update
// revision otherwise.
func (c *Controller) versionedPod(set, currentSet *appsv1.StatefulSet, ordinal int, current, update *appsv1.ControllerRevision) *corev1.Pod {
	if ru := set.Spec.UpdateStrategy.RollingUpdate; set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType &&
		ru != nil && ordinal < startOrdinal(set)+int(ptr.Deref(ru.Partition, 0)) {
		return newPod(currentSet, ordinal, current.Name)
	}
	return newPod(set, ordinal, update.Name)
}

// completeRollingUpdate: once every pod is updated and ready, the update
// revision becomes the current one.
func completeRollingUpdate(set *appsv1.StatefulSet, st *appsv1.StatefulSetStatus) {
	if set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType &&
		st.UpdatedReplicas == st.Replicas && st.ReadyReplicas == st.Replicas {
		st.CurrentReplicas = st.UpdatedReplicas
		st.CurrentRevision = st.UpdateRevision
	}
}

// createPod creates pod's missing claims, then pod. It reports false,
// without error, when the pod must wait: a claim of its ordinal is still
// being deleted (a scale-down's whenScaled Delete), or the pod exists
// already and the cache has not seen it.
func (c *Controller) createPod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) (bool, error) {
	ready, err := c.createClaims(ctx, set, ordinalOf(pod), pod)
	if err != nil || !ready {
		return false, err
	}
	_, err = c.Client.CoreV1().Pods(set.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return false, nil
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return false, nil
	}
	c.podEvent(set, pod, "Create", err)
	if err != nil {
		return false, fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return true, nil
}

// createClaims creates the claims of ordinal that do not exist; false
// when one is being deleted, so its pod must wait for a fresh one.
func (c *Controller) createClaims(ctx context.Context, set *appsv1.StatefulSet, ordinal int, pod *corev1.Pod) (bool, error) {
	ready := true
	for _, claim := range claimsOf(set, ordinal) {
		existing, err := c.claimLister.PersistentVolumeClaims(set.Namespace).Get(claim.Name)
		switch {
		case err == nil:
			if existing.DeletionTimestamp != nil {
				ready = false
			}
			continue
		case !apierrors.IsNotFound(err):
			return false, err
		}
		claimOwners(claim, set, ordinal, nil)
		_, err = c.Client.CoreV1().PersistentVolumeClaims(set.Namespace).Create(ctx, claim, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			c.Recorder.Eventf(set, corev1.EventTypeWarning, ReasonFailedCreate, "create Claim %s for Pod %s in StatefulSet %s failed error: %s", claim.Name, pod.Name, set.Name, err)
			return false, fmt.Errorf("create persistentvolumeclaim %s/%s: %w", claim.Namespace, claim.Name, err)
		}
		c.Recorder.Eventf(set, corev1.EventTypeNormal, ReasonSuccessfulCreate, "create Claim %s Pod %s in StatefulSet %s success", claim.Name, pod.Name, set.Name)
	}
	return ready, nil
}

// ensureClaimOwners gives the existing claims of ordinal the
// ownerReferences the retention policy asks for.
func (c *Controller) ensureClaimOwners(ctx context.Context, set *appsv1.StatefulSet, ordinal int, pod *corev1.Pod) error {
	for _, want := range claimsOf(set, ordinal) {
		claim, err := c.claimLister.PersistentVolumeClaims(set.Namespace).Get(want.Name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if claim.DeletionTimestamp != nil {
			continue
		}
		claim = claim.DeepCopy()
		if !claimOwners(claim, set, ordinal, pod) {
			continue
		}
		if _, err := c.Client.CoreV1().PersistentVolumeClaims(set.Namespace).Update(ctx, claim, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("update owners of persistentvolumeclaim %s/%s: %w", claim.Namespace, claim.Name, err)
		}
	}
	return nil
}

// fixIdentity gives back the labels of its ordinal to a pod that lost
// them.
func (c *Controller) fixIdentity(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod, ordinal int) error {
	pod = pod.DeepCopy()
	setIdentityLabels(pod, ordinal)
	_, err := c.Client.CoreV1().Pods(pod.Namespace).Update(ctx, pod, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone, or changed since: the next sync looks again.
		return err
	}
	c.podEvent(set, pod, "Update", err)
	return err
}

func (c *Controller) deletePod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	err := c.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &pod.UID},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Already gone (a stale cache), or replaced by a new pod of the
		// same name: nothing to delete.
		return nil
	}
	c.podEvent(set, pod, "Delete", err)
	if err != nil {
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// podEvent records the outcome of verb on pod as Kubernetes words it.
func (c *Controller) podEvent(set *appsv1.StatefulSet, pod *corev1.Pod, verb string, err error) {
	if err == nil {
		c.Recorder.Eventf(set, corev1.EventTypeNormal, "Successful"+verb, "%s Pod %s in StatefulSet %s successful", strings.ToLower(verb), pod.Name, set.Name)
		return
	}
	c.Recorder.Eventf(set, corev1.EventTypeWarning, "Failed"+verb, "%s Pod %s in StatefulSet %s failed error: %s", strings.ToLower(verb), pod.Name, set.Name, err)
}

// truncateHistory deletes the oldest revisions beyond
// spec.revisionHistoryLimit that neither a pod nor the status uses.
func (c *Controller) truncateHistory(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, revisions []*appsv1.ControllerRevision, st appsv1.StatefulSetStatus) error {
	live := map[string]bool{st.CurrentRevision: true, st.UpdateRevision: true}
	for _, p := range pods {
		live[revisionOf(p)] = true
	}
	seen := map[string]bool{}
	var old []*appsv1.ControllerRevision
	for _, r := range revisions {
		if !live[r.Name] && !seen[r.Name] {
			old = append(old, r)
		}
		seen[r.Name] = true
	}
	limit := int(ptr.Deref(set.Spec.RevisionHistoryLimit, 10))
	if len(old) <= limit {
		return nil
	}
	history.Sort(old)
	for _, r := range old[:len(old)-limit] {
		err := c.Client.AppsV1().ControllerRevisions(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete controllerrevision %s/%s: %w", r.Namespace, r.Name, err)
		}
	}
	return nil
}

// updateStatus writes st unless set already has it, retrying once on a
// fresh read.
func (c *Controller) updateStatus(ctx context.Context, set *appsv1.StatefulSet, st appsv1.StatefulSetStatus) error {
	st.Conditions = set.Status.Conditions
	if equality.Semantic.DeepEqual(set.Status, st) {
		return nil
	}
	client := c.Client.AppsV1().StatefulSets(set.Namespace)
	for i := 0; ; i++ {
		set.Status = st
		_, err := client.UpdateStatus(ctx, set, metav1.UpdateOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if i >= statusUpdateRetries {
			return fmt.Errorf("update status of statefulset %s/%s: %w", set.Namespace, set.Name, err)
		}
		fresh, err := client.Get(ctx, set.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("update status of statefulset %s/%s: %w", set.Namespace, set.Name, err)
		}
		set = fresh
	}
}
