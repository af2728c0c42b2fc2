// Package runtimeclass is Kubernetes' RuntimeClass admission: a new pod
// that names a RuntimeClass gets the class's pod overhead and its
// scheduling constraints (node selector and tolerations) in the mutating
// phase, and is refused with 403 Forbidden when the class does not exist,
// when its own overhead differs from the class's, or when it sets an
// overhead no class defines. Only creates are looked at: the fields are
// immutable after.
package runtimeclass

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/minik8s/minik8s/pkg/admission"
)

var runtimeClassesGVR = nodev1.SchemeGroupVersion.WithResource("runtimeclasses")

// Plugin is the RuntimeClass admission plugin.
type Plugin struct{}

// New returns the plugin.
func New() *Plugin { return &Plugin{} }

// Name is the plugin's name in kube-apiserver.
func (*Plugin) Name() string { return "RuntimeClass" }

// newPod is the pod a create of a pod (not a subresource) brings.
func newPod(a *admission.Attributes) (*corev1.Pod, bool) {
	if a.Subresource != "" || a.Operation != admission.Create {
		return nil, false
	}
	pod, ok := a.Object.(*corev1.Pod)
	return pod, ok
}

// class reads the RuntimeClass a pod names; a missing one refuses the pod.
func class(ctx context.Context, pod *corev1.Pod, a *admission.Attributes, objects admission.Objects) (*nodev1.RuntimeClass, error) {
	name := *pod.Spec.RuntimeClassName
	obj, err := objects.Get(ctx, runtimeClassesGVR, "", name)
	if apierrors.IsNotFound(err) {
		return nil, forbidden(a, fmt.Errorf("pod rejected: RuntimeClass %q not found", name))
	}
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("RuntimeClass: %w", err))
	}
	rc, ok := obj.(*nodev1.RuntimeClass)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("RuntimeClass %q: unexpected %T", name, obj))
	}
	return rc, nil
}

func forbidden(a *admission.Attributes, err error) error {
	return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, err)
}

// Admit sets the pod's overhead from its RuntimeClass and adds the
// class's node selector and tolerations.
func (*Plugin) Admit(ctx context.Context, a *admission.Attributes, objects admission.Objects) admission.Result {
	pod, ok := newPod(a)
	if !ok || pod.Spec.RuntimeClassName == nil {
		return admission.Result{}
	}
	rc, err := class(ctx, pod, a, objects)
	if err != nil {
		return admission.Result{Err: err}
	}
	if rc.Overhead != nil {
		if pod.Spec.Overhead != nil && !apiequality.Semantic.DeepEqual(pod.Spec.Overhead, rc.Overhead.PodFixed) {
			return admission.Result{Err: forbidden(a, fmt.Errorf("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"))}
		}
		pod.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
	}
	if rc.Scheduling == nil {
		return admission.Result{}
	}
	for key, value := range rc.Scheduling.NodeSelector {
		if have, set := pod.Spec.NodeSelector[key]; set && have != value {
			return admission.Result{Err: forbidden(a, fmt.Errorf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", key, value, key, have))}
		}
		if pod.Spec.NodeSelector == nil {
			pod.Spec.NodeSelector = map[string]string{}
		}
		pod.Spec.NodeSelector[key] = value
	}
	for _, t := range rc.Scheduling.Tolerations {
		if !hasToleration(pod.Spec.Tolerations, t) {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, t)
		}
	}
	return admission.Result{}
}

func hasToleration(have []corev1.Toleration, t corev1.Toleration) bool {
	for _, h := range have {
		if h.MatchToleration(&t) && h.Effect == t.Effect && h.TolerationSeconds == nil == (t.TolerationSeconds == nil) &&
			(h.TolerationSeconds == nil || *h.TolerationSeconds == *t.TolerationSeconds) {
			return true
		}
	}
	return false
}

// Validate refuses a pod overhead that no RuntimeClass defines.
func (*Plugin) Validate(ctx context.Context, a *admission.Attributes, objects admission.Objects) admission.Result {
	pod, ok := newPod(a)
	if !ok || pod.Spec.Overhead == nil {
		return admission.Result{}
	}
	if pod.Spec.RuntimeClassName == nil {
		return admission.Result{Err: forbidden(a, fmt.Errorf("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"))}
	}
	rc, err := class(ctx, pod, a, objects)
	if err != nil {
		return admission.Result{Err: err}
	}
	if rc.Overhead == nil || !apiequality.Semantic.DeepEqual(pod.Spec.Overhead, rc.Overhead.PodFixed) {
		return admission.Result{Err: forbidden(a, fmt.Errorf("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"))}
	}
	return admission.Result{}
}
