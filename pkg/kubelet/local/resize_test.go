package local

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func resizePod(cpuReq, cpuLim, memReq, memLim string) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	set := func(l corev1.ResourceList, n corev1.ResourceName, v string) {
		if v != "" {
			l[n] = resource.MustParse(v)
		}
	}
	set(r.Requests, corev1.ResourceCPU, cpuReq)
	set(r.Limits, corev1.ResourceCPU, cpuLim)
	set(r.Requests, corev1.ResourceMemory, memReq)
	set(r.Limits, corev1.ResourceMemory, memLim)
	return r
}

func opsWith(ops []string, prefix string) []string {
	var out []string
	for _, o := range ops {
		if strings.HasPrefix(o, prefix) {
			out = append(out, o)
		}
	}
	return out
}

// A resize the container's policy takes in place changes the running
// container's cgroup, the pod's first growing to hold both sizes; the
// status reports the new resources and no restart.
func TestResizeInPlace(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("rs", "c1", "c2")
	pod.Spec.Containers[0].Resources = resizePod("20m", "30m", "35Mi", "45Mi")
	pod.Spec.Containers[1].Resources = resizePod("20m", "30m", "35Mi", "45Mi")
	w := e.worker(pod)
	s := e.sync(w)
	cs := s.ContainerStatuses[0]
	if cs.Resources == nil || len(resourcesDiffer(*cs.Resources, pod.Spec.Containers[0].Resources)) > 0 ||
		cs.AllocatedResources.Cpu().MilliValue() != 20 {
		t.Fatalf("status resources %v allocated %v, want the spec's", cs.Resources, cs.AllocatedResources)
	}

	resized := pod.DeepCopy()
	resized.Generation = 2
	resized.Spec.Containers[0].Resources = resizePod("25m", "40m", "40Mi", "50Mi")
	resized.Spec.Containers[1].Resources = resizePod("15m", "15m", "30Mi", "40Mi")
	e.rt.ops = nil
	w.setPod(resized)
	s = e.sync(w)
	mi := int64(1 << 20)
	grow := pod.DeepCopy()
	grow.Spec.Containers[0].Resources = resizePod("30m", "50m", "40Mi", "60Mi")
	defer func() {
		// A resize that grows the pod grows its cgroup before the
		// container's.
		e.rt.ops = nil
		w.setPod(grow)
		e.sync(w)
		want := []string{
			"update pod cpu=50m/80m mem=" + itoa(int(105*mi)),
			"update c1 cpu=30m/50m mem=" + itoa(int(60*mi)),
			"update c2 cpu=20m/30m mem=" + itoa(int(45*mi)),
		}
		if got := opsWith(e.rt.ops, "update"); !slices.Equal(got, want) {
			t.Errorf("updates growing the pod\n%v\nwant\n%v", got, want)
		}
	}()
	want := []string{
		// The pod's cgroup already holds both sizes (cpu limit 30+30m
		// before, 40+15m after)...
		"update c1 cpu=25m/40m mem=" + itoa(int(50*mi)),
		"update c2 cpu=15m/15m mem=" + itoa(int(40*mi)),
		// ...and takes its new size once the containers have theirs.
		"update pod cpu=40m/55m mem=" + itoa(int(90*mi)),
	}
	if got := opsWith(e.rt.ops, "update"); !slices.Equal(got, want) {
		t.Fatalf("updates\n%v\nwant\n%v", got, want)
	}
	if got := e.rt.running(); !slices.Equal(got, []string{"c1/0", "c2/0"}) {
		t.Errorf("running %v, want no restart", got)
	}
	for i, cs := range s.ContainerStatuses {
		if len(resourcesDiffer(*cs.Resources, resized.Spec.Containers[i].Resources)) > 0 || cs.RestartCount != 0 {
			t.Errorf("%s: resources %v restarts %d", cs.Name, cs.Resources, cs.RestartCount)
		}
	}
	if c := condition(s, corev1.PodResizeInProgress); c != "missing" {
		t.Errorf("PodResizeInProgress %s after the resize", c)
	}
	// Applied once: the next sync changes nothing.
	e.rt.ops = nil
	e.sync(w)
	if got := opsWith(e.rt.ops, "update"); len(got) > 0 {
		t.Errorf("a second sync updated again: %v", got)
	}
}

// A resource whose resizePolicy is RestartContainer restarts the
// container with its new size.
func TestResizeRestartContainer(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("rr", "c1")
	pod.Spec.Containers[0].Resources = resizePod("20m", "20m", "35Mi", "35Mi")
	pod.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{
		{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
		{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer},
	}
	w := e.worker(pod)
	e.sync(w)

	// cpu alone: in place.
	cpu := pod.DeepCopy()
	cpu.Spec.Containers[0].Resources = resizePod("25m", "25m", "35Mi", "35Mi")
	w.setPod(cpu)
	s := e.sync(w)
	if got := e.rt.running(); !slices.Equal(got, []string{"c1/0"}) || s.ContainerStatuses[0].RestartCount != 0 {
		t.Fatalf("running %v after a cpu resize, want no restart", got)
	}
	// memory: restarted, with the new limits.
	mem := cpu.DeepCopy()
	mem.Spec.Containers[0].Resources = resizePod("25m", "25m", "40Mi", "40Mi")
	w.setPod(mem)
	s = e.sync(w)
	if got := e.rt.running(); !slices.Equal(got, []string{"c1/1"}) {
		t.Fatalf("running %v after a memory resize, want c1 restarted", got)
	}
	cs := s.ContainerStatuses[0]
	if cs.RestartCount != 1 || len(resourcesDiffer(*cs.Resources, mem.Spec.Containers[0].Resources)) > 0 {
		t.Errorf("restarts %d resources %v", cs.RestartCount, cs.Resources)
	}
	for id, cfg := range e.rt.configs {
		if cfg.Labels[labelRestartCount] == "1" && cfg.Resources.MemoryLimitBytes != 40<<20 {
			t.Errorf("restarted container %s created with %+v", id, cfg.Resources)
		}
	}
	if c := condition(s, corev1.PodResizeInProgress); c != "missing" {
		t.Errorf("PodResizeInProgress %s after the restart", c)
	}
}

// A resize the runtime refuses leaves PodResizeInProgress with reason
// Error, and is tried again.
func TestResizeFailureInProgress(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("rf", "c1")
	pod.Spec.Containers[0].Resources = resizePod("20m", "", "", "")
	w := e.worker(pod)
	e.sync(w)
	resized := pod.DeepCopy()
	resized.Spec.Containers[0].Resources = resizePod("30m", "", "", "")
	e.rt.updateErr = errors.New("device or resource busy")
	w.setPod(resized)
	// Handed over, not yet synced: the pod reads as resizing already.
	if c := condition(w.snapshot().Status, corev1.PodResizeInProgress); c != "True" {
		t.Fatalf("PodResizeInProgress %s before the worker took the resize, want True", c)
	}
	s := e.sync(w)
	if c := condition(s, corev1.PodResizeInProgress); c != "True:Error" {
		t.Fatalf("PodResizeInProgress %s, want True:Error", c)
	}
	if got := s.ContainerStatuses[0].Resources.Requests.Cpu().MilliValue(); got != 20 {
		t.Errorf("status cpu request %dm while the resize failed, want 20m", got)
	}
	e.rt.updateErr = nil
	s = e.sync(w)
	if c := condition(s, corev1.PodResizeInProgress); c != "missing" {
		t.Errorf("PodResizeInProgress %s once applied", c)
	}
	if got := s.ContainerStatuses[0].Resources.Requests.Cpu().MilliValue(); got != 30 {
		t.Errorf("status cpu request %dm, want 30m", got)
	}
}
