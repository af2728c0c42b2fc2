package deployment

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
)

// Annotations the controller keeps on ReplicaSets (and the revision on
// the Deployment too), as Kubernetes names them; kubectl rollout reads
// them.
const (
	// AnnotationRevision numbers a Deployment's templates: the
	// ReplicaSet of the current template has the highest.
	AnnotationRevision = "deployment.kubernetes.io/revision"
	// AnnotationRevisionHistory lists the revisions a ReplicaSet had
	// before (its template came back through a rollback).
	AnnotationRevisionHistory = "deployment.kubernetes.io/revision-history"
	// AnnotationDesiredReplicas is the Deployment's spec.replicas when
	// the ReplicaSet was last scaled.
	AnnotationDesiredReplicas = "deployment.kubernetes.io/desired-replicas"
	// AnnotationMaxReplicas is spec.replicas plus maxSurge at that time:
	// proportional scaling measures each ReplicaSet's share against it.
	AnnotationMaxReplicas = "deployment.kubernetes.io/max-replicas"
)

// maxRevisionHistoryChars bounds the revision-history annotation.
const maxRevisionHistoryChars = 2000

// notCopied are the Deployment annotations a ReplicaSet does not take
// over: the controller's own and kubectl's last-applied configuration.
var notCopied = map[string]bool{
	corev1.LastAppliedConfigAnnotation: true,
	AnnotationRevision:                 true,
	AnnotationRevisionHistory:          true,
	AnnotationDesiredReplicas:          true,
	AnnotationMaxReplicas:              true,
	appsv1.DeprecatedRollbackTo:        true,
}

// computeHash is the pod-template-hash of a template: FNV-32a over the
// template's JSON (deterministic: fields in declaration order, map keys
// sorted) and, when set, the collision count, rendered with
// rand.SafeEncodeString so it holds no vowels or look-alike digits.
func computeHash(t *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	// A PodTemplateSpec always marshals: it holds no channels, funcs or
	// cyclic pointers.
	b, _ := json.Marshal(t)
	h.Write(b)
	if collisionCount != nil {
		var buf [8]byte
		binary.LittleEndian.PutUint32(buf[:], uint32(*collisionCount))
		h.Write(buf[:])
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// equalIgnoreHash compares two templates without their
// pod-template-hash labels.
func equalIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(b.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	return equality.Semantic.DeepEqual(a, b)
}

// withLabel is a copy of m with key=value added.
func withLabel(m map[string]string, key, value string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	out[key] = value
	return out
}

// selectorWithLabel is a copy of s that also requires key=value.
func selectorWithLabel(s *metav1.LabelSelector, key, value string) *metav1.LabelSelector {
	out := s.DeepCopy()
	if out == nil {
		out = &metav1.LabelSelector{}
	}
	out.MatchLabels = withLabel(out.MatchLabels, key, value)
	return out
}

// replicas is the ReplicaSet's spec.replicas (0 for a nil ReplicaSet).
func replicas(rs *appsv1.ReplicaSet) int32 {
	if rs == nil || rs.Spec.Replicas == nil {
		return 0
	}
	return *rs.Spec.Replicas
}

// desired is the Deployment's spec.replicas (defaulted to 1).
func desired(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// sum adds f over the non-nil ReplicaSets.
func sum(rss []*appsv1.ReplicaSet, f func(*appsv1.ReplicaSet) int32) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += f(rs)
		}
	}
	return n
}

func statusReplicas(rs *appsv1.ReplicaSet) int32 { return rs.Status.Replicas }
func readyReplicas(rs *appsv1.ReplicaSet) int32  { return rs.Status.ReadyReplicas }
func availableReplicas(rs *appsv1.ReplicaSet) int32 {
	return rs.Status.AvailableReplicas
}

// activeReplicaSets are those with spec.replicas above zero.
func activeReplicaSets(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && replicas(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// olderFirst orders ReplicaSets by creation, then name.
func olderFirst(a, b *appsv1.ReplicaSet) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// byAge is a sorted copy of rss, oldest first.
func byAge(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	out := slices.Clone(rss)
	slices.SortFunc(out, olderFirst)
	return out
}

// revision is the ReplicaSet's (or Deployment's) revision annotation;
// 0 when absent, -1 when garbled.
func revision(obj metav1.Object) int64 {
	v, ok := obj.GetAnnotations()[AnnotationRevision]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func maxRevision(rss []*appsv1.ReplicaSet) int64 {
	var m int64
	for _, rs := range rss {
		m = max(m, revision(rs))
	}
	return m
}

// intAnnotation reads an int32 annotation.
func intAnnotation(obj metav1.Object, key string) (int32, bool) {
	v, ok := obj.GetAnnotations()[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// findNewReplicaSet is the oldest ReplicaSet whose template is the
// Deployment's (ignoring the hash label); nil when there is none.
func findNewReplicaSet(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	for _, rs := range byAge(rss) {
		if equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// findOldReplicaSets are all the others.
func findOldReplicaSets(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	newRS := findNewReplicaSet(d, rss)
	var old []*appsv1.ReplicaSet
	for _, rs := range rss {
		if newRS == nil || rs.UID != newRS.UID {
			old = append(old, rs)
		}
	}
	return old
}

// setNewReplicaSetAnnotations brings the new ReplicaSet's annotations up
// to date: the Deployment's own (but not the controller's), the revision
// (raised to newRevision, the old one kept in the revision history when
// the ReplicaSet existed), and for a ReplicaSet being created the
// replica annotations. It reports whether anything changed.
func setNewReplicaSetAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision string, exists bool) bool {
	changed := copyDeploymentAnnotations(d, rs)
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	oldRevision := rs.Annotations[AnnotationRevision]
	oldN, err := strconv.ParseInt(oldRevision, 10, 64)
	if err != nil {
		if oldRevision != "" {
			return false
		}
		oldN = 0
	}
	newN, err := strconv.ParseInt(newRevision, 10, 64)
	if err != nil {
		return false
	}
	if oldN < newN {
		rs.Annotations[AnnotationRevision] = newRevision
		changed = true
		if exists && oldRevision != "" {
			history := rs.Annotations[AnnotationRevisionHistory]
			if history == "" {
				history = oldRevision
			} else {
				history += "," + oldRevision
			}
			// Drop the oldest entries past the limit.
			for len(history) > maxRevisionHistoryChars {
				i := strings.Index(history, ",")
				if i < 0 {
					history = ""
					break
				}
				history = history[i+1:]
			}
			if history == "" {
				delete(rs.Annotations, AnnotationRevisionHistory)
			} else {
				rs.Annotations[AnnotationRevisionHistory] = history
			}
		}
	}
	if !exists && setReplicasAnnotations(rs, desired(d), desired(d)+maxSurge(d)) {
		changed = true
	}
	return changed
}

// copyDeploymentAnnotations copies the Deployment's annotations that
// belong on its ReplicaSets (kubernetes.io/change-cause, for one).
func copyDeploymentAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	changed := false
	for k, v := range d.Annotations {
		if notCopied[k] {
			continue
		}
		if cur, ok := rs.Annotations[k]; ok && cur == v {
			continue
		}
		if rs.Annotations == nil {
			rs.Annotations = map[string]string{}
		}
		rs.Annotations[k] = v
		changed = true
	}
	return changed
}

// setReplicasAnnotations records the Deployment size the ReplicaSet was
// scaled for; it reports whether anything changed.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, desiredReplicas, maxReplicas int32) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for k, v := range map[string]string{
		AnnotationDesiredReplicas: strconv.Itoa(int(desiredReplicas)),
		AnnotationMaxReplicas:     strconv.Itoa(int(maxReplicas)),
	} {
		if rs.Annotations[k] != v {
			rs.Annotations[k] = v
			changed = true
		}
	}
	return changed
}

func replicasAnnotationsNeedUpdate(rs *appsv1.ReplicaSet, desiredReplicas, maxReplicas int32) bool {
	return rs.Annotations[AnnotationDesiredReplicas] != strconv.Itoa(int(desiredReplicas)) ||
		rs.Annotations[AnnotationMaxReplicas] != strconv.Itoa(int(maxReplicas))
}

// revisionsToDelete are the old ReplicaSets past the Deployment's
// revisionHistoryLimit that may go: the lowest revisions among those
// not being deleted, skipping any that still has (or may still have)
// pods.
func revisionsToDelete(old []*appsv1.ReplicaSet, limit int32) []*appsv1.ReplicaSet {
	var alive []*appsv1.ReplicaSet
	for _, rs := range old {
		if rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	excess := len(alive) - int(limit)
	if excess <= 0 {
		return nil
	}
	slices.SortFunc(alive, func(a, b *appsv1.ReplicaSet) int {
		if ra, rb := revision(a), revision(b); ra != rb {
			if ra < rb {
				return -1
			}
			return 1
		}
		return olderFirst(a, b)
	})
	var out []*appsv1.ReplicaSet
	for _, rs := range alive[:excess] {
		if rs.Status.Replicas != 0 || replicas(rs) != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		out = append(out, rs)
	}
	return out
}
