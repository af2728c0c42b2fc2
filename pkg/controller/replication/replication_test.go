package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/replicaset"
)

func testRC(replicas int32) *corev1.ReplicationController {
	return &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "rc-uid", Generation: 3, Labels: map[string]string{"app": "web"}},
		Spec: corev1.ReplicationControllerSpec{
			Replicas: ptr.To(replicas), MinReadySeconds: 5, Selector: map[string]string{"app": "web"},
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
			},
		},
		Status: corev1.ReplicationControllerStatus{
			Replicas: 2, FullyLabeledReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 2,
			Conditions: []corev1.ReplicationControllerCondition{{
				Type: corev1.ReplicationControllerReplicaFailure, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(time.Unix(100, 0)), Reason: "FailedCreate", Message: "quota",
			}},
		},
	}
}

func TestConversionRoundTrip(t *testing.T) {
	rc := testRC(3)
	rs := ToReplicaSet(rc)
	if rs.Kind != "ReplicationController" || rs.APIVersion != "v1" {
		t.Errorf("TypeMeta = %+v, want the ReplicationController's", rs.TypeMeta)
	}
	if got := rs.Spec.Selector.MatchLabels; len(got) != 1 || got["app"] != "web" || rs.Spec.Selector.MatchExpressions != nil {
		t.Errorf("selector = %+v, want matchLabels app=web", rs.Spec.Selector)
	}
	back := FromReplicaSet(rs)
	back.TypeMeta = rc.TypeMeta
	if !equality.Semantic.DeepEqual(back, rc) {
		t.Errorf("round trip changed the ReplicationController:\n got %+v\nwant %+v", back, rc)
	}
	// Nothing is shared.
	rs.Spec.Selector.MatchLabels["app"] = "x"
	*rs.Spec.Replicas = 9
	rs.Spec.Template.Labels["app"] = "x"
	if rc.Spec.Selector["app"] != "web" || *rc.Spec.Replicas != 3 || rc.Spec.Template.Labels["app"] != "web" {
		t.Errorf("ToReplicaSet shares fields with its ReplicationController: %+v", rc.Spec)
	}
	// An empty selector stays empty and never becomes a nil one (which
	// would select nothing yet still create pods).
	empty := ToReplicaSet(&corev1.ReplicationController{})
	if empty.Spec.Selector == nil || len(empty.Spec.Selector.MatchLabels) != 0 {
		t.Errorf("empty selector converted to %+v", empty.Spec.Selector)
	}
}

type fixture struct {
	t        *testing.T
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	c        *replicaset.Controller
	recorder *record.FakeRecorder
}

func newFixture(t *testing.T, rc *corev1.ReplicationController) *fixture {
	f := &fixture{t: t, client: fake.NewClientset(rc), recorder: record.NewFakeRecorder(100)}
	// The fake tracker generates no names.
	var names atomic.Int32
	f.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, names.Add(1))
		return false, nil, nil
	})
	f.factory = informers.NewSharedInformerFactory(f.client, 0)
	kc := &kit.Context{Client: f.client, Factory: f.factory, Clock: clocktesting.NewFakeClock(time.Unix(1000, 0)),
		Logger: slog.New(slog.DiscardHandler), Recorder: f.recorder}
	c, err := New(kc, replicaset.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.cacheRC(rc)
	return f
}

func (f *fixture) cacheRC(rc *corev1.ReplicationController) {
	if err := f.factory.Core().V1().ReplicationControllers().Informer().GetIndexer().Update(rc); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) stored() *corev1.ReplicationController {
	rc, err := f.client.CoreV1().ReplicationControllers("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return rc
}

func (f *fixture) statusWrites() int {
	n := 0
	for _, a := range f.client.Actions() {
		if a.Matches("update", "replicationcontrollers") && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

// The ReplicaSet controller, run over ReplicationControllers: pods
// controlled by the ReplicationController, its status written back in
// its own type, once.
func TestCreatesPodsOwnedByTheReplicationController(t *testing.T) {
	rc := testRC(2)
	rc.Status = corev1.ReplicationControllerStatus{}
	f := newFixture(t, rc)
	if err := f.c.Reconcile(context.Background(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	pods, err := f.client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("%d pods created, want 2", len(pods.Items))
	}
	for _, p := range pods.Items {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.Kind != "ReplicationController" || ref.APIVersion != "v1" || ref.Name != "web" || ref.UID != "rc-uid" ||
			!ptr.Deref(ref.BlockOwnerDeletion, false) {
			t.Errorf("pod %s controller = %+v, want the ReplicationController", p.Name, ref)
		}
		if p.Labels["tier"] != "front" || !strings.HasPrefix(p.GenerateName, "web-") {
			t.Errorf("pod not made from the template: %+v", p.ObjectMeta)
		}
	}
	got := f.stored()
	if got.Status.ObservedGeneration != 3 || got.Status.Replicas != 0 {
		t.Errorf("status = %+v, want observedGeneration 3 and no pods seen yet", got.Status)
	}
	// The status read back equals the one computed: no second write.
	f.cacheRC(got)
	writes := f.statusWrites()
	if err := f.c.Reconcile(context.Background(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	if n := f.statusWrites(); n != writes {
		t.Errorf("an unchanged status was written again (%d writes, then %d)", writes, n)
	}
}

// A failed creation (exceeded quota) surfaces as the ReplicaFailure
// condition on the ReplicationController, and goes once creation works.
func TestReplicaFailureCondition(t *testing.T) {
	rc := testRC(1)
	rc.Status = corev1.ReplicationControllerStatus{}
	f := newFixture(t, rc)
	quota := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1"))
	failing := true
	f.client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failing {
			return true, nil, quota
		}
		return false, nil, nil
	})
	if err := f.c.Reconcile(context.Background(), "ns/web"); err == nil {
		t.Fatal("sync succeeded although creation failed")
	}
	got := f.stored()
	conds := got.Status.Conditions
	if len(conds) != 1 || conds[0].Type != corev1.ReplicationControllerReplicaFailure {
		t.Fatalf("conditions = %+v, want ReplicaFailure", conds)
	}
	if c := conds[0]; c.Status != corev1.ConditionTrue || c.Reason != "FailedCreate" || !strings.Contains(c.Message, "exceeded quota") {
		t.Fatalf("conditions = %+v, want ReplicaFailure True FailedCreate about the quota", got.Status.Conditions)
	}
	if ev := <-f.recorder.Events; !strings.HasPrefix(ev, "Warning FailedCreate") {
		t.Errorf("event %q, want Warning FailedCreate", ev)
	}

	failing = false
	f.cacheRC(got)
	if err := f.c.Reconcile(context.Background(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	if conds := f.stored().Status.Conditions; len(conds) != 0 {
		t.Errorf("conditions after a successful creation = %+v, want none", conds)
	}
}
