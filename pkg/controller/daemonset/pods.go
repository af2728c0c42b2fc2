package daemonset

import (
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/controller/podutil"
	"github.com/minik8s/minik8s/pkg/scheduler"
)

// AnnotationTemplateGeneration is where apps/v1 keeps a DaemonSet's
// template generation; the apiserver counts it.
const AnnotationTemplateGeneration = "deprecated.daemonset.template.generation"

// LabelTemplateGeneration labels a daemon pod with the template
// generation it was made from.
const LabelTemplateGeneration = "pod-template-generation"

// daemonTolerations are what every daemon pod tolerates, as Kubernetes
// adds them: node trouble must not evict or keep out the node's daemons.
var daemonTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// hostNetworkToleration is added for hostNetwork pods only: they do not
// need the pod network a node may still lack.
var hostNetworkToleration = corev1.Toleration{
	Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
}

// addDaemonTolerations adds the daemon tolerations to spec, replacing
// one of the user's with the same key and effect (as Kubernetes does, so
// a user's tolerationSeconds on not-ready cannot evict a daemon).
func addDaemonTolerations(spec *corev1.PodSpec) {
	add := daemonTolerations
	if spec.HostNetwork {
		add = append(add[:len(add):len(add)], hostNetworkToleration)
	}
	for _, t := range add {
		replaced := false
		for i := range spec.Tolerations {
			if spec.Tolerations[i].Key == t.Key && spec.Tolerations[i].Effect == t.Effect {
				spec.Tolerations[i] = t
				replaced = true
				break
			}
		}
		if !replaced {
			spec.Tolerations = append(spec.Tolerations, t)
		}
	}
}

// templateGeneration is ds's template generation; nil when it has none.
func templateGeneration(ds *appsv1.DaemonSet) *int64 {
	v, ok := ds.Annotations[AnnotationTemplateGeneration]
	if !ok {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil
	}
	return &n
}

// podTemplate is the template of ds's new pods: its own, labelled with
// the revision hash and template generation, with the daemon
// tolerations.
func podTemplate(ds *appsv1.DaemonSet, hash string) *corev1.PodTemplateSpec {
	t := ds.Spec.Template.DeepCopy()
	addDaemonTolerations(&t.Spec)
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	if gen := templateGeneration(ds); gen != nil {
		t.Labels[LabelTemplateGeneration] = strconv.FormatInt(*gen, 10)
	}
	if hash != "" {
		t.Labels[appsv1.ControllerRevisionHashLabelKey] = hash
	}
	return t
}

// newPod is ds's pod for node: the template with a required node
// affinity for that node alone, replacing the template's required terms
// (already matched by shouldRun), so the scheduler binds it there.
func newPod(ds *appsv1.DaemonSet, t *corev1.PodTemplateSpec, node string) *corev1.Pod {
	t = t.DeepCopy()
	term := corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
		Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
	}}}
	spec := &t.Spec
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    ds.Name + "-",
			Namespace:       ds.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, controllerKind)},
		},
		Spec: t.Spec,
	}
}

// shouldRun says whether ds's pod should be placed on node, and whether
// a pod already there may keep running (a NoSchedule taint alone keeps
// new pods out but does not evict). The checks are the scheduler's own
// filters on the pod as the controller would create it.
func shouldRun(ds *appsv1.DaemonSet, node *corev1.Node) (run, keep bool) {
	if n := ds.Spec.Template.Spec.NodeName; n != "" && n != node.Name {
		return false, false
	}
	t := ds.Spec.Template.DeepCopy()
	addDaemonTolerations(&t.Spec)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Labels: t.Labels}, Spec: t.Spec}
	pi, ni := scheduler.NewPodInfo(pod), scheduler.NewNodeInfo(node)
	if len((scheduler.NodeAffinity{}).Filter(pi, ni)) > 0 {
		return false, false
	}
	if len((scheduler.TaintToleration{}).Filter(pi, ni)) == 0 {
		return true, true
	}
	noExecute := node.DeepCopy()
	noExecute.Spec.Taints = nil
	for _, taint := range node.Spec.Taints {
		if taint.Effect == corev1.TaintEffectNoExecute {
			noExecute.Spec.Taints = append(noExecute.Spec.Taints, taint)
		}
	}
	return false, len((scheduler.TaintToleration{}).Filter(pi, scheduler.NewNodeInfo(noExecute))) == 0
}

// targetNode is the node a daemon pod is on or meant for: its nodeName,
// or the single node its required affinity names.
func targetNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, req := range term.MatchFields {
			if req.Key == metav1.ObjectNameField && req.Operator == corev1.NodeSelectorOpIn && len(req.Values) == 1 {
				return req.Values[0]
			}
		}
	}
	return ""
}

// isAvailable: ready for at least minReadySeconds.
func isAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := podutil.ReadyCondition(p)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	return !c.LastTransitionTime.IsZero() && !c.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).After(now)
}

// isUpdated: made from ds's current template, by revision hash or by
// template generation (pods made before the revision was known).
func isUpdated(p *corev1.Pod, hash string, gen *int64) bool {
	if hash != "" && p.Labels[appsv1.ControllerRevisionHashLabelKey] == hash {
		return true
	}
	return gen != nil && p.Labels[LabelTemplateGeneration] == strconv.FormatInt(*gen, 10)
}

// sortOldestFirst orders pods scheduled first, then oldest first, then by
// name: the first is the one a node keeps.
func sortOldestFirst(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if (a.Spec.NodeName != "") != (b.Spec.NodeName != "") {
			return a.Spec.NodeName != ""
		}
		if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.Name < b.Name
		}
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	})
}
