package local_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestInPlaceResize resizes a running pod's two containers: c1 takes its
// new cpu and memory in place (the cgroup files it reads change, it keeps
// running), c2, whose memory resizePolicy is RestartContainer, is
// restarted with its new memory limit; both report what they run with.
func TestInPlaceResize(t *testing.T) {
	n := newNode(t)
	ctx := context.Background()
	res := func(cpuReq, cpuLim, mem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuReq), corev1.ResourceMemory: resource.MustParse(mem)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLim), corev1.ResourceMemory: resource.MustParse(mem)},
		}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "resize", UID: types.UID("uid-resize-" + randomHex(t, 4)), Generation: 1},
		Spec: corev1.PodSpec{
			NodeName: "local-e2e", RestartPolicy: corev1.RestartPolicyOnFailure, TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{
				{Name: "c1", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"sleep", "3600"},
					Resources: res("20m", "30m", "35Mi")},
				{Name: "c2", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"sleep", "3600"},
					Resources:    res("20m", "30m", "35Mi"),
					ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}},
			},
		},
	}
	if err := n.p.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	running := func(s *corev1.PodStatus) bool {
		return s.Phase == corev1.PodRunning && len(s.ContainerStatuses) == 2 &&
			s.ContainerStatuses[0].State.Running != nil && s.ContainerStatuses[1].State.Running != nil
	}
	n.waitStatus("default", "resize", time.Minute, "the pod to run", running)
	cgroup := func(container, file string) string {
		out, code := n.exec("default", "resize", container, "head", "-n", "1", "/sys/fs/cgroup/"+file)
		if code != 0 {
			t.Fatalf("reading %s in %s: exit %d: %s", file, container, code, out)
		}
		return strings.TrimSpace(out)
	}
	want := func(container, file, value string) {
		t.Helper()
		if got := cgroup(container, file); got != value {
			t.Errorf("%s: %s = %s, want %s", container, file, got, value)
		}
	}
	want("c1", "cpu/cpu.cfs_quota_us", "3000")
	want("c1", "memory/memory.limit_in_bytes", "36700160")

	resized := pod.DeepCopy()
	resized.Generation = 2
	resized.Spec.Containers[0].Resources = res("25m", "45m", "40Mi")
	resized.Spec.Containers[1].Resources = res("25m", "35m", "50Mi")
	if err := n.p.UpdatePod(ctx, resized); err != nil {
		t.Fatal(err)
	}
	s := n.waitStatus("default", "resize", time.Minute, "the resize to be done", func(s *corev1.PodStatus) bool {
		if !running(s) || hasCondition(s, corev1.PodResizeInProgress) {
			return false
		}
		for i, cs := range s.ContainerStatuses {
			want := resized.Spec.Containers[i].Resources
			if cs.Resources == nil || cs.Resources.Limits.Memory().Cmp(*want.Limits.Memory()) != 0 || cs.Resources.Requests.Cpu().Cmp(*want.Requests.Cpu()) != 0 {
				return false
			}
		}
		return true
	})
	if r := s.ContainerStatuses; r[0].RestartCount != 0 || r[1].RestartCount != 1 {
		t.Errorf("restarts c1 %d c2 %d, want 0 and 1", r[0].RestartCount, r[1].RestartCount)
	}
	want("c1", "cpu/cpu.shares", "25")
	want("c1", "cpu/cpu.cfs_quota_us", "4500")
	want("c1", "memory/memory.limit_in_bytes", "41943040")
	want("c2", "cpu/cpu.cfs_quota_us", "3500")
	want("c2", "memory/memory.limit_in_bytes", "52428800")

	// And back: the pod's cgroup shrinks after its containers'.
	back := pod.DeepCopy()
	back.Generation = 3
	if err := n.p.UpdatePod(ctx, back); err != nil {
		t.Fatal(err)
	}
	n.waitStatus("default", "resize", time.Minute, "the rollback to be done", func(s *corev1.PodStatus) bool {
		return running(s) && !hasCondition(s, corev1.PodResizeInProgress) && s.ContainerStatuses[1].RestartCount == 2 &&
			s.ContainerStatuses[0].Resources.Limits.Cpu().MilliValue() == 30
	})
	want("c1", "cpu/cpu.cfs_quota_us", "3000")
	want("c1", "memory/memory.limit_in_bytes", "36700160")
	want("c2", "memory/memory.limit_in_bytes", "36700160")
}
