package disruption

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
)

func owned(name string, owner metav1.Object, kind string) *corev1.Pod {
	p := pod(name, true, false)
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind(kind))}
	}
	return p
}

// TestExpectedScale: each controller's replicas count once, a
// Deployment's ReplicaSets as the Deployment, pods without a controller
// not at all, and a pod whose controller is missing is an error.
func TestExpectedScale(t *testing.T) {
	kc := kit.NewContext(fake.NewClientset())
	c, err := New(kc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	meta := func(name, uid string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(uid)}
	}
	dep := &appsv1.Deployment{ObjectMeta: meta("dep", "d1"), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](4)}}
	rsOld := &appsv1.ReplicaSet{ObjectMeta: meta("dep-old", "rs-old"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1)}}
	rsNew := &appsv1.ReplicaSet{ObjectMeta: meta("dep-new", "rs-new"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3)}}
	for _, rs := range []*appsv1.ReplicaSet{rsOld, rsNew} {
		rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(dep, appsv1.SchemeGroupVersion.WithKind("Deployment"))}
	}
	plain := &appsv1.ReplicaSet{ObjectMeta: meta("plain", "rs-plain"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2)}}
	ss := &appsv1.StatefulSet{ObjectMeta: meta("db", "ss1"), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](5)}}
	apps := kc.Factory.Apps().V1()
	for _, add := range []func() error{
		func() error { return apps.Deployments().Informer().GetIndexer().Add(dep) },
		func() error { return apps.ReplicaSets().Informer().GetIndexer().Add(rsOld) },
		func() error { return apps.ReplicaSets().Informer().GetIndexer().Add(rsNew) },
		func() error { return apps.ReplicaSets().Informer().GetIndexer().Add(plain) },
		func() error { return apps.StatefulSets().Informer().GetIndexer().Add(ss) },
	} {
		if err := add(); err != nil {
			t.Fatal(err)
		}
	}
	pdb := budget(nil, nil)
	for _, tc := range []struct {
		name    string
		pods    []*corev1.Pod
		want    int32
		wantErr string
	}{
		{"a plain ReplicaSet once", []*corev1.Pod{owned("a", plain, "ReplicaSet"), owned("b", plain, "ReplicaSet")}, 2, ""},
		{"a Deployment once over its ReplicaSets", []*corev1.Pod{owned("a", rsOld, "ReplicaSet"), owned("b", rsNew, "ReplicaSet"), owned("c", rsNew, "ReplicaSet")}, 4, ""},
		{"all kinds, and a pod of none", []*corev1.Pod{owned("a", rsNew, "ReplicaSet"), owned("b", plain, "ReplicaSet"), owned("c", ss, "StatefulSet"), owned("d", nil, "")}, 11, ""},
		{"a missing controller", []*corev1.Pod{owned("lost", &appsv1.ReplicaSet{ObjectMeta: meta("gone", "x")}, "ReplicaSet")}, 0, `found no controllers for pod "lost"`},
		{"a controller of the same name but another UID", []*corev1.Pod{owned("lost", &appsv1.ReplicaSet{ObjectMeta: meta("plain", "other")}, "ReplicaSet")}, 0, `found no controllers for pod "lost"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.expectedScale(context.Background(), pdb, tc.pods)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("expectedScale = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
