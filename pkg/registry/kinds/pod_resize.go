package kinds

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podResize is what PUT or PATCH .../pods/{name}/resize changes: each
// container's resources and resize policy, matched by name, as Kubernetes'
// pod resize strategy does. Everything else stays as stored, and the
// generation moves with the spec.
func podResize(obj, desired runtime.Object) {
	pod, want := obj.(*corev1.Pod), desired.(*corev1.Pod)
	copyResources := func(dst, src []corev1.Container) {
		byName := map[string]*corev1.Container{}
		for i := range src {
			byName[src[i].Name] = &src[i]
		}
		for i := range dst {
			if c, ok := byName[dst[i].Name]; ok {
				dst[i].Resources = *c.Resources.DeepCopy()
				dst[i].ResizePolicy = append([]corev1.ContainerResizePolicy(nil), c.ResizePolicy...)
			}
		}
	}
	copyResources(pod.Spec.Containers, want.Spec.Containers)
	copyResources(pod.Spec.InitContainers, want.Spec.InitContainers)
}

// validatePodResize enforces Kubernetes' resize rules: a Windows pod or a
// static (mirror) pod is never resized, the QoS class stays, requests and
// limits may not be removed, and only the cpu and memory of app and
// sidecar containers change.
func validatePodResize(pod, old *corev1.Pod) field.ErrorList {
	if _, ok := old.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods cannot be resized")}
	}
	if old.Spec.OS != nil && old.Spec.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "windows pods cannot be resized")}
	}
	var errs field.ErrorList
	specPath := field.NewPath("spec")
	oldQOS := old.Status.QOSClass
	if oldQOS == "" {
		oldQOS = podQOSClass(&old.Spec)
	}
	if podQOSClass(&pod.Spec) != oldQOS {
		errs = append(errs, field.Invalid(specPath, pod.Status.QOSClass, "Pod QOS Class may not change as a result of resizing"))
	}
	if pod.Spec.Resources != nil || old.Spec.Resources != nil {
		if !equality.Semantic.DeepEqual(pod.Spec.Resources, old.Spec.Resources) {
			errs = append(errs, field.Forbidden(field.NewPath(""), "resize of pods with pod-level resources is forbidden when InPlacePodLevelResourcesVerticalScalingEnabled feature gate is disabled"))
		}
	}

	// Compare the specs with the cpu and memory of the resizable
	// containers copied from the new one.
	munged := old.Spec.DeepCopy()
	for i := range old.Spec.Containers {
		p := specPath.Child("containers").Index(i).Child("resources")
		errs = append(errs, validateContainerResize(&pod.Spec.Containers[i].Resources, &old.Spec.Containers[i].Resources, p)...)
		takeCPUMemory(&munged.Containers[i].Resources, &pod.Spec.Containers[i].Resources)
	}
	for i := range old.Spec.InitContainers {
		if !isSidecar(&old.Spec.InitContainers[i]) {
			if !equality.Semantic.DeepEqual(pod.Spec.InitContainers[i].Resources, old.Spec.InitContainers[i].Resources) {
				errs = append(errs, field.Forbidden(specPath, "resources for non-sidecar init containers are immutable"))
			}
			continue
		}
		p := specPath.Child("initContainers").Index(i).Child("resources")
		errs = append(errs, validateContainerResize(&pod.Spec.InitContainers[i].Resources, &old.Spec.InitContainers[i].Resources, p)...)
		takeCPUMemory(&munged.InitContainers[i].Resources, &pod.Spec.InitContainers[i].Resources)
	}
	if !equality.Semantic.DeepEqual(munged.Containers, pod.Spec.Containers) {
		errs = append(errs, field.Forbidden(specPath, "only cpu and memory resources are mutable"))
	}
	if !equality.Semantic.DeepEqual(munged.InitContainers, pod.Spec.InitContainers) {
		errs = append(errs, field.Forbidden(specPath, "only cpu and memory resources for init or sidecar containers are mutable"))
	}
	return errs
}

// validateContainerResize refuses removing a request or a limit.
func validateContainerResize(want, old *corev1.ResourceRequirements, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if removed(want.Requests, old.Requests) {
		errs = append(errs, field.Forbidden(p.Child("requests"), "resource requests cannot be removed"))
	}
	if removed(want.Limits, old.Limits) {
		errs = append(errs, field.Forbidden(p.Child("limits"), "resource limits cannot be removed"))
	}
	return errs
}

func removed(list, old corev1.ResourceList) bool {
	for name := range old {
		if _, ok := list[name]; !ok {
			return true
		}
	}
	return false
}

// takeCPUMemory sets dst's cpu and memory requests and limits to src's.
func takeCPUMemory(dst, src *corev1.ResourceRequirements) {
	take := func(dst *corev1.ResourceList, src corev1.ResourceList) {
		for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			q, ok := src[n]
			switch {
			case ok && *dst == nil:
				*dst = corev1.ResourceList{n: q}
			case ok:
				(*dst)[n] = q
			default:
				delete(*dst, n)
			}
		}
		if *dst != nil && len(*dst) == 0 && len(src) == 0 {
			*dst = src
		}
	}
	take(&dst.Requests, src.Requests)
	take(&dst.Limits, src.Limits)
}

// isSidecar: an init container that keeps running (restartPolicy Always).
func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}
