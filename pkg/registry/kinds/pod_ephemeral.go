package kinds

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podEphemeralContainers is what PUT or PATCH
// .../pods/{name}/ephemeralcontainers changes: spec.ephemeralContainers,
// nothing else, as Kubernetes' ephemeral containers strategy does. The
// generation moves with the spec.
func podEphemeralContainers(obj, desired runtime.Object) {
	pod, want := obj.(*corev1.Pod), desired.(*corev1.Pod)
	pod.Spec.EphemeralContainers = nil
	for i := range want.Spec.EphemeralContainers {
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, *want.Spec.EphemeralContainers[i].DeepCopy())
	}
}

// validatePodCreate: ephemeral containers are added to a running pod
// through its /ephemeralcontainers, never named when it is created.
func validatePodCreate(pod *corev1.Pod) field.ErrorList {
	if len(pod.Spec.EphemeralContainers) > 0 {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "ephemeralContainers"), "cannot be set on create")}
	}
	return nil
}

// validatePodEphemeralContainers is Kubernetes'
// ValidatePodEphemeralContainersUpdate: a static (mirror) pod takes no
// ephemeral containers, and those it has may be neither removed nor
// changed (matched by name: a patch need not keep their order). The new
// ones were checked with the rest of the spec (validation.PodSpec).
func validatePodEphemeralContainers(pod, old *corev1.Pod) field.ErrorList {
	if _, ok := old.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}
	}
	var errs field.ErrorList
	specPath := field.NewPath("spec", "ephemeralContainers")
	byName := map[string]*corev1.EphemeralContainer{}
	for i := range pod.Spec.EphemeralContainers {
		byName[pod.Spec.EphemeralContainers[i].Name] = &pod.Spec.EphemeralContainers[i]
	}
	for _, prev := range old.Spec.EphemeralContainers {
		c, ok := byName[prev.Name]
		switch {
		case !ok:
			errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", prev.Name)))
		case !equality.Semantic.DeepEqual(prev, *c):
			errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("existing ephemeral containers %q may not be changed\n%v", prev.Name, diff.Diff(prev, *c))))
		}
	}
	return errs
}
