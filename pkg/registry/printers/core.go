package printers

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pods.

var Pod = Typed(
	[]metav1.TableColumnDefinition{
		NameColumn(),
		Column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
		Column("Status", "string", "The aggregate status of the containers in this pod."),
		Column("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
		AgeColumn(),
		Wide(Column("IP", "string", corev1.PodStatus{}.SwaggerDoc()["podIP"])),
		Wide(Column("Node", "string", corev1.PodSpec{}.SwaggerDoc()["nodeName"])),
		Wide(Column("Nominated Node", "string", corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"])),
		Wide(Column("Readiness Gates", "string", corev1.PodSpec{}.SwaggerDoc()["readinessGates"])),
	},
	podCells,
)

func podCells(pod *corev1.Pod, now time.Time) []interface{} {
	s := summarizePod(pod)
	restarts := strconv.Itoa(s.restarts)
	if s.restarts != 0 && !s.lastRestart.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", s.restarts, Age(s.lastRestart, now))
	}

	ip := pod.Status.PodIP
	if len(pod.Status.PodIPs) > 0 {
		ip = pod.Status.PodIPs[0].IP
	}

	return []interface{}{
		pod.Name,
		fmt.Sprintf("%d/%d", s.ready, s.total),
		s.reason,
		restarts,
		Age(pod.CreationTimestamp, now),
		OrDefault(ip, None),
		OrDefault(pod.Spec.NodeName, None),
		OrDefault(pod.Status.NominatedNodeName, None),
		readinessGates(pod),
	}
}

// podSummary is what the READY, STATUS and RESTARTS columns show.
type podSummary struct {
	ready, total int
	reason       string
	restarts     int
	lastRestart  metav1.Time
}

// restartCounter sums container restarts and remembers the latest one.
type restartCounter struct {
	count int
	last  metav1.Time
}

func (r *restartCounter) add(cs corev1.ContainerStatus) {
	r.count += int(cs.RestartCount)
	if t := cs.LastTerminationState.Terminated; t != nil && r.last.Before(&t.FinishedAt) {
		r.last = t.FinishedAt
	}
}

// summarizePod derives the pod's aggregate readiness, status reason and
// restarts the way kubectl shows them: init container progress ("Init:1/2",
// "Init:CrashLoopBackOff"), then the first regular container with a waiting
// or terminated reason, then the pod phase; deletion overrides with
// "Terminating".
func summarizePod(pod *corev1.Pod) podSummary {
	s := podSummary{total: len(pod.Spec.Containers), reason: string(pod.Status.Phase)}
	if pod.Status.Reason != "" {
		s.reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			s.reason = corev1.PodReasonSchedulingGated
		}
	}

	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
			s.total++
		}
	}

	var all, sidecarRestarts restartCounter
	initializing := false
	for i, cs := range pod.Status.InitContainerStatuses {
		all.add(cs)
		if sidecars[cs.Name] {
			sidecarRestarts.add(cs)
		}
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			continue // finished successfully
		case sidecars[cs.Name] && cs.Started != nil && *cs.Started:
			if cs.Ready {
				s.ready++
			}
			continue // sidecar up: initialization proceeds
		}
		s.reason, initializing = initReason(i, cs, len(pod.Spec.InitContainers)), true
		break
	}

	if !initializing || hasPodCondition(pod, corev1.PodInitialized) {
		all = sidecarRestarts
		hasRunning := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := pod.Status.ContainerStatuses[i]
			all.add(cs)
			switch st := cs.State; {
			case st.Waiting != nil && st.Waiting.Reason != "":
				s.reason = st.Waiting.Reason
			case st.Terminated != nil && st.Terminated.Reason != "":
				s.reason = st.Terminated.Reason
			case st.Terminated != nil && st.Terminated.Signal != 0:
				s.reason = fmt.Sprintf("Signal:%d", st.Terminated.Signal)
			case st.Terminated != nil:
				s.reason = fmt.Sprintf("ExitCode:%d", st.Terminated.ExitCode)
			case cs.Ready && st.Running != nil:
				hasRunning = true
				s.ready++
			}
		}
		// A completed container beside a running one does not make the pod completed.
		if s.reason == "Completed" && hasRunning {
			s.reason = "NotReady"
			if hasPodCondition(pod, corev1.PodReady) {
				s.reason = "Running"
			}
		}
	}

	if pod.DeletionTimestamp != nil {
		switch {
		case pod.Status.Reason == "NodeLost":
			s.reason = "Unknown"
		case pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			s.reason = "Terminating"
		}
	}

	s.restarts, s.lastRestart = all.count, all.last
	return s
}

// initReason is the STATUS of a pod held in initialization by init
// container i of total: its failure or waiting reason, else "Init:i/total".
func initReason(i int, cs corev1.ContainerStatus, total int) string {
	switch st := cs.State; {
	case st.Terminated != nil && st.Terminated.Reason != "":
		return "Init:" + st.Terminated.Reason
	case st.Terminated != nil && st.Terminated.Signal != 0:
		return fmt.Sprintf("Init:Signal:%d", st.Terminated.Signal)
	case st.Terminated != nil:
		return fmt.Sprintf("Init:ExitCode:%d", st.Terminated.ExitCode)
	case st.Waiting != nil && st.Waiting.Reason != "" && st.Waiting.Reason != "PodInitializing":
		return "Init:" + st.Waiting.Reason
	default:
		return fmt.Sprintf("Init:%d/%d", i, total)
	}
}

func hasPodCondition(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readinessGates renders "true gates/all gates", "<none>" without gates.
func readinessGates(pod *corev1.Pod) string {
	if len(pod.Spec.ReadinessGates) == 0 {
		return None
	}
	passed := 0
	for _, g := range pod.Spec.ReadinessGates {
		if hasPodCondition(pod, g.ConditionType) {
			passed++
		}
	}
	return fmt.Sprintf("%d/%d", passed, len(pod.Spec.ReadinessGates))
}

// Nodes.

// Namespaces.

// Services.

// SortedUnique drops empty strings and duplicates and sorts the rest.
func SortedUnique(items []string) []string {
	items = slices.DeleteFunc(items, func(s string) bool { return s == "" })
	slices.Sort(items)
	return slices.Compact(items)
}

// Endpoints.

// ConfigMaps, Secrets and ServiceAccounts.

// Events.

// PersistentVolumes and claims.

func StringPtrCell(s *string) string {
	if s == nil {
		return Unset
	}
	return *s
}

func VolumeModeCell(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return Unset
	}
	return string(*m)
}
