package registry

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ScaleOf renders obj's /scale subresource.
func ScaleOf(r *Resource, obj runtime.Object) (*autoscalingv1.Scale, error) {
	spec, status, sel := r.Scale.Get(obj)
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	s := &autoscalingv1.Scale{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(), ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp()},
		Spec:       autoscalingv1.ScaleSpec{Replicas: spec},
		Status:     autoscalingv1.ScaleStatus{Replicas: status},
	}
	if sel != nil {
		if s2, err := metav1.LabelSelectorAsSelector(sel); err == nil {
			s.Status.Selector = s2.String()
		}
	}
	return s, nil
}
