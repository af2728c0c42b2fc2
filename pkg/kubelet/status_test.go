package kubelet

import (
	"context"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// endingPod is a provider running one pod whose containers, once
// stopped, end as final says.
type endingPod struct {
	runningPod
	status *corev1.PodStatus
	final  *corev1.PodStatus
}

func (e *endingPod) GetPodStatus(context.Context, string, string) (*corev1.PodStatus, error) {
	return e.status.DeepCopy(), nil
}

func (e *endingPod) DeletePodWithStatus(context.Context, *corev1.Pod) (*corev1.PodStatus, error) {
	return e.final.DeepCopy(), nil
}

func newStatusTestKubelet(t *testing.T, api *corev1.Pod, provider Provider) (*Kubelet, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(api)
	k, err := New(Config{Client: client, NodeName: "n", Provider: provider, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.factory.Core().V1().Pods().Informer().GetIndexer().Add(api); err != nil {
		t.Fatal(err)
	}
	return k, client
}

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1", ResourceVersion: "1"},
		Spec: corev1.PodSpec{NodeName: "n", RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}
}

func runningStatus() *corev1.PodStatus {
	return &corev1.PodStatus{Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
}

// An evicted pod ends Failed, with the exit code its container was
// stopped with and the DisruptionTarget condition the eviction set,
// written before the object is deleted: a Job's podFailurePolicy and
// its finalizer wait for that.
func TestDeletedPodReportsHowItEnded(t *testing.T) {
	api := testPod()
	now := metav1.Now()
	api.DeletionTimestamp = &now
	api.Finalizers = []string{"batch.kubernetes.io/job-tracking"}
	api.Status = *runningStatus()
	api.Status.Conditions = append(api.Status.Conditions, corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"})
	final := &corev1.PodStatus{Phase: corev1.PodRunning,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "c",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}}}}}
	provider := &endingPod{runningPod: runningPod{pod: api.DeepCopy()}, final: final}
	k, client := newStatusTestKubelet(t, api, provider)
	if err := k.syncPod(t.Context(), "ns/p"); err != nil {
		t.Fatal(err)
	}
	var verbs []string
	var written *corev1.Pod
	for _, a := range client.Actions() {
		if a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		verbs = append(verbs, a.GetVerb()+"/"+a.GetSubresource())
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetSubresource() == "status" {
			written = u.GetObject().(*corev1.Pod)
		}
	}
	if len(verbs) != 2 || verbs[0] != "update/status" || verbs[1] != "delete/" {
		t.Fatalf("writes %v, want the status, then the delete", verbs)
	}
	if written.Status.Phase != corev1.PodFailed {
		t.Errorf("phase %s, want Failed", written.Status.Phase)
	}
	if cs := written.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 137 {
		t.Errorf("container statuses %+v, want c terminated with 137", cs)
	}
	if !hasCondition(written.Status.Conditions, corev1.DisruptionTarget) {
		t.Errorf("conditions %+v lost DisruptionTarget", written.Status.Conditions)
	}
}

// Ready waits for every readiness gate's condition to be True, in
// Kubernetes' words, and the kubelet keeps the conditions others wrote.
func TestReadinessGates(t *testing.T) {
	for _, tc := range []struct {
		name      string
		gate      *corev1.ConditionStatus
		wantReady corev1.ConditionStatus
		wantMsg   string
	}{
		{name: "missing", wantReady: corev1.ConditionFalse,
			wantMsg: `corresponding condition of pod readiness gate "example.com/lb" does not exist.`},
		{name: "false", gate: ptr.To(corev1.ConditionFalse), wantReady: corev1.ConditionFalse,
			wantMsg: `the status of pod readiness gate "example.com/lb" is not "True", but False`},
		{name: "true", gate: ptr.To(corev1.ConditionTrue), wantReady: corev1.ConditionTrue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := testPod()
			api.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}}
			api.Status = *runningStatus()
			if tc.gate != nil {
				api.Status.Conditions = append(api.Status.Conditions, corev1.PodCondition{Type: "example.com/lb", Status: *tc.gate})
			}
			provider := &endingPod{runningPod: runningPod{pod: api.DeepCopy()}, status: runningStatus()}
			k, client := newStatusTestKubelet(t, api, provider)
			if err := k.syncPod(t.Context(), "ns/p"); err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().Pods("ns").Get(t.Context(), "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var ready *corev1.PodCondition
			for i, c := range got.Status.Conditions {
				if c.Type == corev1.PodReady {
					ready = &got.Status.Conditions[i]
				}
			}
			if ready == nil || ready.Status != tc.wantReady || ready.Message != tc.wantMsg {
				t.Fatalf("Ready %+v, want %s %q", ready, tc.wantReady, tc.wantMsg)
			}
			if tc.gate != nil && !hasCondition(got.Status.Conditions, "example.com/lb") {
				t.Errorf("the gate's condition was dropped: %+v", got.Status.Conditions)
			}
		})
	}
}

// busyNode runs one other pod, which holds host port 8080.
type busyNode struct {
	noPods
	other   *corev1.Pod
	created int
}

func (b *busyNode) GetPods(context.Context) ([]*corev1.Pod, error) {
	return []*corev1.Pod{b.other.DeepCopy()}, nil
}

func (b *busyNode) CreatePod(context.Context, *corev1.Pod) error { b.created++; return nil }

// A pod bound by name to a node whose host port another pod holds is
// rejected, never started: Failed, reason NodePorts, as Kubernetes'
// kubelet admits pods (a StatefulSet then makes it again).
func TestKubeletRejectsAPodThatDoesNotFit(t *testing.T) {
	withPort := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
		return p
	}
	other := withPort(testPod())
	other.Name, other.UID = "holder", "u0"
	other.Status.Phase = corev1.PodRunning
	api := withPort(testPod())
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourcePods: resource.MustParse("110")}}}
	provider := &busyNode{other: other}
	client := fake.NewClientset(api, node)
	k, err := New(Config{Client: client, NodeName: "n", Provider: provider, AdmitPods: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.factory.Core().V1().Pods().Informer().GetIndexer().Add(api); err != nil {
		t.Fatal(err)
	}
	if err := k.syncPod(t.Context(), "ns/p"); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Pods("ns").Get(t.Context(), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
	if got.Status.Phase != corev1.PodFailed || got.Status.Reason != "NodePorts" || got.Status.Message != want {
		t.Errorf("status %s %q %q, want Failed NodePorts %q", got.Status.Phase, got.Status.Reason, got.Status.Message, want)
	}
	if provider.created != 0 {
		t.Error("the rejected pod was started")
	}
}
