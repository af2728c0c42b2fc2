package deployment

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/controllerref"
	"github.com/minik8s/minik8s/pkg/controller/kit"
)

// Reconcile moves one Deployment (namespace/name) a step along its
// rollout and writes its status.
func (c *Controller) Reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.dLister.Deployments(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	d := cached.DeepCopy()
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		c.Log.Warn("ignoring deployment with an invalid selector", "deployment", key, "err", err)
		return nil
	}
	if selector.Empty() {
		c.Recorder.Eventf(d, corev1.EventTypeWarning, ReasonSelectingAll, "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			return c.updateStatus(ctx, d)
		}
		return nil
	}

	rsList, err := c.claimReplicaSets(ctx, d, selector)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		newRS, old, err := c.replicaSets(ctx, d, rsList, false)
		if err != nil {
			return err
		}
		return c.syncDeploymentStatus(ctx, append(old, newRS), newRS, d)
	}
	if err := c.checkPausedConditions(ctx, d); err != nil {
		return err
	}
	if d.Spec.Paused {
		return c.sync(ctx, d, rsList)
	}
	scaling, err := c.isScalingEvent(ctx, d, rsList)
	if err != nil {
		return err
	}
	if scaling {
		return c.sync(ctx, d, rsList)
	}
	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		return c.rolloutRecreate(ctx, d, rsList, c.podsByReplicaSet(d, selector, rsList))
	case appsv1.RollingUpdateDeploymentStrategyType, "":
		return c.rolloutRolling(ctx, d, rsList)
	}
	return fmt.Errorf("deployment %s: unknown strategy type %q", key, d.Spec.Strategy.Type)
}

// claimReplicaSets returns the ReplicaSets d controls after adopting
// orphans its selector matches and releasing its ReplicaSets it no
// longer matches.
func (c *Controller) claimReplicaSets(ctx context.Context, d *appsv1.Deployment, selector labels.Selector) ([]*appsv1.ReplicaSet, error) {
	all, err := c.rsLister.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	m := &controllerref.Claimer[*appsv1.ReplicaSet]{
		Owner: d, Kind: controllerKind, Selector: selector, Dependent: "replicaset", Logger: c.Log,
		Get:   controllerref.GetWith(c.Client.AppsV1().Deployments(d.Namespace).Get, d.Name),
		Patch: controllerref.PatchWith(c.Client.AppsV1().ReplicaSets(d.Namespace).Patch),
	}
	return m.Claim(ctx, all)
}

// podsByReplicaSet groups the pods d selects by the ReplicaSet (of
// rsList) that controls them.
func (c *Controller) podsByReplicaSet(d *appsv1.Deployment, selector labels.Selector, rsList []*appsv1.ReplicaSet) map[types.UID][]*corev1.Pod {
	m := make(map[types.UID][]*corev1.Pod, len(rsList))
	for _, rs := range rsList {
		m[rs.UID] = nil
	}
	pods, err := c.podLister.Pods(d.Namespace).List(selector)
	if err != nil {
		return m
	}
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil {
			continue
		}
		if _, ok := m[ref.UID]; ok {
			m[ref.UID] = append(m[ref.UID], p)
		}
	}
	return m
}

// replicaSets splits rsList into the new ReplicaSet (the one with d's
// template; created when create is set and there is none) and the old
// ones, bringing the new one's annotations and d's revision up to date.
func (c *Controller) replicaSets(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	old := findOldReplicaSets(d, rsList)
	newRS, err := c.newReplicaSet(ctx, d, rsList, old, create)
	if err != nil {
		return nil, nil, err
	}
	return newRS, old, nil
}

func (c *Controller) newReplicaSet(ctx context.Context, d *appsv1.Deployment, rsList, old []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, error) {
	newRevision := strconv.FormatInt(maxRevision(old)+1, 10)
	if existing := findNewReplicaSet(d, rsList); existing != nil {
		rs := existing.DeepCopy()
		annotationsChanged := setNewReplicaSetAnnotations(d, rs, newRevision, true)
		if annotationsChanged || rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			updated, err := c.Client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
			if err != nil {
				return nil, fmt.Errorf("update replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
			}
			// Later steps of this sync see the stored object.
			for i := range rsList {
				if rsList[i].UID == updated.UID {
					rsList[i] = updated
				}
			}
			return updated, nil
		}
		if err := c.setRevision(ctx, d, rs.Annotations[AnnotationRevision]); err != nil {
			return nil, err
		}
		if hasProgressDeadline(d) && kit.GetCondition(d.Status.Conditions, appsv1.DeploymentProgressing) == nil {
			d.Status.Conditions = kit.SetCondition(d.Status.Conditions, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonFoundNewReplicaSet,
				fmt.Sprintf("Found new replica set %q", rs.Name), c.Clock.Now()))
			if err := c.updateStatus(ctx, d); err != nil {
				return nil, err
			}
		}
		return rs, nil
	}
	if !create {
		return nil, nil
	}

	hash := computeHash(&d.Spec.Template, d.Status.CollisionCount)
	template := d.Spec.Template.DeepCopy()
	template.Labels = withLabel(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)},
			Labels:          template.Labels,
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        ptr.To[int32](0),
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        selectorWithLabel(d.Spec.Selector, appsv1.DefaultDeploymentUniqueLabelKey, hash),
			Template:        *template,
		},
	}
	size := newRSNewReplicas(d, append(old, rs), rs)
	rs.Spec.Replicas = ptr.To(size)
	setNewReplicaSetAnnotations(d, rs, newRevision, false)

	created, err := c.Client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	existed := false
	switch {
	case apierrors.IsAlreadyExists(err):
		existed = true
		found, getErr := c.rsLister.ReplicaSets(d.Namespace).Get(rs.Name)
		if apierrors.IsNotFound(getErr) {
			// Ours from a moment ago, not yet in the cache?
			found, getErr = c.Client.AppsV1().ReplicaSets(d.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		}
		if getErr != nil {
			return nil, getErr
		}
		if metav1.IsControlledBy(found, d) && equalIgnoreHash(&d.Spec.Template, &found.Spec.Template) {
			created, err = found, nil
			break
		}
		// Another template hashed to the same name: hash again with a
		// higher collision count next time.
		if d.Status.CollisionCount == nil {
			d.Status.CollisionCount = ptr.To[int32](0)
		}
		*d.Status.CollisionCount++
		if uerr := c.updateStatus(ctx, d); uerr == nil {
			c.Log.Info("pod-template-hash collision", "deployment", d.Namespace+"/"+d.Name, "replicaset", rs.Name,
				"collisionCount", *d.Status.CollisionCount)
		}
		return nil, err
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, err
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
		if hasProgressDeadline(d) {
			d.Status.Conditions = kit.SetCondition(d.Status.Conditions, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonReplicaSetCreateError, msg, c.Clock.Now()))
			// Best effort: the create error is what gets retried.
			_ = c.updateStatus(ctx, d)
		}
		c.Recorder.Event(d, corev1.EventTypeWarning, ReasonReplicaSetCreateError, msg)
		return nil, err
	}
	if !existed && size > 0 {
		c.Recorder.Eventf(d, corev1.EventTypeNormal, ReasonScalingReplicaSet, "Scaled up replica set %s from 0 to %d", created.Name, size)
	}
	if err := c.setRevision(ctx, d, newRevision); err != nil {
		return nil, err
	}
	if !existed && hasProgressDeadline(d) {
		d.Status.Conditions = kit.SetCondition(d.Status.Conditions, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetCreated,
			fmt.Sprintf("Created new replica set %q", created.Name), c.Clock.Now()))
		if err := c.updateStatus(ctx, d); err != nil {
			return nil, err
		}
	}
	return created, nil
}

// setRevision records revision on the Deployment itself. It is metadata,
// so it goes through the main resource (optimistically, at the
// resourceVersion d was read at); d takes the stored metadata.
func (c *Controller) setRevision(ctx context.Context, d *appsv1.Deployment, revision string) error {
	if d.Annotations[AnnotationRevision] == revision {
		return nil
	}
	u := d.DeepCopy()
	if u.Annotations == nil {
		u.Annotations = map[string]string{}
	}
	u.Annotations[AnnotationRevision] = revision
	stored, err := c.Client.AppsV1().Deployments(d.Namespace).Update(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("set revision of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	d.ObjectMeta = stored.ObjectMeta
	return nil
}

// updateStatus writes d's status; d takes the stored object's metadata
// and status.
func (c *Controller) updateStatus(ctx context.Context, d *appsv1.Deployment) error {
	stored, err := c.Client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update status of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	d.ObjectMeta, d.Status = stored.ObjectMeta, stored.Status
	return nil
}

// scaleReplicaSet sets rs to size and its replica annotations to d's
// current size; an event says so when the size changed. It returns
// whether it did scale, and the stored ReplicaSet.
func (c *Controller) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, size int32, d *appsv1.Deployment, direction string) (bool, *appsv1.ReplicaSet, error) {
	resize := replicas(rs) != size
	if !resize && !replicasAnnotationsNeedUpdate(rs, desired(d), desired(d)+maxSurge(d)) {
		return false, rs, nil
	}
	u := rs.DeepCopy()
	u.Spec.Replicas = ptr.To(size)
	setReplicasAnnotations(u, desired(d), desired(d)+maxSurge(d))
	stored, err := c.Client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		return false, nil, fmt.Errorf("scale replicaset %s/%s to %d: %w", rs.Namespace, rs.Name, size, err)
	}
	if resize {
		c.Recorder.Eventf(d, corev1.EventTypeNormal, ReasonScalingReplicaSet, "Scaled %s replica set %s from %d to %d",
			direction, rs.Name, replicas(rs), size)
	}
	return resize, stored, nil
}

// scaleTo scales rs to size if it is not there, naming the direction.
func (c *Controller) scaleTo(ctx context.Context, rs *appsv1.ReplicaSet, size int32, d *appsv1.Deployment) (bool, *appsv1.ReplicaSet, error) {
	if replicas(rs) == size {
		return false, rs, nil
	}
	direction := scaleUp
	if size < replicas(rs) {
		direction = scaleDown
	}
	return c.scaleReplicaSet(ctx, rs, size, d, direction)
}

// isScalingEvent: spec.replicas changed since the active ReplicaSets
// were last sized (their desired-replicas annotation disagrees).
func (c *Controller) isScalingEvent(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	newRS, old, err := c.replicaSets(ctx, d, rsList, false)
	if err != nil {
		return false, err
	}
	for _, rs := range activeReplicaSets(append(old, newRS)) {
		if want, ok := intAnnotation(rs, AnnotationDesiredReplicas); ok && want != desired(d) {
			return true, nil
		}
	}
	return false, nil
}

// checkPausedConditions marks Progressing as Unknown while paused (and
// once on resume), unless the deadline was already missed.
func (c *Controller) checkPausedConditions(ctx context.Context, d *appsv1.Deployment) error {
	if !hasProgressDeadline(d) {
		return nil
	}
	cond := kit.GetCondition(d.Status.Conditions, appsv1.DeploymentProgressing)
	if cond != nil && cond.Reason == ReasonProgressDeadlineExceeded {
		return nil
	}
	pausedShown := cond != nil && cond.Reason == ReasonDeploymentPaused
	switch {
	case d.Spec.Paused && !pausedShown:
		d.Status.Conditions = kit.SetCondition(d.Status.Conditions, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonDeploymentPaused,
			"Deployment is paused", c.Clock.Now()))
	case !d.Spec.Paused && pausedShown:
		d.Status.Conditions = kit.SetCondition(d.Status.Conditions, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonDeploymentResumed,
			"Deployment is resumed", c.Clock.Now()))
	default:
		return nil
	}
	return c.updateStatus(ctx, d)
}

// sync handles a paused Deployment or a change of spec.replicas: it
// scales the existing ReplicaSets (no rollout step) and writes status.
func (c *Controller) sync(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := c.replicaSets(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := c.scale(ctx, d, newRS, old); err != nil {
		return err
	}
	if d.Spec.Paused {
		if err := c.cleanup(ctx, d, old); err != nil {
			return err
		}
	}
	return c.syncDeploymentStatus(ctx, append(old, newRS), newRS, d)
}

// scale brings the ReplicaSets to the Deployment's size: a lone active
// one directly; old ones to zero once the new one is saturated; several
// in the middle of a rolling update, proportionally.
func (c *Controller) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) error {
	if rs := findActiveOrLatest(newRS, old); rs != nil {
		// Also when the size is right: its replica annotations may not
		// be, and would make every sync a scaling event.
		direction := scaleUp
		if desired(d) < replicas(rs) {
			direction = scaleDown
		}
		_, _, err := c.scaleReplicaSet(ctx, rs, desired(d), d, direction)
		return err
	}
	if isSaturated(d, newRS) {
		for _, rs := range activeReplicaSets(old) {
			if _, _, err := c.scaleTo(ctx, rs, 0, d); err != nil {
				return err
			}
		}
		return nil
	}
	if !isRollingUpdate(d) {
		return nil
	}
	plan, direction := planProportionalScale(d, append(old, newRS))
	for _, s := range plan {
		if _, _, err := c.scaleReplicaSet(ctx, s.rs, s.replicas, d, direction); err != nil {
			return err
		}
	}
	return nil
}

// cleanup deletes old ReplicaSets beyond revisionHistoryLimit that have
// no pods left.
func (c *Controller) cleanup(ctx context.Context, d *appsv1.Deployment, old []*appsv1.ReplicaSet) error {
	if d.Spec.RevisionHistoryLimit == nil {
		return nil
	}
	for _, rs := range revisionsToDelete(old, *d.Spec.RevisionHistoryLimit) {
		err := c.Client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &rs.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete old replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		c.Log.Info("deleted old replicaset", "deployment", d.Namespace+"/"+d.Name, "replicaset", rs.Name, "revision", revision(rs))
	}
	return nil
}
