// Package podsecurity is Kubernetes' Pod Security Admission
// (https://kubernetes.io/docs/concepts/security/pod-security-admission/):
// namespaces choose a Pod Security Standards level for each of three
// modes with the labels pod-security.kubernetes.io/enforce, audit and
// warn (privileged, baseline or restricted; an unlabelled namespace is
// privileged in all three, and no namespace or user is exempt, as
// Kubernetes' defaults). A pod that violates the enforce level is
// refused with 403 Forbidden; a violation of the warn level reaches the
// client as a warning, one of the audit level as the audit annotation
// pod-security.kubernetes.io/audit-violations. Workload resources
// (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs,
// ReplicationControllers, PodTemplates) are never refused: their pod
// templates are checked at the warn and audit levels only, the warn level
// defaulting to a stricter enforce level. Namespace labels are validated
// on create and update, and tightening a namespace's enforce level warns
// about the pods already there that violate it.
//
// The pod-security.kubernetes.io/<mode>-version labels take "latest" or
// "v1.<minor>"; every version is checked with the latest rules (those of
// Kubernetes 1.37), and messages quote the version as labelled.
package podsecurity

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/admission"
)

// Plugin is the PodSecurity admission plugin.
type Plugin struct {
	// maxPodsToCheck and podCheckTimeout bound the check of existing pods
	// when a namespace's enforce level tightens, as Kubernetes' 3000 and 1s.
	maxPodsToCheck  int
	podCheckTimeout time.Duration
}

// New returns the plugin with Kubernetes' defaults.
func New() *Plugin {
	return &Plugin{maxPodsToCheck: 3000, podCheckTimeout: time.Second}
}

// Name is the plugin's name in kube-apiserver.
func (p *Plugin) Name() string { return "PodSecurity" }

var (
	namespacesGVR = corev1.SchemeGroupVersion.WithResource("namespaces")
	podsGVR       = corev1.SchemeGroupVersion.WithResource("pods")
)

// Validate decides on a namespace, pod or workload write.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes, objects admission.Objects) admission.Result {
	if a.Subresource != "" && !(a.Resource == podsGVR && a.Subresource == "ephemeralcontainers") {
		// Pods' status and binding, workloads' status and scale, a
		// namespace's status and finalize: nothing that is checked. A
		// pod's ephemeral containers are.
		return admission.Result{}
	}
	switch obj := a.Object.(type) {
	case *corev1.Namespace:
		old, _ := a.OldObject.(*corev1.Namespace)
		return p.validateNamespace(ctx, a, obj, old, objects)
	case *corev1.Pod:
		old, _ := a.OldObject.(*corev1.Pod)
		return p.validatePod(ctx, a, obj, old, objects)
	}
	if meta, spec, ok := podTemplate(a.Object); ok {
		return p.validateWorkload(ctx, a, meta, spec, objects)
	}
	return admission.Result{}
}

// podTemplate is the pod template of a workload resource.
func podTemplate(obj runtime.Object) (*metav1.ObjectMeta, *corev1.PodSpec, bool) {
	var t *corev1.PodTemplateSpec
	switch o := obj.(type) {
	case *appsv1.Deployment:
		t = &o.Spec.Template
	case *appsv1.ReplicaSet:
		t = &o.Spec.Template
	case *appsv1.StatefulSet:
		t = &o.Spec.Template
	case *appsv1.DaemonSet:
		t = &o.Spec.Template
	case *batchv1.Job:
		t = &o.Spec.Template
	case *batchv1.CronJob:
		t = &o.Spec.JobTemplate.Spec.Template
	case *corev1.ReplicationController:
		t = o.Spec.Template
	case *corev1.PodTemplate:
		t = &o.Template
	default:
		return nil, nil, false
	}
	if t == nil {
		return nil, nil, false
	}
	return &t.ObjectMeta, &t.Spec, true
}

// validateNamespace refuses invalid policy labels (on update, only when
// they changed) and, when an update tightens the enforce level, warns of
// the namespace's pods that violate it.
func (p *Plugin) validateNamespace(ctx context.Context, a *admission.Attributes, ns, old *corev1.Namespace, objects admission.Objects) admission.Result {
	policy, errs := PolicyFor(ns.Labels)
	if a.Operation == admission.Create || old == nil {
		if len(errs) > 0 {
			return admission.Result{Err: apierrors.NewInvalid(a.Kind.GroupKind(), a.Name, errs)}
		}
		return admission.Result{}
	}
	oldPolicy, oldErrs := PolicyFor(old.Labels)
	if len(errs) > 0 && (len(oldErrs) == 0 || !reflect.DeepEqual(errs, oldErrs)) {
		return admission.Result{Err: apierrors.NewInvalid(a.Kind.GroupKind(), a.Name, errs)}
	}
	switch {
	case policy.Enforce == oldPolicy.Enforce,
		policy.Enforce.Level == LevelPrivileged,
		policy.Enforce.Version == oldPolicy.Enforce.Version && policy.Enforce.Level.strictness() <= oldPolicy.Enforce.Level.strictness():
		return admission.Result{}
	}
	return admission.Result{Warnings: p.checkExistingPods(ctx, ns.Name, policy.Enforce, objects)}
}

// checkExistingPods warns of the pods in namespace that level would
// refuse: one warning per distinct set of violations, naming the first
// pod by name and counting the others, checking one pod per controller
// before the others' replicas, within the plugin's bounds.
func (p *Plugin) checkExistingPods(ctx context.Context, namespace string, level LevelVersion, objects admission.Objects) []string {
	timeout := p.podCheckTimeout
	if deadline, ok := ctx.Deadline(); ok {
		if half := time.Until(deadline) / 2; half < timeout {
			timeout = half
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	list, err := objects.List(ctx, podsGVR, namespace)
	if err != nil {
		return []string{"failed to list pods while checking new PodSecurity enforce level"}
	}
	// One pod per controller first: replicas share their violations.
	var pods, replicas []*corev1.Pod
	seen := map[types.UID]bool{}
	for _, obj := range list {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			continue
		}
		if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
			if seen[ref.UID] {
				replicas = append(replicas, pod)
				continue
			}
			seen[ref.UID] = true
		}
		pods = append(pods, pod)
	}
	pods = append(pods, replicas...)
	total := len(pods)
	if len(pods) > p.maxPodsToCheck {
		pods = pods[:p.maxPodsToCheck]
	}

	type group struct {
		first string
		count int
	}
	groups := map[string]*group{}
	var reasons []string
	checked := len(pods)
	for i, pod := range pods {
		if vs := Evaluate(level.Level, &pod.ObjectMeta, &pod.Spec); len(vs) > 0 {
			r := vs.Reasons()
			g, ok := groups[r]
			if !ok {
				g = &group{first: pod.Name}
				groups[r] = g
				reasons = append(reasons, r)
			} else if pod.Name < g.first {
				g.first = pod.Name
			}
			g.count++
		}
		if ctx.Err() != nil {
			checked = i + 1
			break
		}
	}
	var warnings []string
	if checked < total {
		warnings = append(warnings, fmt.Sprintf("new PodSecurity enforce level only checked against the first %d of %d existing pods", checked, total))
	}
	if len(reasons) > 0 {
		warnings = append(warnings, fmt.Sprintf("existing pods in namespace %q violate the new PodSecurity enforce level %q", namespace, level.String()))
	}
	var perPod []string
	for _, r := range reasons {
		g := groups[r]
		switch g.count {
		case 1:
			perPod = append(perPod, fmt.Sprintf("%s: %s", g.first, r))
		case 2:
			perPod = append(perPod, fmt.Sprintf("%s (and 1 other pod): %s", g.first, r))
		default:
			perPod = append(perPod, fmt.Sprintf("%s (and %d other pods): %s", g.first, g.count-1, r))
		}
	}
	slices.Sort(perPod)
	return append(warnings, perPod...)
}

// validatePod checks a pod create, or an update that changes what the
// checks read beyond what an update may change anyway (an image, the
// containers, ephemeral containers), at all three levels.
func (p *Plugin) validatePod(ctx context.Context, a *admission.Attributes, pod, old *corev1.Pod, objects admission.Objects) admission.Result {
	policy, errs, err := namespacePolicy(ctx, a.Namespace, objects)
	if err != nil {
		return admission.Result{Err: apierrors.NewInternalError(fmt.Errorf("failed to lookup namespace %q", a.Namespace))}
	}
	if len(errs) == 0 && policy.fullyPrivileged() {
		return admission.Result{AuditAnnotations: map[string]string{
			EnforcePolicyAnnotation: LevelVersion{LevelPrivileged, VersionLatest}.String(),
		}}
	}
	if a.Operation == admission.Update && old != nil && !significantPodUpdate(pod, old) {
		return admission.Result{}
	}
	return evaluate(a, policy, errs.ToAggregate(), &pod.ObjectMeta, &pod.Spec, true)
}

// validateWorkload checks a workload's pod template at the audit and
// warn levels; it never refuses.
func (p *Plugin) validateWorkload(ctx context.Context, a *admission.Attributes, meta *metav1.ObjectMeta, spec *corev1.PodSpec, objects admission.Objects) admission.Result {
	policy, errs, err := namespacePolicy(ctx, a.Namespace, objects)
	if err != nil {
		return admission.Result{AuditAnnotations: map[string]string{
			ErrorAnnotation: fmt.Sprintf("failed to lookup namespace %q: %v", a.Namespace, err),
		}}
	}
	if len(errs) == 0 && policy.Warn.Level == LevelPrivileged && policy.Audit.Level == LevelPrivileged {
		return admission.Result{}
	}
	return evaluate(a, policy, errs.ToAggregate(), meta, spec, false)
}

// namespacePolicy reads the policy of namespace from its labels.
func namespacePolicy(ctx context.Context, namespace string, objects admission.Objects) (Policy, field.ErrorList, error) {
	obj, err := objects.Get(ctx, namespacesGVR, "", namespace)
	if err != nil {
		return Policy{}, nil, err
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return Policy{}, nil, fmt.Errorf("namespace %q: unexpected %T", namespace, obj)
	}
	policy, errs := PolicyFor(ns.Labels)
	return policy, errs, nil
}

// evaluate checks a pod or template against the namespace's policy: the
// enforce level (pods only) refuses, the audit level annotates, the warn
// level warns when the write is not refused.
func evaluate(a *admission.Attributes, policy Policy, policyErr error, meta *metav1.ObjectMeta, spec *corev1.PodSpec, enforce bool) admission.Result {
	annotations := map[string]string{}
	if policyErr != nil {
		annotations[ErrorAnnotation] = fmt.Sprintf("Failed to parse policy: %v", policyErr)
	}
	results := map[Level]Violations{}
	check := func(level Level) Violations {
		vs, ok := results[level]
		if !ok {
			vs = Evaluate(level, meta, spec)
			results[level] = vs
		}
		return vs
	}
	var res admission.Result
	if enforce {
		annotations[EnforcePolicyAnnotation] = policy.Enforce.String()
		if vs := check(policy.Enforce.Level); len(vs) > 0 {
			res.Err = apierrors.NewForbidden(a.Resource.GroupResource(), a.Name,
				fmt.Errorf("violates PodSecurity %q: %s", policy.Enforce.String(), vs))
		}
	}
	if vs := check(policy.Audit.Level); len(vs) > 0 {
		annotations[AuditViolationsAnnotation] = fmt.Sprintf("would violate PodSecurity %q: %s", policy.Audit.String(), vs)
	}
	if res.Err == nil {
		if vs := check(policy.Warn.Level); len(vs) > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("would violate PodSecurity %q: %s", policy.Warn.String(), vs))
		}
	}
	if len(annotations) > 0 {
		res.AuditAnnotations = annotations
	}
	return res
}

// significantPodUpdate says whether a pod update changes what is
// checked, as Kubernetes judges it: the rest of a pod's spec cannot
// change after creation.
func significantPodUpdate(pod, old *corev1.Pod) bool {
	if len(pod.Spec.Containers) != len(old.Spec.Containers) || len(pod.Spec.InitContainers) != len(old.Spec.InitContainers) {
		return true
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Image != old.Spec.Containers[i].Image {
			return true
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Image != old.Spec.InitContainers[i].Image {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		i := slices.IndexFunc(old.Spec.EphemeralContainers, func(o corev1.EphemeralContainer) bool { return o.Name == c.Name })
		if i < 0 || c.Image != old.Spec.EphemeralContainers[i].Image {
			return true
		}
	}
	return false
}
