package quota

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	resourcehelper "k8s.io/component-helpers/resource"
)

// podResources are the quota names a pod uses beyond the prefixed ones.
var podResources = []corev1.ResourceName{
	corev1.ResourcePods, CountName(schema.GroupResource{Resource: "pods"}),
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
}

// mustSpecify are the quota names that make every container of a pod
// set the matching request or limit, as Kubernetes has kept them for
// compatibility (and for no other resource).
var mustSpecify = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
}

func podEvaluator() *Evaluator {
	return &Evaluator{
		GroupResource: schema.GroupResource{Resource: "pods"},
		usage: func(obj runtime.Object, now time.Time) corev1.ResourceList {
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return corev1.ResourceList{CountName(schema.GroupResource{Resource: "pods"}): one()}
			}
			return PodUsage(pod, now)
		},
		tracks: func(name corev1.ResourceName) bool {
			s := string(name)
			return slices.Contains(podResources, name) ||
				strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(s, corev1.ResourceRequestsHugePagesPrefix) ||
				(strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) && strings.Contains(s, "/"))
		},
		scoped:   true,
		required: podRequired,
	}
}

// PodUsage is what pod uses: count/pods always; pods and its compute
// resources while it is not terminal (nor deleted past its grace).
func PodUsage(pod *corev1.Pod, now time.Time) corev1.ResourceList {
	out := corev1.ResourceList{CountName(schema.GroupResource{Resource: "pods"}): one()}
	if !Charged(pod, now) {
		return out
	}
	opts := resourcehelper.PodResourcesOptions{}
	return Add(out, computeUsage(resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts)))
}

// Charged says whether a pod counts against "pods" and compute quota:
// not when it succeeded or failed, nor once the grace period of its
// deletion is over.
func Charged(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		end := pod.DeletionTimestamp.Add(time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second)
		return !now.After(end)
	}
	return true
}

// computeUsage is the quota usage of requests and limits (of a pod, or
// of one container): pods 1, cpu and memory as their requests too.
func computeUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: one()}
	for _, r := range []struct{ name, request, limit corev1.ResourceName }{
		{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	} {
		if q, ok := requests[r.name]; ok {
			out[r.name], out[r.request] = q.DeepCopy(), q.DeepCopy()
		}
		if q, ok := limits[r.name]; ok {
			out[r.limit] = q.DeepCopy()
		}
	}
	for name, q := range requests {
		s := string(name)
		switch {
		case strings.HasPrefix(s, corev1.ResourceHugePagesPrefix):
			out[name] = q.DeepCopy()
			out[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+s)] = q.DeepCopy()
		case strings.Contains(s, "/") && !strings.HasPrefix(s, "kubernetes.io/"):
			// Extended resources are quota'd as requests.<name> alone.
			out[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+s)] = q.DeepCopy()
		}
	}
	return out
}

// podRequired refuses a pod of which a container leaves out the cpu or
// memory request or limit a quota tracks: "must specify limits.cpu for:
// app; requests.cpu for: app,side".
func podRequired(tracked []corev1.ResourceName, obj runtime.Object) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	var required []corev1.ResourceName
	for _, name := range tracked {
		if slices.Contains(mustSpecify, name) {
			required = append(required, name)
		}
	}
	if len(required) == 0 || resourcehelper.IsPodLevelResourcesSet(pod) {
		return nil
	}
	missing := map[corev1.ResourceName][]string{}
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			has := computeUsage(c.Resources.Requests, c.Resources.Limits)
			for _, name := range required {
				if _, ok := has[name]; !ok && !slices.Contains(missing[name], c.Name) {
					missing[name] = append(missing[name], c.Name)
				}
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var parts []string
	for _, name := range required {
		if names := missing[name]; len(names) > 0 {
			slices.Sort(names)
			parts = append(parts, fmt.Sprintf("%s for: %s", name, strings.Join(names, ",")))
		}
	}
	return fmt.Errorf("must specify %s", strings.Join(parts, "; "))
}

func serviceEvaluator() *Evaluator {
	gr := schema.GroupResource{Resource: "services"}
	names := []corev1.ResourceName{corev1.ResourceServices, CountName(gr),
		corev1.ResourceServicesLoadBalancers, corev1.ResourceServicesNodePorts}
	return &Evaluator{
		GroupResource: gr,
		usage: typedUsage(gr, func(svc *corev1.Service, out corev1.ResourceList) {
			ports := int64(len(svc.Spec.Ports))
			nodePorts, lbs := int64(0), int64(0)
			switch svc.Spec.Type {
			case corev1.ServiceTypeNodePort:
				nodePorts = ports
			case corev1.ServiceTypeLoadBalancer:
				lbs = 1
				if svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts {
					nodePorts = ports
				}
			}
			out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(nodePorts, resource.DecimalSI)
			out[corev1.ResourceServicesLoadBalancers] = *resource.NewQuantity(lbs, resource.DecimalSI)
		}),
		tracks: func(name corev1.ResourceName) bool { return slices.Contains(names, name) },
	}
}

// storageClassSuffix names the per-StorageClass resources of claims:
// <class>.storageclass.storage.k8s.io/requests.storage and
// .../persistentvolumeclaims.
const storageClassSuffix = ".storageclass.storage.k8s.io/"

func pvcEvaluator() *Evaluator {
	gr := schema.GroupResource{Resource: "persistentvolumeclaims"}
	return &Evaluator{
		GroupResource: gr,
		usage: typedUsage(gr, func(pvc *corev1.PersistentVolumeClaim, out corev1.ResourceList) {
			class := ""
			if pvc.Spec.StorageClassName != nil {
				class = *pvc.Spec.StorageClassName
			}
			if class != "" {
				out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims))] = one()
			}
			if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
				out[corev1.ResourceRequestsStorage] = q.DeepCopy()
				if class != "" {
					out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourceRequestsStorage))] = q.DeepCopy()
				}
			}
		}),
		tracks: func(name corev1.ResourceName) bool {
			s := string(name)
			return name == corev1.ResourcePersistentVolumeClaims || name == CountName(gr) || name == corev1.ResourceRequestsStorage ||
				strings.HasSuffix(s, storageClassSuffix+string(corev1.ResourceRequestsStorage)) ||
				strings.HasSuffix(s, storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims))
		},
	}
}

// typedUsage is the usage of the objects of gr: their counts, and what
// measure adds for an object of type T (a count alone for any other, as
// the metadata a controller may have of it).
func typedUsage[T runtime.Object](gr schema.GroupResource, measure func(obj T, out corev1.ResourceList)) func(runtime.Object, time.Time) corev1.ResourceList {
	return func(obj runtime.Object, _ time.Time) corev1.ResourceList {
		out := counts(gr)
		if t, ok := obj.(T); ok {
			measure(t, out)
		}
		return out
	}
}
