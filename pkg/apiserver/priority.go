package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
)

var priorityClassesResource = schedulingv1.SchemeGroupVersion.WithResource("priorityclasses")

// admitPriority is Kubernetes' Priority admission on a new pod (obj of
// res): spec.priority and spec.preemptionPolicy come from the pod's
// PriorityClass, or from the global default class when it names none
// (priority 0 without one). A class that does not exist, or a priority
// the pod sets that the class does not give, is refused.
func (s *Server) admitPriority(ctx context.Context, res *registry.Resource, obj runtime.Object) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok || res.GroupVersionResource != corev1.SchemeGroupVersion.WithResource("pods") {
		return nil
	}
	forbidden := func(err error) error { return apierrors.NewForbidden(corev1.Resource("pods"), pod.Name, err) }
	var class *schedulingv1.PriorityClass
	if name := pod.Spec.PriorityClassName; name != "" {
		c, err := storedObjects{s}.Get(ctx, priorityClassesResource, "", name)
		if apierrors.IsNotFound(err) {
			return forbidden(fmt.Errorf("no PriorityClass with name %s was found", name))
		}
		if err != nil {
			return forbidden(fmt.Errorf("failed to get PriorityClass with name %s: %w", name, err))
		}
		class, _ = c.(*schedulingv1.PriorityClass)
	} else {
		classes, err := storedObjects{s}.List(ctx, priorityClassesResource, "")
		if err != nil {
			return forbidden(fmt.Errorf("failed to get default priority class: %w", err))
		}
		// As Kubernetes: of several global defaults, the lowest.
		for _, o := range classes {
			if c, ok := o.(*schedulingv1.PriorityClass); ok && c.GlobalDefault && (class == nil || c.Value < class.Value) {
				class = c
			}
		}
	}
	priority, policy := int32(0), corev1.PreemptLowerPriority
	if class != nil {
		priority = class.Value
		if class.PreemptionPolicy != nil {
			policy = *class.PreemptionPolicy
		}
		if pod.Spec.PriorityClassName == "" {
			pod.Spec.PriorityClassName = class.Name
		}
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != priority {
		return forbidden(fmt.Errorf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, priority))
	}
	pod.Spec.Priority = ptr.To(priority)
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != policy {
		return forbidden(fmt.Errorf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, policy))
	}
	pod.Spec.PreemptionPolicy = ptr.To(policy)
	return nil
}
