package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/controller/kit"
)

// Source is the kind a Controller keeps replicas of, seen as ReplicaSets:
// apps/v1 ReplicaSets themselves (ReplicaSets), or another kind converted
// to and from ReplicaSets at this boundary, as Kubernetes runs its
// ReplicationManager (package replication). The controller reads and
// writes that kind only through a Source.
type Source struct {
	// Name names the controller's queue and its log attribute
	// ("replicaset"); Component is the source of its Events
	// ("replicaset-controller").
	Name, Component string
	// Kind is what the pods' controller references name.
	Kind schema.GroupVersionKind
	// Informer is the kind's shared informer; the controller only queues
	// the keys of what it reports.
	Informer cache.SharedIndexInformer
	// Get and List read the informer's cache.
	Get  func(namespace, name string) (*appsv1.ReplicaSet, error)
	List func(namespace string) ([]*appsv1.ReplicaSet, error)
	// Fetch reads one object from the API (before an adoption, and to
	// retry a status write).
	Fetch func(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error)
	// UpdateStatus writes rs's status through the status subresource and
	// returns the object as stored.
	UpdateStatus func(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	// NoTerminatingReplicas is set for kinds without
	// status.terminatingReplicas (it is then left unset, so that the status
	// read back equals the status written).
	NoTerminatingReplicas bool
}

// ReplicaSets is the Source of apps/v1 ReplicaSets, from kc's informers
// and client.
func ReplicaSets(kc *kit.Context) Source {
	inf := kc.Factory.Apps().V1().ReplicaSets()
	lister, client := inf.Lister(), kc.Client.AppsV1()
	return Source{
		Name: "replicaset", Component: "replicaset-controller",
		Kind:     appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
		Informer: inf.Informer(),
		Get: func(ns, name string) (*appsv1.ReplicaSet, error) {
			return lister.ReplicaSets(ns).Get(name)
		},
		List: func(ns string) ([]*appsv1.ReplicaSet, error) {
			return lister.ReplicaSets(ns).List(labels.Everything())
		},
		Fetch: func(ctx context.Context, ns, name string) (*appsv1.ReplicaSet, error) {
			return client.ReplicaSets(ns).Get(ctx, name, metav1.GetOptions{})
		},
		UpdateStatus: func(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
			return client.ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
		},
	}
}
