package local

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

func TestBuildStatus(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 500, time.UTC)
	run := func(id string, attempt int) runtime.ContainerStatus {
		return runtime.ContainerStatus{ID: id, State: runtime.StateRunning, StartedAt: t0,
			Labels: map[string]string{labelRestartCount: itoa(attempt)}}
	}
	exit := func(id string, attempt, code int) runtime.ContainerStatus {
		return runtime.ContainerStatus{ID: id, State: runtime.StateExited, ExitCode: code, StartedAt: t0, FinishedAt: t0.Add(time.Second),
			Labels: map[string]string{labelRestartCount: itoa(attempt)}}
	}
	oom := exit("oom", 0, 137)
	oom.Reason = "OOMKilled"
	type want struct {
		phase                     corev1.PodPhase
		initialized, ready        string
		states                    []string
		readyMessage, initMessage string
	}
	tests := []struct {
		name      string
		policy    corev1.RestartPolicy
		init      []string
		instances map[string][]runtime.ContainerStatus
		waiting   map[string]waitingState
		probes    map[string]probeView
		readiness bool // c1 has a readiness probe
		terminal  bool
		want      want
	}{
		{name: "nothing yet", want: want{phase: corev1.PodPending, initialized: "True", ready: "False:ContainersNotReady",
			states: []string{"waiting:ContainerCreating", "waiting:ContainerCreating"}, readyMessage: "containers with unready status: [c1 c2]"}},
		{name: "one running", instances: map[string][]runtime.ContainerStatus{"c1": {run("a", 0)}},
			want: want{phase: corev1.PodPending, initialized: "True", ready: "False:ContainersNotReady",
				states: []string{"running", "waiting:ContainerCreating"}, readyMessage: "containers with unready status: [c2]"}},
		{name: "all running", instances: map[string][]runtime.ContainerStatus{"c1": {run("a", 0)}, "c2": {run("b", 0)}},
			want: want{phase: corev1.PodRunning, initialized: "True", ready: "True", states: []string{"running", "running"}}},
		{name: "not ready by probe", readiness: true,
			instances: map[string][]runtime.ContainerStatus{"c1": {run("a", 0)}, "c2": {run("b", 0)}},
			probes:    map[string]probeView{"a": {started: true, ready: false}},
			want: want{phase: corev1.PodRunning, initialized: "True", ready: "False:ContainersNotReady",
				states: []string{"running", "running"}, readyMessage: "containers with unready status: [c1]"}},
		{name: "crash looping", instances: map[string][]runtime.ContainerStatus{"c1": {exit("a", 3, 1)}, "c2": {run("b", 0)}},
			waiting: map[string]waitingState{"c1": {"CrashLoopBackOff", "back-off"}},
			want: want{phase: corev1.PodRunning, initialized: "True", ready: "False:ContainersNotReady",
				states: []string{"waiting:CrashLoopBackOff", "running"}, readyMessage: "containers with unready status: [c1]"}},
		{name: "always, all exited", instances: map[string][]runtime.ContainerStatus{"c1": {exit("a", 0, 0)}, "c2": {exit("b", 0, 1)}},
			want: want{phase: corev1.PodRunning, initialized: "True", ready: "False:ContainersNotReady",
				states: []string{"terminated:Completed:0", "terminated:Error:1"}, readyMessage: "containers with unready status: [c1 c2]"}},
		{name: "never, one failed", policy: corev1.RestartPolicyNever,
			instances: map[string][]runtime.ContainerStatus{"c1": {exit("a", 0, 0)}, "c2": {oom}},
			want: want{phase: corev1.PodFailed, initialized: "True", ready: "False:PodFailed",
				states: []string{"terminated:Completed:0", "terminated:OOMKilled:137"}}},
		{name: "never, one still running", policy: corev1.RestartPolicyNever,
			instances: map[string][]runtime.ContainerStatus{"c1": {exit("a", 0, 3)}, "c2": {run("b", 0)}},
			want: want{phase: corev1.PodRunning, initialized: "True", ready: "False:ContainersNotReady",
				states: []string{"terminated:Error:3", "running"}, readyMessage: "containers with unready status: [c1]"}},
		{name: "onFailure, all succeeded", policy: corev1.RestartPolicyOnFailure,
			instances: map[string][]runtime.ContainerStatus{"c1": {exit("a", 0, 0)}, "c2": {exit("b", 2, 0)}},
			want: want{phase: corev1.PodSucceeded, initialized: "True:PodCompleted", ready: "False:PodCompleted",
				states: []string{"terminated:Completed:0", "terminated:Completed:0"}}},
		{name: "onFailure, one failed", policy: corev1.RestartPolicyOnFailure,
			instances: map[string][]runtime.ContainerStatus{"c1": {exit("a", 0, 0)}, "c2": {exit("b", 0, 1)}},
			waiting:   map[string]waitingState{"c2": {"CrashLoopBackOff", ""}},
			want: want{phase: corev1.PodRunning, initialized: "True", ready: "False:ContainersNotReady",
				states: []string{"terminated:Completed:0", "waiting:CrashLoopBackOff"}, readyMessage: "containers with unready status: [c1 c2]"}},
		{name: "terminal always pod", terminal: true,
			instances: map[string][]runtime.ContainerStatus{"c1": {exit("a", 0, 0)}, "c2": {exit("b", 0, 0)}},
			want: want{phase: corev1.PodSucceeded, initialized: "True:PodCompleted", ready: "False:PodCompleted",
				states: []string{"terminated:Completed:0", "terminated:Completed:0"}}},
		{name: "init running", init: []string{"i1", "i2"}, instances: map[string][]runtime.ContainerStatus{"i1": {run("i", 0)}},
			want: want{phase: corev1.PodPending, initialized: "False:ContainersNotInitialized", ready: "False:ContainersNotReady",
				states:      []string{"running", "waiting:PodInitializing", "waiting:PodInitializing", "waiting:PodInitializing"},
				initMessage: "containers with incomplete status: [i1 i2]", readyMessage: "containers with unready status: [c1 c2]"}},
		{name: "init failed, never", policy: corev1.RestartPolicyNever, init: []string{"i1"},
			instances: map[string][]runtime.ContainerStatus{"i1": {exit("i", 0, 1)}},
			want: want{phase: corev1.PodFailed, initialized: "False:ContainersNotInitialized", ready: "False:PodFailed",
				states:      []string{"terminated:Error:1", "waiting:PodInitializing", "waiting:PodInitializing"},
				initMessage: "containers with incomplete status: [i1]"}},
		{name: "init crash looping", init: []string{"i1"},
			instances: map[string][]runtime.ContainerStatus{"i1": {exit("i", 1, 1)}},
			waiting:   map[string]waitingState{"i1": {"CrashLoopBackOff", ""}},
			want: want{phase: corev1.PodPending, initialized: "False:ContainersNotInitialized", ready: "False:ContainersNotReady",
				states:      []string{"waiting:CrashLoopBackOff", "waiting:PodInitializing", "waiting:PodInitializing"},
				initMessage: "containers with incomplete status: [i1]", readyMessage: "containers with unready status: [c1 c2]"}},
		{name: "init done", init: []string{"i1"},
			instances: map[string][]runtime.ContainerStatus{"i1": {exit("i", 0, 0)}, "c1": {run("a", 0)}, "c2": {run("b", 0)}},
			want: want{phase: corev1.PodRunning, initialized: "True", ready: "True",
				states: []string{"terminated:Completed:0", "running", "running"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("p", "c1", "c2")
			if tc.policy != "" {
				pod.Spec.RestartPolicy = tc.policy
			}
			for _, n := range tc.init {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox"})
			}
			if tc.readiness {
				pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{}
			}
			s := buildStatus(statusInput{
				pod: pod, now: metav1.NewTime(t0), hostIP: "192.168.1.10", podIP: "10.244.0.5", startTime: metav1.NewTime(t0),
				podReady: true, terminal: tc.terminal, instances: tc.instances, waiting: tc.waiting, probes: tc.probes,
			})
			var states []string
			for _, cs := range append(s.InitContainerStatuses, s.ContainerStatuses...) {
				states = append(states, state(cs))
			}
			got := want{phase: s.Phase, initialized: condition(s, corev1.PodInitialized), ready: condition(s, corev1.PodReady), states: states}
			for _, c := range s.Conditions {
				switch c.Type {
				case corev1.PodReady:
					got.readyMessage = c.Message
				case corev1.PodInitialized:
					got.initMessage = c.Message
				}
			}
			if condition(s, corev1.ContainersReady) != got.ready {
				t.Errorf("ContainersReady %s != Ready %s", condition(s, corev1.ContainersReady), got.ready)
			}
			if got.phase != tc.want.phase || got.initialized != tc.want.initialized || got.ready != tc.want.ready ||
				got.readyMessage != tc.want.readyMessage || got.initMessage != tc.want.initMessage || len(states) != len(tc.want.states) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
			for i := range states {
				if states[i] != tc.want.states[i] {
					t.Errorf("states %v, want %v", states, tc.want.states)
				}
			}
			if s.StartTime.Nanosecond() != 0 {
				t.Errorf("times are not cut to the second: %v", s.StartTime)
			}
		})
	}
}

func TestConditionTransitionTimes(t *testing.T) {
	pod := testPod("p", "c")
	t0 := metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	in := statusInput{pod: pod, now: t0, podReady: true}
	s1 := buildStatus(in)
	in.prev, in.now = s1, metav1.NewTime(t0.Add(time.Minute))
	in.instances = map[string][]runtime.ContainerStatus{"c": {{ID: "a", State: runtime.StateRunning}}}
	s2 := buildStatus(in)
	for _, c := range s2.Conditions {
		want := t0
		if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			want = in.now
		}
		if !c.LastTransitionTime.Equal(&want) {
			t.Errorf("%s changed at %v, want %v", c.Type, c.LastTransitionTime, want)
		}
	}
}

func TestImageID(t *testing.T) {
	for in, want := range map[string]string{
		"docker.io/library/busybox:latest@sha256:abc": "docker.io/library/busybox@sha256:abc",
		"registry:5000/app:v1@sha256:abc":             "registry:5000/app@sha256:abc",
		"registry:5000/app@sha256:abc":                "registry:5000/app@sha256:abc",
		"":                                            "",
	} {
		if got := imageID(runtime.ContainerStatus{ImageID: in}); got != want {
			t.Errorf("imageID(%q) = %q, want %q", in, got, want)
		}
	}
}
