package kinds

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Pods: the scheduler binds them to a node (POST .../binding), and a pod
// bound to a node is deleted gracefully, by its kubelet.
func pods() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true,
		ShortNames: []string{"po"}, Categories: []string{"all"}, Status: true,
		Actions:        []registry.Action{podBinding},
		Default:        defaulter(defaults.Pod),
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validation.Pod),
		ValidateUpdate: updateValidator(validation.PodUpdate),
		Printer:        printers.Pod,
		FieldLabels:    podFields,
		GracefulDelete: podGracefulDelete,
	}
}

func podFields(obj runtime.Object) fields.Set {
	p := obj.(*corev1.Pod)
	return fields.Set{
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  p.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(p.Spec.HostNetwork),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             p.Status.PodIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
}

// podGracefulDelete: a pod bound to a node stays (Terminating) until its
// kubelet has stopped the containers and deletes it with grace 0.
func podGracefulDelete(obj runtime.Object, requested *int64) (int64, bool) {
	p := obj.(*corev1.Pod)
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if p.Spec.TerminationGracePeriodSeconds != nil {
		grace = *p.Spec.TerminationGracePeriodSeconds
	}
	if requested != nil {
		grace = *requested
	}
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return 0, false
	}
	if grace == 0 {
		return 0, false
	}
	return grace, true
}

// podBinding assigns a pod to a node, once, as the scheduler does.
var podBinding = registry.Action{
	Name: "binding", Kind: "Binding",
	New: func() runtime.Object { return &corev1.Binding{} },
	Check: func(body runtime.Object) error {
		if b := body.(*corev1.Binding); b.Target.Name == "" {
			return apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, b.Name, nil)
		}
		return nil
	},
	Apply: bindPod,
}

func bindPod(obj, body runtime.Object, now time.Time) error {
	pod, binding := obj.(*corev1.Pod), body.(*corev1.Binding)
	pods := corev1.Resource("pods")
	if pod.DeletionTimestamp != nil {
		return apierrors.NewConflict(pods, pod.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name))
	}
	if pod.Spec.NodeName != "" {
		return apierrors.NewConflict(pods, pod.Name, fmt.Errorf("pod %s is already assigned to node %q", pod.Name, pod.Spec.NodeName))
	}
	if binding.UID != "" && binding.UID != pod.UID {
		return apierrors.NewConflict(pods, pod.Name, fmt.Errorf("precondition failed: UID in binding %s does not match the pod's %s", binding.UID, pod.UID))
	}
	pod.Spec.NodeName = binding.Target.Name
	for k, v := range binding.Annotations {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[k] = v
	}
	scheduled := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}
	replaced := false
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodScheduled {
			pod.Status.Conditions[i] = scheduled
			replaced = true
		}
	}
	if !replaced {
		pod.Status.Conditions = append(pod.Status.Conditions, scheduled)
	}
	pod.ResourceVersion = binding.ResourceVersion
	return nil
}
