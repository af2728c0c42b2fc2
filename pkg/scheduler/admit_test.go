package scheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A kubelet refuses a pod bound to its node that does not fit beside the
// pods it runs, with the kubelet's reasons and messages.
func TestAdmitOnNode(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"disk": "ssd"}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("3")}}}
	pod := func(name string, mutate func(*v1.PodSpec)) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
			Spec: v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "c", Image: "i"}}}}
		if mutate != nil {
			mutate(&p.Spec)
		}
		return p
	}
	hostPort := func(port int32, proto v1.Protocol) func(*v1.PodSpec) {
		return func(s *v1.PodSpec) {
			s.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: port, HostPort: port, Protocol: proto}}
		}
	}
	cpu := func(q string) func(*v1.PodSpec) {
		return func(s *v1.PodSpec) {
			s.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)}
		}
	}
	for _, tc := range []struct {
		name                string
		pod                 *v1.Pod
		running             []*v1.Pod
		wantReason, wantMsg string
	}{
		{name: "fits", pod: pod("a", hostPort(8080, v1.ProtocolTCP)), running: []*v1.Pod{pod("b", hostPort(8080, v1.ProtocolUDP))}},
		{name: "host port taken", pod: pod("a", hostPort(8080, v1.ProtocolTCP)), running: []*v1.Pod{pod("b", hostPort(8080, v1.ProtocolTCP))},
			wantReason: "NodePorts", wantMsg: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		{name: "cpu", pod: pod("a", cpu("1500m")), running: []*v1.Pod{pod("b", cpu("1"))},
			wantReason: "OutOfcpu", wantMsg: "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"},
		{name: "pods", pod: pod("a", nil), running: []*v1.Pod{pod("b", nil), pod("c", nil), pod("d", nil)},
			wantReason: "OutOfpods", wantMsg: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
		{name: "node selector", pod: pod("a", func(s *v1.PodSpec) { s.NodeSelector = map[string]string{"disk": "hdd"} }),
			wantReason: "NodeAffinity", wantMsg: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg := AdmitOnNode(tc.pod, node, tc.running)
			if reason != tc.wantReason || msg != tc.wantMsg {
				t.Errorf("got %q %q, want %q %q", reason, msg, tc.wantReason, tc.wantMsg)
			}
		})
	}
}
