package podgc

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minik8s/minik8s/pkg/controller/kit"
)

func pod(name, node string, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if deleting {
		p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	}
	return p
}

func TestReconcile(t *testing.T) {
	cases := []struct {
		name       string
		pod        *corev1.Pod
		apiNodes   []string // nodes in the API
		cacheNodes []string // nodes in the informer cache
		gone       bool
		failed     bool
	}{
		{name: "node exists", pod: pod("p", "n1", false), apiNodes: []string{"n1"}, cacheNodes: []string{"n1"}},
		{name: "node missing from the cache only (just joined)", pod: pod("p", "n1", false), apiNodes: []string{"n1"}},
		{name: "node deleted", pod: pod("p", "n1", false), gone: true, failed: true},
		{name: "node deleted, pod terminating", pod: pod("p", "n1", true), gone: true, failed: true},
		{name: "unscheduled", pod: pod("p", "", false)},
		{name: "unscheduled and terminating", pod: pod("p", "", true), gone: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{tc.pod}
			for _, n := range tc.apiNodes {
				objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
			}
			client := fake.NewClientset(objs...)
			var failed bool
			client.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() == "status" {
					p := a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod)
					for _, c := range p.Status.Conditions {
						failed = failed || (p.Status.Phase == corev1.PodFailed && c.Type == corev1.DisruptionTarget && c.Reason == Reason)
					}
				}
				return false, nil, nil
			})
			factory := informers.NewSharedInformerFactory(client, 0)
			clock := clocktesting.NewFakeClock(time.Now())
			kc := &kit.Context{Client: client, Factory: factory, Clock: clock, Logger: slog.New(slog.DiscardHandler)}
			c, err := New(kc, Config{})
			if err != nil {
				t.Fatal(err)
			}
			if err := factory.Core().V1().Pods().Informer().GetIndexer().Add(tc.pod); err != nil {
				t.Fatal(err)
			}
			for _, n := range tc.cacheNodes {
				if err := factory.Core().V1().Nodes().Informer().GetIndexer().Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Reconcile(context.Background(), "ns/p"); err != nil {
				t.Fatal(err)
			}
			if tc.pod.Spec.NodeName != "" {
				// A missing node's pods wait out the quarantine: the node
				// may be registering again.
				if _, err := client.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{}); err != nil || failed {
					t.Fatalf("pod collected before the quarantine ended: %v, failed %v", err, failed)
				}
				clock.Step(DefaultQuarantine)
				if err := c.Reconcile(context.Background(), "ns/p"); err != nil {
					t.Fatal(err)
				}
			}
			_, err = client.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
			if gone := apierrors.IsNotFound(err); gone != tc.gone {
				t.Errorf("pod deleted = %v, want %v", gone, tc.gone)
			}
			if failed != tc.failed {
				t.Errorf("marked Failed with DisruptionTarget = %v, want %v", failed, tc.failed)
			}
		})
	}
}
