package local_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet/stats"
)

// TestSummaryOfBusyContainer runs a pod whose one container spins and the
// other sleeps: the summary shows the spinner's cpu (capped by its 500m
// limit), next to nothing for the sleeper, and both containers' memory.
func TestSummaryOfBusyContainer(t *testing.T) {
	n := newNode(t)
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "load", UID: types.UID("uid-load-" + randomHex(t, 4))},
		Spec: corev1.PodSpec{
			NodeName: "local-e2e", RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{
				{Name: "spin", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
					Command:   []string{"sh", "-c", "while :; do :; done"},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}},
				{Name: "idle", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"sleep", "3600"}},
			},
		},
	}
	if err := n.p.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	n.waitStatus("default", "load", time.Minute, "the pod to run", func(s *corev1.PodStatus) bool {
		return s.Phase == corev1.PodRunning && len(s.ContainerStatuses) == 2 &&
			s.ContainerStatuses[0].State.Running != nil && s.ContainerStatuses[1].State.Running != nil
	})

	// The first summary samples twice a second apart; the second compares
	// with the first.
	for i, wait := range []time.Duration{0, 3 * time.Second} {
		time.Sleep(wait)
		s, err := n.p.Summary(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var pod *stats.PodStats
		for i := range s.Pods {
			if s.Pods[i].PodRef.Name == "load" {
				pod = &s.Pods[i]
			}
		}
		if pod == nil {
			t.Fatalf("summary %d has no pod load: %+v", i, s.Pods)
		}
		usage := map[string]uint64{}
		for _, c := range pod.Containers {
			if c.CPU == nil || c.CPU.UsageNanoCores == nil || c.Memory == nil || c.Memory.WorkingSetBytes == nil || *c.Memory.WorkingSetBytes == 0 {
				t.Fatalf("summary %d: container %s has no cpu rate or memory: %+v %+v", i, c.Name, c.CPU, c.Memory)
			}
			usage[c.Name] = *c.CPU.UsageNanoCores
		}
		t.Logf("summary %d: spin %dm, idle %dm", i, usage["spin"]/1e6, usage["idle"]/1e6)
		// Under its 500m quota, on a machine others share.
		if usage["spin"] < 100e6 || usage["spin"] > 600e6 {
			t.Errorf("summary %d: spin uses %d nanocores, want about 500m", i, usage["spin"])
		}
		if usage["idle"] > 50e6 {
			t.Errorf("summary %d: idle uses %d nanocores", i, usage["idle"])
		}
		if pod.CPU == nil || pod.CPU.UsageNanoCores == nil || *pod.CPU.UsageNanoCores < usage["spin"]/2 {
			t.Errorf("summary %d: pod cpu %+v, want at least about spin's", i, pod.CPU)
		}
		if s.Node.CPU == nil || s.Node.CPU.UsageNanoCores == nil || *s.Node.CPU.UsageNanoCores < 100e6 ||
			s.Node.Memory == nil || *s.Node.Memory.WorkingSetBytes == 0 {
			t.Errorf("summary %d: node %+v %+v", i, s.Node.CPU, s.Node.Memory)
		}
	}
}
