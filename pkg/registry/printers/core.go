package printers

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	storageutil "k8s.io/kubectl/pkg/util/storage"
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

var Service = Typed(
	[]metav1.TableColumnDefinition{
		NameColumn(),
		Column("Type", "string", corev1.ServiceSpec{}.SwaggerDoc()["type"]),
		Column("Cluster-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["clusterIP"]),
		Column("External-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["externalIPs"]),
		Column("Port(s)", "string", corev1.ServiceSpec{}.SwaggerDoc()["ports"]),
		AgeColumn(),
		Wide(Column("Selector", "string", corev1.ServiceSpec{}.SwaggerDoc()["selector"])),
	},
	serviceCells,
)

func serviceCells(svc *corev1.Service, now time.Time) []interface{} {
	clusterIP := svc.Spec.ClusterIP
	if len(svc.Spec.ClusterIPs) > 0 {
		clusterIP = svc.Spec.ClusterIPs[0]
	}
	return []interface{}{
		svc.Name,
		string(serviceType(svc)),
		OrDefault(clusterIP, None),
		serviceExternalIP(svc),
		OrDefault(servicePorts(svc.Spec.Ports), None),
		Age(svc.CreationTimestamp, now),
		labels.FormatLabels(svc.Spec.Selector),
	}
}

// serviceType is the spec type, ClusterIP when unset (the API default).
func serviceType(svc *corev1.Service) corev1.ServiceType {
	if svc.Spec.Type == "" {
		return corev1.ServiceTypeClusterIP
	}
	return svc.Spec.Type
}

// serviceExternalIP renders EXTERNAL-IP: external IPs, load balancer ingress
// ("<pending>" until assigned) or the external name.
func serviceExternalIP(svc *corev1.Service) string {
	switch serviceType(svc) {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		return OrDefault(strings.Join(svc.Spec.ExternalIPs, ","), None)
	case corev1.ServiceTypeLoadBalancer:
		var ips []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			ips = append(ips, OrDefault(in.IP, in.Hostname))
		}
		ips = append(SortedUnique(ips), svc.Spec.ExternalIPs...)
		return OrDefault(strings.Join(ips, ","), "<pending>")
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return Unknown
}

// servicePorts renders "80/TCP" or, with a node port, "80:30080/TCP".
func servicePorts(ports []corev1.ServicePort) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		proto := OrDefault(string(p.Protocol), string(corev1.ProtocolTCP))
		if p.NodePort > 0 {
			parts[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, proto)
		} else {
			parts[i] = fmt.Sprintf("%d/%s", p.Port, proto)
		}
	}
	return strings.Join(parts, ",")
}

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

var PersistentVolume = Typed(
	[]metav1.TableColumnDefinition{
		NameColumn(),
		Column("Capacity", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["capacity"]),
		Column("Access Modes", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["accessModes"]),
		Column("Reclaim Policy", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["persistentVolumeReclaimPolicy"]),
		Column("Status", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["phase"]),
		Column("Claim", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["claimRef"]),
		Column("StorageClass", "string", "StorageClass of the pv"),
		Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
		Column("Reason", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["reason"]),
		AgeColumn(),
		Wide(Column("VolumeMode", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["volumeMode"])),
	},
	persistentVolumeCells,
)

func persistentVolumeCells(pv *corev1.PersistentVolume, now time.Time) []interface{} {
	claim := ""
	if ref := pv.Spec.ClaimRef; ref != nil {
		claim = ref.Namespace + "/" + ref.Name
	}
	phase := string(pv.Status.Phase)
	if pv.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	capacity := pv.Spec.Capacity[corev1.ResourceStorage]
	return []interface{}{
		pv.Name,
		capacity.String(),
		storageutil.GetAccessModesAsString(pv.Spec.AccessModes),
		string(pv.Spec.PersistentVolumeReclaimPolicy),
		phase,
		claim,
		storageutil.GetPersistentVolumeClass(pv),
		stringPtrCell(pv.Spec.VolumeAttributesClassName),
		pv.Status.Reason,
		Age(pv.CreationTimestamp, now),
		volumeModeCell(pv.Spec.VolumeMode),
	}
}

var PersistentVolumeClaim = Typed(
	[]metav1.TableColumnDefinition{
		NameColumn(),
		Column("Status", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"]),
		Column("Volume", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"]),
		Column("Capacity", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"]),
		Column("Access Modes", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"]),
		Column("StorageClass", "string", "StorageClass of the pvc"),
		Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
		AgeColumn(),
		Wide(Column("VolumeMode", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"])),
	},
	persistentVolumeClaimCells,
)

func persistentVolumeClaimCells(pvc *corev1.PersistentVolumeClaim, now time.Time) []interface{} {
	phase := string(pvc.Status.Phase)
	if pvc.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	// Capacity and access modes are only meaningful once the claim is bound.
	capacity, accessModes := "", ""
	if pvc.Spec.VolumeName != "" {
		q := pvc.Status.Capacity[corev1.ResourceStorage]
		capacity = q.String()
		accessModes = storageutil.GetAccessModesAsString(pvc.Status.AccessModes)
	}
	return []interface{}{
		pvc.Name,
		phase,
		pvc.Spec.VolumeName,
		capacity,
		accessModes,
		storageutil.GetPersistentVolumeClaimClass(pvc),
		stringPtrCell(pvc.Spec.VolumeAttributesClassName),
		Age(pvc.CreationTimestamp, now),
		volumeModeCell(pvc.Spec.VolumeMode),
	}
}

func stringPtrCell(s *string) string {
	if s == nil {
		return Unset
	}
	return *s
}

func volumeModeCell(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return Unset
	}
	return string(*m)
}
