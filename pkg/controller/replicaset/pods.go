package replicaset

import (
	"math"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/controller/podutil"
)

// AnnotationPodDeletionCost ranks a ReplicaSet's pods for scale-down:
// lower cost goes first (Kubernetes' PodDeletionCost).
const AnnotationPodDeletionCost = "controller.kubernetes.io/pod-deletion-cost"

// isPodAvailable: ready for at least minReadySeconds.
func isPodAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := podutil.ReadyCondition(p)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	return !c.LastTransitionTime.IsZero() && c.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).Before(now)
}

// readySince is when the pod became ready; zero when it is not.
func readySince(p *corev1.Pod) time.Time {
	if c := podutil.ReadyCondition(p); c != nil && c.Status == corev1.ConditionTrue {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

func deletionCost(p *corev1.Pod) int32 {
	v, ok := p.Annotations[AnnotationPodDeletionCost]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

func maxRestarts(p *corev1.Pod) int32 {
	var m int32
	for _, s := range p.Status.ContainerStatuses {
		m = max(m, s.RestartCount)
	}
	return m
}

// phaseOrder: pending (and anything unknown to the table) < unknown <
// running.
var phaseOrder = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// podsToDelete picks the n pods to remove on scale-down, in Kubernetes'
// order of preference:
//
//  1. not yet scheduled before scheduled;
//  2. Pending before Unknown before Running;
//  3. not ready before ready;
//  4. lower controller.kubernetes.io/pod-deletion-cost first;
//  5. more active related pods on the same node first (related are the
//     pods of every ReplicaSet with the same controller, so a Deployment's
//     old and new pods spread out again);
//  6. ready for a shorter time first;
//  7. more container restarts first;
//  8. created more recently first.
//
// Times in 6 and 8 compare on a log2 scale of their age at now, so pods of
// about the same age tie and go by UID: scale-down does not always hit
// the very newest pod.
func podsToDelete(pods, related []*corev1.Pod, n int, now time.Time) []*corev1.Pod {
	if n >= len(pods) {
		return pods
	}
	onNode := map[string]int{}
	for _, p := range related {
		if podutil.IsActive(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	ranked := make([]*corev1.Pod, len(pods))
	copy(ranked, pods)
	sort.SliceStable(ranked, func(i, j int) bool {
		return deleteBefore(ranked[i], ranked[j], onNode, now)
	})
	return ranked[:n]
}

// deleteBefore says whether a should be deleted before b.
func deleteBefore(a, b *corev1.Pod, onNode map[string]int, now time.Time) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if pa, pb := phaseOrder[a.Status.Phase], phaseOrder[b.Status.Phase]; pa != pb {
		return pa < pb
	}
	ra, rb := podutil.IsReady(a), podutil.IsReady(b)
	if ra != rb {
		return !ra
	}
	if ca, cb := deletionCost(a), deletionCost(b); ca != cb {
		return ca < cb
	}
	if na, nb := onNode[a.Spec.NodeName], onNode[b.Spec.NodeName]; na != nb {
		return na > nb
	}
	if ra && rb {
		if ta, tb := readySince(a), readySince(b); !ta.Equal(tb) {
			return newerFirst(a, b, ta, tb, now)
		}
	}
	if xa, xb := maxRestarts(a), maxRestarts(b); xa != xb {
		return xa > xb
	}
	if ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time; !ta.Equal(tb) {
		return newerFirst(a, b, ta, tb, now)
	}
	return false
}

// newerFirst orders a before b when ta is the more recent time (an
// unset time is the most recent of all), comparing ages on a log2 scale
// and breaking ties by UID.
func newerFirst(a, b *corev1.Pod, ta, tb, now time.Time) bool {
	if ta.IsZero() || tb.IsZero() || now.IsZero() {
		if ta.IsZero() || tb.IsZero() {
			return ta.IsZero()
		}
		return ta.After(tb)
	}
	if la, lb := logAge(ta, now), logAge(tb, now); la != lb {
		return la < lb
	}
	return a.UID < b.UID
}

// logAge buckets the age of t at now by powers of two (in nanoseconds);
// a time at or after now is -1.
func logAge(t, now time.Time) int64 {
	d := now.Sub(t)
	if d <= 0 {
		return -1
	}
	return int64(math.Log2(float64(d)))
}

// podKey is the pod's namespace/name, the key expectations track.
func podKey(p *corev1.Pod) string {
	return p.Namespace + "/" + p.Name
}
