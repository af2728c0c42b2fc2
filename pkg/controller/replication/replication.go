package replication

import (
	"context"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/replicaset"
)

// Kind is what the pods' controller references name.
var Kind = corev1.SchemeGroupVersion.WithKind("ReplicationController")

// New wires the ReplicaSet controller to kc's ReplicationController and
// Pod informers. Nothing runs until Start (kit.Run starts the
// informers). cfg's defaults are Kubernetes' (--concurrent-rc-syncs 5).
func New(kc *kit.Context, cfg replicaset.Config) (*replicaset.Controller, error) {
	return replicaset.NewFor(kc, cfg, Source(kc))
}

// Source is kc's ReplicationControllers seen as ReplicaSets.
func Source(kc *kit.Context) replicaset.Source {
	inf := kc.Factory.Core().V1().ReplicationControllers()
	lister, client := inf.Lister(), kc.Client.CoreV1()
	return replicaset.Source{
		Name: "replicationcontroller", Component: "replication-controller",
		Kind: Kind, Informer: inf.Informer(),
		Get: func(ns, name string) (*appsv1.ReplicaSet, error) {
			return converted(lister.ReplicationControllers(ns).Get(name))
		},
		List: func(ns string) ([]*appsv1.ReplicaSet, error) {
			rcs, err := lister.ReplicationControllers(ns).List(labels.Everything())
			if err != nil {
				return nil, err
			}
			rss := make([]*appsv1.ReplicaSet, len(rcs))
			for i, rc := range rcs {
				rss[i] = ToReplicaSet(rc)
			}
			return rss, nil
		},
		Fetch: func(ctx context.Context, ns, name string) (*appsv1.ReplicaSet, error) {
			return converted(client.ReplicationControllers(ns).Get(ctx, name, metav1.GetOptions{}))
		},
		UpdateStatus: func(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
			return converted(client.ReplicationControllers(rs.Namespace).UpdateStatus(ctx, FromReplicaSet(rs), metav1.UpdateOptions{}))
		},
		NoTerminatingReplicas: true,
	}
}

func converted(rc *corev1.ReplicationController, err error) (*appsv1.ReplicaSet, error) {
	if err != nil {
		return nil, err
	}
	return ToReplicaSet(rc), nil
}

// ToReplicaSet is rc as a ReplicaSet, sharing nothing with rc. It keeps
// rc's kind in its TypeMeta, so that the Events recorded on it name the
// ReplicationController.
func ToReplicaSet(rc *corev1.ReplicationController) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: Kind.GroupVersion().String(), Kind: Kind.Kind},
		ObjectMeta: *rc.ObjectMeta.DeepCopy(),
		Spec: appsv1.ReplicaSetSpec{
			MinReadySeconds: rc.Spec.MinReadySeconds,
			// Never nil: an empty selector then selects everything,
			// which the controller refuses to act on.
			Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(rc.Spec.Selector)},
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas:             rc.Status.Replicas,
			FullyLabeledReplicas: rc.Status.FullyLabeledReplicas,
			ReadyReplicas:        rc.Status.ReadyReplicas,
			AvailableReplicas:    rc.Status.AvailableReplicas,
			ObservedGeneration:   rc.Status.ObservedGeneration,
		},
	}
	if rc.Spec.Replicas != nil {
		rs.Spec.Replicas = ptr.To(*rc.Spec.Replicas)
	}
	if rc.Spec.Template != nil {
		rs.Spec.Template = *rc.Spec.Template.DeepCopy()
	}
	for _, c := range rc.Status.Conditions {
		rs.Status.Conditions = append(rs.Status.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	return rs
}

// FromReplicaSet is the ReplicationController ToReplicaSet made rs of,
// sharing nothing with rs.
func FromReplicaSet(rs *appsv1.ReplicaSet) *corev1.ReplicationController {
	rc := &corev1.ReplicationController{
		ObjectMeta: *rs.ObjectMeta.DeepCopy(),
		Spec: corev1.ReplicationControllerSpec{
			MinReadySeconds: rs.Spec.MinReadySeconds,
			Template:        rs.Spec.Template.DeepCopy(),
		},
		Status: corev1.ReplicationControllerStatus{
			Replicas:             rs.Status.Replicas,
			FullyLabeledReplicas: rs.Status.FullyLabeledReplicas,
			ReadyReplicas:        rs.Status.ReadyReplicas,
			AvailableReplicas:    rs.Status.AvailableReplicas,
			ObservedGeneration:   rs.Status.ObservedGeneration,
		},
	}
	if rs.Spec.Replicas != nil {
		rc.Spec.Replicas = ptr.To(*rs.Spec.Replicas)
	}
	if rs.Spec.Selector != nil {
		rc.Spec.Selector = maps.Clone(rs.Spec.Selector.MatchLabels)
	}
	for _, c := range rs.Status.Conditions {
		rc.Status.Conditions = append(rc.Status.Conditions, corev1.ReplicationControllerCondition{
			Type: corev1.ReplicationControllerConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	return rc
}
