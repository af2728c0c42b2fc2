package local

import (
	corev1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
)

// event records an event about the pod, or one of its containers.
func (p *Provider) event(pod *corev1.Pod, container, eventType, reason, format string, args ...any) {
	ref := &corev1.ObjectReference{
		Kind: "Pod", APIVersion: "v1",
		Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
	}
	if container != "" {
		ref.FieldPath = eventFieldPath(pod, container)
	}
	p.events.Eventf(ref, eventType, reason, format, args...)
}

// noEvents drops events when the provider has no recorder.
type noEvents struct{}

func (noEvents) Event(apiruntime.Object, string, string, string)          {}
func (noEvents) Eventf(apiruntime.Object, string, string, string, ...any) {}
func (noEvents) AnnotatedEventf(apiruntime.Object, map[string]string, string, string, string, ...any) {
}
