package kit

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// PodServicesHandler is the Pod event handler of a controller that keeps
// something per Service (Endpoints, EndpointSlices): on every add,
// update and delete of a Pod it calls enqueue with each Service in the
// Pod's namespace whose selector matches the Pod's labels, or on an
// update its old labels. Resyncs (the same resourceVersion) are skipped.
func PodServicesHandler(services corelisters.ServiceLister, enqueue func(*corev1.Service)) cache.ResourceEventHandlerFuncs {
	changed := func(old, cur any) {
		pod, ok := loop.As[*corev1.Pod](cur)
		if !ok {
			return
		}
		var oldLabels labels.Set
		if o, ok := old.(*corev1.Pod); ok {
			oldLabels = o.Labels
		}
		svcs, err := services.Services(pod.Namespace).List(labels.Everything())
		if err != nil {
			return
		}
		for _, svc := range svcs {
			if len(svc.Spec.Selector) == 0 {
				continue
			}
			sel := labels.SelectorFromValidatedSet(svc.Spec.Selector)
			if sel.Matches(labels.Set(pod.Labels)) || (oldLabels != nil && sel.Matches(oldLabels)) {
				enqueue(svc)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { changed(nil, obj) },
		UpdateFunc: func(old, cur any) {
			if old.(*corev1.Pod).ResourceVersion != cur.(*corev1.Pod).ResourceVersion {
				changed(old, cur)
			}
		},
		DeleteFunc: func(obj any) { changed(nil, obj) },
	}
}

// ServiceSlicesHandler is the handler of EndpointSlice events for a
// controller that manages slices labelled managed-by managedBy: it
// queues the namespace/name of the Service a changed slice belongs to,
// so a change by anyone else is undone and the cache catching up with
// the controller's own writes lets a waiting sync go on.
func ServiceSlicesHandler(managedBy string, queue workqueue.TypedInterface[string]) cache.ResourceEventHandlerFuncs {
	changed := func(obj any) {
		s, ok := loop.As[*discoveryv1.EndpointSlice](obj)
		if !ok || s.Labels[discoveryv1.LabelManagedBy] != managedBy {
			return
		}
		if svc := s.Labels[discoveryv1.LabelServiceName]; svc != "" {
			queue.Add(s.Namespace + "/" + svc)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, cur any) { changed(cur) },
		DeleteFunc: changed,
	}
}
