package local

import (
	"cmp"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubectl/pkg/util/qos"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/kubelet/runtime"
)

// Reasons of pod conditions, as Kubernetes' kubelet writes them.
const (
	reasonContainersNotReady       = "ContainersNotReady"
	reasonContainersNotInitialized = "ContainersNotInitialized"
	reasonPodCompleted             = "PodCompleted"
	reasonPodFailed                = "PodFailed"
)

// statusInput is everything a pod's status is computed from.
type statusInput struct {
	pod  *corev1.Pod
	prev corev1.PodStatus
	now  metav1.Time

	hostIP, podIP string
	startTime     metav1.Time
	// podReady: the sandbox runs on the pod network.
	podReady bool
	// podErr is why it does not, shown on containers that wait for it.
	podErr string
	// terminal: the pod has finished and nothing restarts; deadline: it
	// finished because activeDeadlineSeconds passed.
	terminal, deadline bool

	// instances are each container's attempts, latest first.
	instances map[string][]runtime.ContainerStatus
	waiting   map[string]waitingState
	probes    map[string]probeView // by container ID
	startErrs map[string]string    // by container ID
	termMsgs  map[string]string    // by container ID
	// resources are what containers run with (by container ID), and
	// resizeErrs why resizing them in place failed (by name).
	resources  map[string]corev1.ResourceRequirements
	resizeErrs map[string]string
}

// probeView is what the probes say about a running container.
type probeView struct {
	started, ready bool
}

// computeStatus gathers the worker's view of the pod into its status.
func (w *podWorker) computeStatus() corev1.PodStatus {
	w.mu.Lock()
	pod := w.pod
	prev := w.status
	probes := make(map[string]probeView, len(w.probes))
	for id, cp := range w.probes {
		probes[id] = cp.view()
	}
	w.mu.Unlock()

	current := w.currentSandboxID()
	instances := map[string][]runtime.ContainerStatus{}
	resources := map[string]corev1.ResourceRequirements{}
	for _, c := range w.obs.containers {
		if current == "" || c.SandboxID == current {
			instances[c.Name] = append(instances[c.Name], c)
			if r, ok := w.appliedResources(c); ok {
				resources[c.ID] = r
			}
		}
	}
	return buildStatus(statusInput{
		pod: pod, prev: prev, now: metav1.NewTime(w.p.clock.Now()),
		hostIP: w.p.cfg.NodeIP, podIP: w.podIP, startTime: w.startTime,
		podReady: w.podReady && !w.terminal, podErr: cmp.Or(w.volumeErr, w.podErr),
		terminal: w.terminal, deadline: w.deadline,
		instances: instances, waiting: w.waiting, probes: probes,
		startErrs: w.startErrs, termMsgs: w.termMsgs,
		resources: resources, resizeErrs: w.resizeErr,
	})
}

// buildStatus computes a pod's status the way Kubernetes' kubelet does.
func buildStatus(in statusInput) corev1.PodStatus {
	pod := in.pod
	s := corev1.PodStatus{
		HostIP:   in.hostIP,
		QOSClass: pod.Status.QOSClass,
	}
	if s.QOSClass == "" {
		s.QOSClass = qos.GetPodQOS(pod)
	}
	if in.hostIP != "" {
		s.HostIPs = []corev1.HostIP{{IP: in.hostIP}}
	}
	if in.podIP != "" {
		s.PodIP = in.podIP
		s.PodIPs = []corev1.PodIP{{IP: in.podIP}}
	}
	if !in.startTime.IsZero() {
		t := in.startTime
		s.StartTime = &t
	}
	defaultReason := "ContainerCreating"
	if len(pod.Spec.InitContainers) > 0 {
		defaultReason = "PodInitializing"
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		s.InitContainerStatuses = append(s.InitContainerStatuses, in.containerStatus(c, true, defaultReason))
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		s.ContainerStatuses = append(s.ContainerStatuses, in.containerStatus(c, false, defaultReason))
	}
	for i := range pod.Spec.EphemeralContainers {
		s.EphemeralContainerStatuses = append(s.EphemeralContainerStatuses, in.ephemeralContainerStatus(&pod.Spec.EphemeralContainers[i], defaultReason))
	}
	s.Phase = podPhase(pod, s.InitContainerStatuses, s.ContainerStatuses, in.terminal)
	if in.terminal && s.Phase != corev1.PodSucceeded && s.Phase != corev1.PodFailed {
		// Finished by the API's account (adopted) or stopped by a deadline.
		s.Phase = corev1.PodFailed
		if pod.Status.Phase == corev1.PodSucceeded {
			s.Phase = corev1.PodSucceeded
		}
	}
	if in.deadline {
		s.Phase = corev1.PodFailed
		s.Reason = reasonDeadlineExceeded
		s.Message = "Pod was active on the node longer than the specified deadline"
	}
	if s.Phase == corev1.PodSucceeded || s.Phase == corev1.PodFailed {
		for i := range s.ContainerStatuses {
			s.ContainerStatuses[i].Ready = false
		}
	}
	s.Conditions = in.conditions(&s)
	normalizeTimes(&s)
	return s
}

// normalizeTimes cuts every time to the second, the precision the API
// stores: a status read back from the API then equals the one computed.
func normalizeTimes(s *corev1.PodStatus) {
	cut := func(t *metav1.Time) {
		if t != nil && !t.IsZero() {
			*t = t.Rfc3339Copy()
		}
	}
	cut(s.StartTime)
	for i := range s.Conditions {
		cut(&s.Conditions[i].LastTransitionTime)
		cut(&s.Conditions[i].LastProbeTime)
	}
	for _, list := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range list {
			for _, st := range []*corev1.ContainerState{&list[i].State, &list[i].LastTerminationState} {
				if st.Running != nil {
					cut(&st.Running.StartedAt)
				}
				if st.Terminated != nil {
					cut(&st.Terminated.StartedAt)
					cut(&st.Terminated.FinishedAt)
				}
			}
		}
	}
}

// containerStatus is one container's status from its attempts.
func (in *statusInput) containerStatus(c *corev1.Container, isInit bool, defaultReason string) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: ptr.To(false)}
	// allocatedResources are the spec's requests, admitted as they come;
	// resources what the latest attempt runs with (the spec's until it
	// runs).
	cs.AllocatedResources = c.Resources.Requests.DeepCopy()
	cs.Resources = &corev1.ResourceRequirements{Requests: c.Resources.Requests.DeepCopy(), Limits: c.Resources.Limits.DeepCopy()}
	insts := in.instances[c.Name]
	if len(insts) > 0 {
		if r, ok := in.resources[insts[0].ID]; ok {
			cs.Resources = r.DeepCopy()
		}
	}
	waiting, isWaiting := in.waiting[c.Name]
	if len(insts) == 0 {
		if !isWaiting {
			waiting = waitingState{reason: defaultReason}
			if defaultReason == "ContainerCreating" && in.podErr != "" {
				waiting.message = in.podErr
			}
		}
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting.reason, Message: waiting.message}
		return cs
	}
	cur := insts[0]
	cs.User = apiContainerUser(cur.User)
	cs.RestartCount = int32(restartCountOf(cur))
	cs.ContainerID = containerID(cur.ID)
	cs.ImageID = imageID(cur)
	if cur.Image != "" {
		cs.Image = cur.Image
	}
	var previous *corev1.ContainerStateTerminated
	if len(insts) > 1 {
		previous = in.terminated(insts[1])
	}
	switch {
	case cur.State == runtime.StateRunning:
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(cur.StartedAt)}
		pv, ok := in.probes[cur.ID]
		if !ok {
			pv = probeView{started: c.StartupProbe == nil, ready: c.StartupProbe == nil && c.ReadinessProbe == nil}
		}
		cs.Started = ptr.To(pv.started)
		cs.Ready = pv.started && pv.ready && (!isInit || isRestartable(c))
		if previous != nil {
			cs.LastTerminationState.Terminated = previous
		}
	case cur.State == runtime.StateCreated && in.startErrs[cur.ID] == "":
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
		if previous != nil {
			cs.LastTerminationState.Terminated = previous
		}
	default:
		t := in.terminated(cur)
		if isWaiting {
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting.reason, Message: waiting.message}
			cs.LastTerminationState.Terminated = t
		} else {
			cs.State.Terminated = t
			if previous != nil {
				cs.LastTerminationState.Terminated = previous
			}
		}
		cs.Ready = isInit && !isRestartable(c) && cs.State.Terminated != nil && t.ExitCode == 0
	}
	return cs
}

// ephemeralContainerStatus is an ephemeral container's status, as the
// kubelet reports it: its one attempt's state, never ready, with neither
// a started flag nor resources (it has no probes and no resources).
func (in *statusInput) ephemeralContainerStatus(ec *corev1.EphemeralContainer, defaultReason string) corev1.ContainerStatus {
	cs := in.containerStatus((*corev1.Container)(&ec.EphemeralContainerCommon), false, defaultReason)
	cs.Ready, cs.Started = false, nil
	cs.Resources, cs.AllocatedResources = nil, nil
	return cs
}

// terminated is an exited attempt's terminated state.
func (in *statusInput) terminated(c runtime.ContainerStatus) *corev1.ContainerStateTerminated {
	t := &corev1.ContainerStateTerminated{
		ExitCode:    int32(c.ExitCode),
		Reason:      c.Reason,
		Message:     in.termMsgs[c.ID],
		StartedAt:   metav1.NewTime(c.StartedAt),
		FinishedAt:  metav1.NewTime(c.FinishedAt),
		ContainerID: containerID(c.ID),
	}
	if msg, failed := in.startErrs[c.ID]; failed && c.State != runtime.StateRunning {
		t.ExitCode, t.Reason, t.Message = 128, "StartError", msg
		t.StartedAt = metav1.Time{}
		if t.FinishedAt.IsZero() {
			t.FinishedAt = metav1.NewTime(c.CreatedAt)
		}
	}
	if c.State == runtime.StateRunning || c.State == runtime.StateCreated {
		if _, failed := in.startErrs[c.ID]; !failed {
			return nil
		}
	}
	if t.Reason == "" {
		t.Reason = "Completed"
		if t.ExitCode != 0 {
			t.Reason = "Error"
		}
	}
	return t
}

func containerID(id string) string { return "containerd://" + id }

// imageID is the image's repository digest, as Kubernetes reports it
// (docker.io/library/busybox@sha256:...).
func imageID(c runtime.ContainerStatus) string {
	id := c.ImageID
	at := strings.LastIndex(id, "@")
	if at < 0 {
		return id
	}
	name, digest := id[:at], id[at:]
	if slash, colon := strings.LastIndex(name, "/"), strings.LastIndex(name, ":"); colon > slash {
		name = name[:colon]
	}
	return name + digest
}

// podPhase is Kubernetes' getPhase.
func podPhase(pod *corev1.Pod, initStatuses, statuses []corev1.ContainerStatus, terminal bool) corev1.PodPhase {
	spec := &pod.Spec
	pendingInit, failedInit := 0, 0
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		cs := findStatus(initStatuses, c.Name)
		if isRestartable(c) {
			if cs == nil || cs.Started == nil || !*cs.Started {
				pendingInit++
			}
			continue
		}
		switch {
		case cs == nil:
			pendingInit++
		case cs.State.Running != nil:
			pendingInit++
		case cs.State.Terminated != nil:
			if cs.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case cs.State.Waiting != nil:
			if t := cs.LastTerminationState.Terminated; t != nil {
				if t.ExitCode != 0 {
					failedInit++
				}
			} else {
				pendingInit++
			}
		default:
			pendingInit++
		}
	}
	unknown, running, waiting, stopped, succeeded := 0, 0, 0, 0, 0
	for i := range spec.Containers {
		cs := findStatus(statuses, spec.Containers[i].Name)
		switch {
		case cs == nil:
			unknown++
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.State.Waiting != nil:
			if cs.LastTerminationState.Terminated != nil {
				stopped++
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}
	if failedInit > 0 && spec.RestartPolicy == corev1.RestartPolicyNever {
		return corev1.PodFailed
	}
	switch {
	case pendingInit > 0:
		return corev1.PodPending
	case waiting > 0:
		return corev1.PodPending
	case running > 0 && unknown == 0:
		return corev1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if terminal {
			if stopped == succeeded {
				return corev1.PodSucceeded
			}
			return corev1.PodFailed
		}
		if spec.RestartPolicy == corev1.RestartPolicyAlways || spec.RestartPolicy == "" {
			return corev1.PodRunning
		}
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		if spec.RestartPolicy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
		return corev1.PodRunning
	default:
		return corev1.PodPending
	}
}

func findStatus(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// conditions are PodReadyToStartContainers, Initialized, Ready and
// ContainersReady, with transition times kept while they hold.
func (in *statusInput) conditions(s *corev1.PodStatus) []corev1.PodCondition {
	pod := in.pod
	var out []corev1.PodCondition
	add := func(c corev1.PodCondition) {
		c.LastTransitionTime = in.now
		for _, old := range in.prev.Conditions {
			if old.Type == c.Type && old.Status == c.Status && !old.LastTransitionTime.IsZero() {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		out = append(out, c)
	}
	status := func(b bool) corev1.ConditionStatus {
		if b {
			return corev1.ConditionTrue
		}
		return corev1.ConditionFalse
	}
	add(corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: status(in.podReady)})

	// Initialized.
	var incomplete []string
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := findStatus(s.InitContainerStatuses, c.Name)
		if isRestartable(c) {
			if cs == nil || cs.Started == nil || !*cs.Started {
				incomplete = append(incomplete, c.Name)
			}
		} else if cs == nil || !cs.Ready {
			incomplete = append(incomplete, c.Name)
		}
	}
	switch {
	case s.Phase == corev1.PodSucceeded:
		add(corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, Reason: reasonPodCompleted})
	case len(incomplete) == 0 || anyStarted(s.ContainerStatuses):
		add(corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue})
	default:
		add(corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionFalse, Reason: reasonContainersNotInitialized,
			Message: fmt.Sprintf("containers with incomplete status: %s", incomplete)})
	}

	// Ready and ContainersReady.
	var unready []string
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; isRestartable(c) {
			if cs := findStatus(s.InitContainerStatuses, c.Name); cs == nil || !cs.Ready {
				unready = append(unready, c.Name)
			}
		}
	}
	for _, c := range pod.Spec.Containers {
		if cs := findStatus(s.ContainerStatuses, c.Name); cs == nil || !cs.Ready {
			unready = append(unready, c.Name)
		}
	}
	ready := corev1.PodCondition{Status: corev1.ConditionTrue}
	switch {
	case s.Phase == corev1.PodSucceeded:
		ready = corev1.PodCondition{Status: corev1.ConditionFalse, Reason: reasonPodCompleted}
	case s.Phase == corev1.PodFailed:
		ready = corev1.PodCondition{Status: corev1.ConditionFalse, Reason: reasonPodFailed}
	case len(unready) > 0:
		ready = corev1.PodCondition{Status: corev1.ConditionFalse, Reason: reasonContainersNotReady,
			Message: fmt.Sprintf("containers with unready status: %s", unready)}
	}
	podReady, containersReady := ready, ready
	podReady.Type, containersReady.Type = corev1.PodReady, corev1.ContainersReady
	add(podReady)
	add(containersReady)
	if c := resizeCondition(pod, s, in.resizeErrs); c != nil {
		add(*c)
	}
	return out
}

// anyStarted says whether a regular container has ever started (the pod
// was initialised before).
func anyStarted(statuses []corev1.ContainerStatus) bool {
	for _, cs := range statuses {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}
