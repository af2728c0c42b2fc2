package kinds

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

var gkPod = schema.GroupKind{Kind: "Pod"}

func running() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: created}}
}

func waiting(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

func terminated(reason string, code int32) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code}}
}

func pod(containers int, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: objMeta("web"), Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for i := 0; i < containers; i++ {
		name := string(rune('a' + i))
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: name, Image: "nginx"})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses,
			corev1.ContainerStatus{Name: name, Ready: true, State: running()})
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func TestPodCells(t *testing.T) {
	always := ptr.To(corev1.ContainerRestartPolicyAlways)
	runCellCases(t, []cellCase{
		{
			name: "running ready",
			gk:   gkPod,
			obj:  pod(1, nil),
			want: map[string]interface{}{"Name": "web", "Ready": "1/1", "Status": "Running", "Restarts": "0", "Age": "10m"},
		},
		{
			name: "one of two ready, restarted",
			gk:   gkPod,
			obj: pod(2, func(p *corev1.Pod) {
				cs := &p.Status.ContainerStatuses[1]
				cs.Ready = false
				cs.RestartCount = 3
				cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: ago(5 * time.Minute)}
			}),
			want: map[string]interface{}{"Ready": "1/2", "Status": "Running", "Restarts": "3 (5m ago)"},
		},
		{
			name: "restarts without termination time",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].RestartCount = 2
			}),
			want: map[string]interface{}{"Restarts": "2"},
		},
		{
			name: "crash loop",
			gk:   gkPod,
			obj: pod(2, func(p *corev1.Pod) {
				cs := &p.Status.ContainerStatuses[0]
				cs.Ready, cs.State, cs.RestartCount = false, waiting("CrashLoopBackOff"), 4
				cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{FinishedAt: ago(90 * time.Second)}
			}),
			want: map[string]interface{}{"Ready": "1/2", "Status": "CrashLoopBackOff", "Restarts": "4 (90s ago)"},
		},
		{
			name: "pending image pull",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses[0].Ready = false
				p.Status.ContainerStatuses[0].State = waiting("ContainerCreating")
			}),
			want: map[string]interface{}{"Ready": "0/1", "Status": "ContainerCreating"},
		},
		{
			name: "terminated without reason",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].Ready = false
				p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Signal: 9}}
			}),
			want: map[string]interface{}{"Status": "Signal:9"},
		},
		{
			name: "succeeded",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodSucceeded
				p.Status.ContainerStatuses[0].Ready = false
				p.Status.ContainerStatuses[0].State = terminated("Completed", 0)
			}),
			want: map[string]interface{}{"Ready": "0/1", "Status": "Completed"},
		},
		{
			name: "completed container beside running one",
			gk:   gkPod,
			obj: pod(2, func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].Ready = false
				p.Status.ContainerStatuses[0].State = terminated("Completed", 0)
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			}),
			want: map[string]interface{}{"Ready": "1/2", "Status": "Running"},
		},
		{
			name: "completed container beside running one, pod not ready",
			gk:   gkPod,
			obj: pod(2, func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].Ready = false
				p.Status.ContainerStatuses[0].State = terminated("Completed", 0)
			}),
			want: map[string]interface{}{"Status": "NotReady"},
		},
		{
			name: "terminating",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.DeletionTimestamp = ptr.To(ago(time.Second))
			}),
			want: map[string]interface{}{"Status": "Terminating"},
		},
		{
			name: "deleted succeeded pod keeps its status",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.DeletionTimestamp = ptr.To(ago(time.Second))
				p.Status.Phase = corev1.PodSucceeded
				p.Status.ContainerStatuses[0].State = terminated("Completed", 0)
			}),
			want: map[string]interface{}{"Status": "Completed"},
		},
		{
			name: "node lost",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.DeletionTimestamp = ptr.To(ago(time.Second))
				p.Status.Reason = "NodeLost"
			}),
			want: map[string]interface{}{"Status": "Unknown"},
		},
		{
			name: "evicted",
			gk:   gkPod,
			obj: &corev1.Pod{
				ObjectMeta: objMeta("web"),
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
				Status:     corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"},
			},
			want: map[string]interface{}{"Ready": "0/1", "Status": "Evicted"},
		},
		{
			name: "scheduling gated",
			gk:   gkPod,
			obj: &corev1.Pod{
				ObjectMeta: objMeta("web"),
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
					{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated},
				}},
			},
			want: map[string]interface{}{"Status": "SchedulingGated", "IP": "<none>", "Node": "<none>"},
		},
		{
			name: "first init container running",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Spec.InitContainers = []corev1.Container{{Name: "i1"}, {Name: "i2"}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{
					{Name: "i1", State: running()},
					{Name: "i2", State: waiting("PodInitializing")},
				}
				p.Status.ContainerStatuses[0].Ready = false
				p.Status.ContainerStatuses[0].State = waiting("PodInitializing")
			}),
			want: map[string]interface{}{"Ready": "0/1", "Status": "Init:0/2"},
		},
		{
			name: "second init container running",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Spec.InitContainers = []corev1.Container{{Name: "i1"}, {Name: "i2"}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{
					{Name: "i1", State: terminated("Completed", 0)},
					{Name: "i2", State: running()},
				}
			}),
			want: map[string]interface{}{"Status": "Init:1/2"},
		},
		{
			name: "init container crash loop",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Spec.InitContainers = []corev1.Container{{Name: "i1"}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{
					{Name: "i1", State: waiting("CrashLoopBackOff"), RestartCount: 2,
						LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: ago(time.Minute)}}},
				}
				p.Status.ContainerStatuses[0].Ready = false
				p.Status.ContainerStatuses[0].State = waiting("PodInitializing")
			}),
			want: map[string]interface{}{"Ready": "0/1", "Status": "Init:CrashLoopBackOff", "Restarts": "2 (60s ago)"},
		},
		{
			name: "init container failed",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Spec.InitContainers = []corev1.Container{{Name: "i1"}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i1", State: terminated("Error", 1)}}
			}),
			want: map[string]interface{}{"Status": "Init:Error"},
		},
		{
			name: "init container exit code",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Spec.InitContainers = []corev1.Container{{Name: "i1"}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i1", State: terminated("", 2)}}
			}),
			want: map[string]interface{}{"Status": "Init:ExitCode:2"},
		},
		{
			name: "sidecar counts as container",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: always}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{
					{Name: "proxy", Ready: true, Started: ptr.To(true), State: running(), RestartCount: 1,
						LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: ago(2 * time.Hour)}}},
				}
			}),
			want: map[string]interface{}{"Ready": "2/2", "Status": "Running", "Restarts": "1 (120m ago)"},
		},
		{
			name: "wide columns",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Spec.NodeName = "node-1"
				p.Status.PodIP = "10.244.1.5"
				p.Status.NominatedNodeName = "node-2"
				p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/a"}, {ConditionType: "example.com/b"}}
				p.Status.Conditions = []corev1.PodCondition{
					{Type: "example.com/a", Status: corev1.ConditionTrue},
					{Type: "example.com/b", Status: corev1.ConditionFalse},
				}
			}),
			want: map[string]interface{}{"IP": "10.244.1.5", "Node": "node-1", "Nominated Node": "node-2", "Readiness Gates": "1/2"},
		},
		{
			name: "podIPs preferred",
			gk:   gkPod,
			obj: pod(1, func(p *corev1.Pod) {
				p.Status.PodIP = "10.0.0.1"
				p.Status.PodIPs = []corev1.PodIP{{IP: "fd00::1"}, {IP: "10.0.0.1"}}
			}),
			want: map[string]interface{}{"IP": "fd00::1", "Nominated Node": "<none>", "Readiness Gates": "<none>"},
		},
	})
}
