package statefulset

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minik8s/minik8s/pkg/controller/podutil"
)

// ordinalName matches a member's name: the set's name, a dash, the
// ordinal.
var ordinalName = regexp.MustCompile(`^(.*)-([0-9]+)$`)

// parentAndOrdinal splits a pod name into its set's name and ordinal; the
// ordinal is -1 when the name has none.
func parentAndOrdinal(name string) (string, int) {
	m := ordinalName.FindStringSubmatch(name)
	if m == nil {
		return "", -1
	}
	i, err := strconv.ParseInt(m[2], 10, 32)
	if err != nil {
		return "", -1
	}
	return m[1], int(i)
}

func ordinalOf(pod *corev1.Pod) int {
	_, i := parentAndOrdinal(pod.Name)
	return i
}

// isMemberOf: pod is named as one of set's pods.
func isMemberOf(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	parent, i := parentAndOrdinal(pod.Name)
	return i >= 0 && parent == set.Name
}

func podName(set *appsv1.StatefulSet, ordinal int) string {
	return fmt.Sprintf("%s-%d", set.Name, ordinal)
}

func claimName(set *appsv1.StatefulSet, template string, ordinal int) string {
	return fmt.Sprintf("%s-%s-%d", template, set.Name, ordinal)
}

func replicasOf(set *appsv1.StatefulSet) int {
	if set.Spec.Replicas == nil {
		return 1
	}
	return int(*set.Spec.Replicas)
}

func startOrdinal(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals == nil {
		return 0
	}
	return int(set.Spec.Ordinals.Start)
}

// inRange: ordinal is one of the set's replicas, not condemned.
func inRange(set *appsv1.StatefulSet, ordinal int) bool {
	start := startOrdinal(set)
	return ordinal >= start && ordinal < start+replicasOf(set)
}

func revisionOf(pod *corev1.Pod) string {
	return pod.Labels[appsv1.ControllerRevisionHashLabelKey]
}

// identityMatches: pod has the name and labels of its ordinal in set.
func identityMatches(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	i := ordinalOf(pod)
	return i >= 0 && pod.Name == podName(set, i) && pod.Namespace == set.Namespace &&
		pod.Labels[appsv1.StatefulSetPodNameLabel] == pod.Name &&
		pod.Labels[appsv1.PodIndexLabel] == strconv.Itoa(i)
}

// setIdentityLabels gives pod its ordinal's labels, which are all of its
// identity an existing pod can be given back (hostname and subdomain are
// immutable).
func setIdentityLabels(pod *corev1.Pod, ordinal int) {
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[appsv1.StatefulSetPodNameLabel] = pod.Name
	pod.Labels[appsv1.PodIndexLabel] = strconv.Itoa(ordinal)
}

// newPod is the pod of ordinal in set (whose template is the revision's),
// labelled with revision.
func newPod(set *appsv1.StatefulSet, ordinal int, revision string) *corev1.Pod {
	t := set.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            podName(set, ordinal),
			Namespace:       set.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, controllerKind)},
		},
		Spec: t.Spec,
	}
	setIdentityLabels(pod, ordinal)
	pod.Labels[appsv1.ControllerRevisionHashLabelKey] = revision
	pod.Spec.Hostname = pod.Name
	pod.Spec.Subdomain = set.Spec.ServiceName
	pod.Spec.Volumes = podVolumes(set, ordinal, pod.Spec.Volumes)
	return pod
}

// podVolumes are the volumes of the pod of ordinal: a claim volume per
// claim template, in the templates' order, then the template's other
// volumes (one of a claim template's name is replaced by the claim).
func podVolumes(set *appsv1.StatefulSet, ordinal int, volumes []corev1.Volume) []corev1.Volume {
	claims := map[string]bool{}
	out := make([]corev1.Volume, 0, len(volumes)+len(set.Spec.VolumeClaimTemplates))
	for _, t := range set.Spec.VolumeClaimTemplates {
		claims[t.Name] = true
		out = append(out, corev1.Volume{Name: t.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(set, t.Name, ordinal)},
		}})
	}
	for _, v := range volumes {
		if !claims[v.Name] {
			out = append(out, v)
		}
	}
	return out
}

// claimsOf are the claims of the pod of ordinal, as created: the
// template's spec and labels plus the selector's matchLabels, so the set's
// selector finds them.
func claimsOf(set *appsv1.StatefulSet, ordinal int) []*corev1.PersistentVolumeClaim {
	out := make([]*corev1.PersistentVolumeClaim, 0, len(set.Spec.VolumeClaimTemplates))
	for i := range set.Spec.VolumeClaimTemplates {
		t := &set.Spec.VolumeClaimTemplates[i]
		claim := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{
				Name: claimName(set, t.Name, ordinal), Namespace: set.Namespace,
				Labels: map[string]string{}, Annotations: t.DeepCopy().Annotations,
			},
			Spec: *t.Spec.DeepCopy(),
		}
		for k, v := range t.Labels {
			claim.Labels[k] = v
		}
		if set.Spec.Selector != nil {
			for k, v := range set.Spec.Selector.MatchLabels {
				claim.Labels[k] = v
			}
		}
		out = append(out, claim)
	}
	return out
}

// claimOwners changes claim's ownerReferences to what set's
// persistentVolumeClaimRetentionPolicy asks for the pod of ordinal (pod
// may be nil when it does not exist) and says whether they changed:
//
//   - whenDeleted Delete: the set owns the claims of its replicas, so they
//     go with it;
//   - whenScaled Delete: the pod owns the claims of a condemned ordinal
//     (outside the replicas), so they go with it; the set lets them go;
//   - Retain, both: nobody owns them.
func claimOwners(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, ordinal int, pod *corev1.Pod) bool {
	policy := appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	if p := set.Spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		policy = *p
	}
	condemned := !inRange(set, ordinal)
	byPod := policy.WhenScaled == appsv1.DeletePersistentVolumeClaimRetentionPolicyType && condemned && pod != nil
	bySet := policy.WhenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType &&
		!(policy.WhenScaled == appsv1.DeletePersistentVolumeClaimRetentionPolicyType && condemned)
	changed := false
	if bySet {
		changed = addOwner(claim, set.UID, metav1.OwnerReference{APIVersion: controllerKind.GroupVersion().String(), Kind: controllerKind.Kind, Name: set.Name, UID: set.UID}) || changed
	} else {
		changed = removeOwner(claim, set.UID) || changed
	}
	switch {
	case byPod:
		changed = addOwner(claim, pod.UID, metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}) || changed
	case pod != nil:
		changed = removeOwner(claim, pod.UID) || changed
	default:
		// No pod: drop references to the pods of this name that were.
		changed = removeOwnersWhere(claim, func(r metav1.OwnerReference) bool {
			return r.Kind == "Pod" && r.APIVersion == "v1" && r.Name == podName(set, ordinal)
		}) || changed
	}
	return changed
}

func addOwner(obj metav1.Object, uid types.UID, ref metav1.OwnerReference) bool {
	for _, r := range obj.GetOwnerReferences() {
		if r.UID == uid {
			return false
		}
	}
	obj.SetOwnerReferences(append(obj.GetOwnerReferences(), ref))
	return true
}

func removeOwner(obj metav1.Object, uid types.UID) bool {
	return removeOwnersWhere(obj, func(r metav1.OwnerReference) bool { return r.UID == uid })
}

func removeOwnersWhere(obj metav1.Object, drop func(metav1.OwnerReference) bool) bool {
	refs := obj.GetOwnerReferences()
	kept := make([]metav1.OwnerReference, 0, len(refs))
	for _, r := range refs {
		if !drop(r) {
			kept = append(kept, r)
		}
	}
	if len(kept) == len(refs) {
		return false
	}
	if len(kept) == 0 {
		kept = nil
	}
	obj.SetOwnerReferences(kept)
	return true
}

func isRunningAndReady(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && podutil.IsReady(pod)
}

func isHealthy(pod *corev1.Pod) bool {
	return isRunningAndReady(pod) && pod.DeletionTimestamp == nil
}

// isAvailable: Running and Ready for at least minReadySeconds at now.
func isAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	if !isRunningAndReady(pod) {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	c := podutil.ReadyCondition(pod)
	return !c.LastTransitionTime.IsZero() && !c.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).After(now)
}
