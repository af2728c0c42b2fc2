package local

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

// In-place pod resize (InPlacePodVerticalScaling): a container runs with
// the requests and limits recorded in its labelResources. When the spec's
// differ (pods/resize changed them), resize applies the cpu and memory to
// the running container through the runtime, or, where the container's
// resizePolicy says RestartContainer for a resource that changed,
// syncContainer restarts it with the new ones. The pod's cgroup first
// grows to cover both the old and the new sizes, and takes the new size
// once every container has it.

// encodeResources is the labelResources value: requests and limits.
func encodeResources(r corev1.ResourceRequirements) string {
	b, _ := json.Marshal(corev1.ResourceRequirements{Requests: r.Requests, Limits: r.Limits})
	return string(b)
}

// appliedResources are what a container instance runs with, and whether
// that is known (a container created before resizes were tracked is not).
func (w *podWorker) appliedResources(inst runtime.ContainerStatus) (corev1.ResourceRequirements, bool) {
	if r, ok := w.applied[inst.ID]; ok {
		return r, true
	}
	var r corev1.ResourceRequirements
	s, ok := inst.Labels[labelResources]
	if !ok || json.Unmarshal([]byte(s), &r) != nil {
		return r, false
	}
	return r, true
}

// resizeResources are the resources a resize acts on.
var resizeResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// resourcesDiffer names the cpu and memory resources whose request or
// limit differs between a and b.
func resourcesDiffer(a, b corev1.ResourceRequirements) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, n := range resizeResources {
		for _, l := range [][2]corev1.ResourceList{{a.Requests, b.Requests}, {a.Limits, b.Limits}} {
			x, okx := l[0][n]
			y, oky := l[1][n]
			if okx != oky || x.Cmp(y) != 0 {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

// resizeRestarts says whether changing these resources restarts c, as
// its resizePolicy says (NotRequired by default).
func resizeRestarts(c *corev1.Container, changed []corev1.ResourceName) bool {
	for _, n := range changed {
		for _, p := range c.ResizePolicy {
			if p.ResourceName == n && p.RestartPolicy == corev1.RestartContainer {
				return true
			}
		}
	}
	return false
}

// resizableContainers are the pod's app and sidecar containers.
func resizableContainers(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; isRestartable(c) {
			out = append(out, c)
		}
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// resizeRestartNeeded: the running instance inst of c must restart to
// take its new resources.
func (w *podWorker) resizeRestartNeeded(c *corev1.Container, inst runtime.ContainerStatus) bool {
	have, ok := w.appliedResources(inst)
	return ok && resizeRestarts(c, resourcesDiffer(have, c.Resources))
}

// resize applies the spec's resources to the running containers that
// can take them in place, and sizes the pod's cgroup. It reports whether
// it changed anything.
func (w *podWorker) resize(ctx context.Context, pod *corev1.Pod, sb *runtime.ContainerStatus) bool {
	updater, ok := w.p.rt.(runtime.ResourceUpdater)
	if !ok {
		return false
	}
	// What the pod runs with now, and the containers to resize in place.
	now := pod.DeepCopy()
	type change struct {
		c  *corev1.Container
		id string
	}
	var inPlace []change
	pending := false
	for _, c := range resizableContainers(now) {
		insts := w.obs.instances(sb.ID, c.Name)
		if len(insts) == 0 || insts[0].State != runtime.StateRunning {
			continue
		}
		have, ok := w.appliedResources(insts[0])
		if !ok {
			continue
		}
		changed := resourcesDiffer(have, c.Resources)
		if len(changed) == 0 {
			delete(w.resizeErr, c.Name)
			continue
		}
		if resizeRestarts(c, changed) {
			pending = true
		} else {
			inPlace = append(inPlace, change{c: findContainer(pod, c.Name), id: insts[0].ID})
		}
		c.Resources = have
	}
	want := podResources(pod)
	if want == nil {
		want = &runtime.Resources{}
	}
	if len(inPlace) == 0 && !pending && w.podCgroup != nil && *w.podCgroup == *want {
		return false
	}
	acted := false
	setPod := func(res runtime.Resources) bool {
		if w.podCgroup != nil && *w.podCgroup == res {
			return true
		}
		if err := updater.UpdateResources(ctx, sb.ID, res, nil); err != nil {
			w.log.Warn("resize the pod's cgroup", "err", err)
			w.resizeErr[""] = err.Error()
			return false
		}
		delete(w.resizeErr, "")
		acted = true
		w.podCgroup = &res
		return true
	}
	if podResources(pod) != nil || podResources(now) != nil {
		old := podResources(now)
		if old == nil {
			old = &runtime.Resources{}
		}
		if !setPod(coverBoth(*old, *want)) {
			return acted
		}
	}
	for _, ch := range inPlace {
		labels := map[string]string{labelResources: encodeResources(ch.c.Resources)}
		if err := updater.UpdateResources(ctx, ch.id, runtime.ResourcesFor(ch.c.Resources), labels); err != nil {
			w.resizeErr[ch.c.Name] = err.Error()
			pending = true
			continue
		}
		acted = true
		delete(w.resizeErr, ch.c.Name)
		w.applied[ch.id] = corev1.ResourceRequirements{Requests: ch.c.Resources.Requests, Limits: ch.c.Resources.Limits}
		w.log.Info("resized container", "container", ch.c.Name)
	}
	if !pending && (podResources(pod) != nil || w.podCgroup != nil) {
		setPod(*want)
	}
	return acted
}

// coverBoth is the larger of two sizes (no limit is the largest).
func coverBoth(a, b runtime.Resources) runtime.Resources {
	limit := func(x, y int64) int64 {
		if x == 0 || y == 0 {
			return 0
		}
		return max(x, y)
	}
	return runtime.Resources{
		CPURequestMilli:  max(a.CPURequestMilli, b.CPURequestMilli),
		CPULimitMilli:    limit(a.CPULimitMilli, b.CPULimitMilli),
		MemoryLimitBytes: limit(a.MemoryLimitBytes, b.MemoryLimitBytes),
	}
}

// findContainer is the pod's container (app or init) named name.
func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// resizeErr keys a failure to resize the pod's cgroup by "".

// resizeCondition is the pod's PodResizeInProgress condition while a
// running container's resources differ from its spec's, as Kubernetes'
// kubelet reports it (reason Error when applying them failed).
func resizeCondition(pod *corev1.Pod, s *corev1.PodStatus, errs map[string]string) *corev1.PodCondition {
	if s.Phase != corev1.PodRunning {
		return nil
	}
	for _, list := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses} {
		for _, cs := range list {
			c := findContainer(pod, cs.Name)
			if c == nil || cs.State.Running == nil || cs.Resources == nil {
				continue
			}
			if len(resourcesDiffer(*cs.Resources, c.Resources)) == 0 {
				continue
			}
			cond := &corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}
			if msg := errs[c.Name]; msg != "" {
				cond.Reason, cond.Message = corev1.PodReasonError, fmt.Sprintf("resize of container %s failed: %s", c.Name, msg)
			} else if msg := errs[""]; msg != "" {
				cond.Reason, cond.Message = corev1.PodReasonError, "resize of the pod's cgroup failed: "+msg
			}
			return cond
		}
	}
	return nil
}

// withResizeInProgress adds PodResizeInProgress to a status computed
// before the worker took a resize it was just handed, so that no one
// reading the pod meanwhile takes the resize for done.
func withResizeInProgress(pod *corev1.Pod, now metav1.Time) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodResizeInProgress {
			return
		}
	}
	if c := resizeCondition(pod, &pod.Status, nil); c != nil {
		c.LastTransitionTime = now.Rfc3339Copy()
		pod.Status.Conditions = append(pod.Status.Conditions, *c)
	}
}
