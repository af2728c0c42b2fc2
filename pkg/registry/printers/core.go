package printers

import (
	"fmt"
	"net"
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

var podPrinter = typed(
	[]metav1.TableColumnDefinition{
		nameColumn(),
		column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
		column("Status", "string", "The aggregate status of the containers in this pod."),
		column("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
		ageColumn(),
		wide(column("IP", "string", corev1.PodStatus{}.SwaggerDoc()["podIP"])),
		wide(column("Node", "string", corev1.PodSpec{}.SwaggerDoc()["nodeName"])),
		wide(column("Nominated Node", "string", corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"])),
		wide(column("Readiness Gates", "string", corev1.PodSpec{}.SwaggerDoc()["readinessGates"])),
	},
	podCells,
)

func podCells(pod *corev1.Pod, now time.Time) []interface{} {
	s := summarizePod(pod)
	restarts := strconv.Itoa(s.restarts)
	if s.restarts != 0 && !s.lastRestart.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", s.restarts, age(s.lastRestart, now))
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
		age(pod.CreationTimestamp, now),
		orDefault(ip, none),
		orDefault(pod.Spec.NodeName, none),
		orDefault(pod.Status.NominatedNodeName, none),
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
		return none
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

const nodeRolePrefix = "node-role.kubernetes.io/"

var nodePrinter = typed(
	[]metav1.TableColumnDefinition{
		nameColumn(),
		column("Status", "string", "The status of the node"),
		column("Roles", "string", "The roles of the node"),
		ageColumn(),
		column("Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"]),
		wide(column("Internal-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"])),
		wide(column("External-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"])),
		wide(column("OS-Image", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["osImage"])),
		wide(column("Kernel-Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"])),
		wide(column("Container-Runtime", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"])),
	},
	nodeCells,
)

func nodeCells(node *corev1.Node, now time.Time) []interface{} {
	info := node.Status.NodeInfo
	return []interface{}{
		node.Name,
		nodeStatus(node),
		orDefault(strings.Join(nodeRoles(node), ","), none),
		age(node.CreationTimestamp, now),
		info.KubeletVersion,
		nodeAddress(node, corev1.NodeInternalIP),
		nodeAddress(node, corev1.NodeExternalIP),
		orDefault(info.OSImage, unknown),
		orDefault(info.KernelVersion, unknown),
		orDefault(info.ContainerRuntimeVersion, unknown),
	}
}

// nodeStatus is "Ready", "NotReady" or "Unknown" from the Ready condition,
// with ",SchedulingDisabled" for cordoned nodes.
func nodeStatus(node *corev1.Node) string {
	status := "Unknown"
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			status = string(corev1.NodeReady)
			if c.Status != corev1.ConditionTrue {
				status = "Not" + status
			}
		}
	}
	if node.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return status
}

// nodeRoles collects roles from node-role.kubernetes.io/<role> labels and the
// legacy kubernetes.io/role=<role> label, sorted and de-duplicated.
func nodeRoles(node *corev1.Node) []string {
	var roles []string
	for k, v := range node.Labels {
		switch {
		case strings.HasPrefix(k, nodeRolePrefix) && len(k) > len(nodeRolePrefix):
			roles = append(roles, strings.TrimPrefix(k, nodeRolePrefix))
		case k == "kubernetes.io/role" && v != "":
			roles = append(roles, v)
		}
	}
	slices.Sort(roles)
	return slices.Compact(roles)
}

func nodeAddress(node *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return none
}

// Namespaces.

var namespacePrinter = typed(
	[]metav1.TableColumnDefinition{
		nameColumn(),
		column("Status", "string", "The status of the namespace"),
		ageColumn(),
	},
	func(ns *corev1.Namespace, now time.Time) []interface{} {
		return []interface{}{ns.Name, string(ns.Status.Phase), age(ns.CreationTimestamp, now)}
	},
)

// Services.

var servicePrinter = typed(
	[]metav1.TableColumnDefinition{
		nameColumn(),
		column("Type", "string", corev1.ServiceSpec{}.SwaggerDoc()["type"]),
		column("Cluster-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["clusterIP"]),
		column("External-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["externalIPs"]),
		column("Port(s)", "string", corev1.ServiceSpec{}.SwaggerDoc()["ports"]),
		ageColumn(),
		wide(column("Selector", "string", corev1.ServiceSpec{}.SwaggerDoc()["selector"])),
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
		orDefault(clusterIP, none),
		serviceExternalIP(svc),
		orDefault(servicePorts(svc.Spec.Ports), none),
		age(svc.CreationTimestamp, now),
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
		return orDefault(strings.Join(svc.Spec.ExternalIPs, ","), none)
	case corev1.ServiceTypeLoadBalancer:
		var ips []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			ips = append(ips, orDefault(in.IP, in.Hostname))
		}
		ips = append(sortedUnique(ips), svc.Spec.ExternalIPs...)
		return orDefault(strings.Join(ips, ","), "<pending>")
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return unknown
}

// servicePorts renders "80/TCP" or, with a node port, "80:30080/TCP".
func servicePorts(ports []corev1.ServicePort) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		proto := orDefault(string(p.Protocol), string(corev1.ProtocolTCP))
		if p.NodePort > 0 {
			parts[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, proto)
		} else {
			parts[i] = fmt.Sprintf("%d/%s", p.Port, proto)
		}
	}
	return strings.Join(parts, ",")
}

// sortedUnique drops empty strings and duplicates and sorts the rest.
func sortedUnique(items []string) []string {
	items = slices.DeleteFunc(items, func(s string) bool { return s == "" })
	slices.Sort(items)
	return slices.Compact(items)
}

// Endpoints.

var endpointsPrinter = typed(
	[]metav1.TableColumnDefinition{
		nameColumn(),
		column("Endpoints", "string", corev1.Endpoints{}.SwaggerDoc()["subsets"]),
		ageColumn(),
	},
	func(ep *corev1.Endpoints, now time.Time) []interface{} {
		return []interface{}{ep.Name, endpointAddresses(ep), age(ep.CreationTimestamp, now)}
	},
)

// endpointAddresses lists the first three "ip:port" pairs (bare IPs for
// port-less subsets), "<none>" without subsets.
func endpointAddresses(ep *corev1.Endpoints) string {
	if len(ep.Subsets) == 0 {
		return none
	}
	var list []string
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 {
			for _, a := range ss.Addresses {
				list = append(list, a.IP)
			}
			continue
		}
		for _, p := range ss.Ports {
			for _, a := range ss.Addresses {
				list = append(list, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	return truncatedList(list, 3, ",")
}

// ConfigMaps, Secrets and ServiceAccounts.

var configMapPrinter = typed(
	[]metav1.TableColumnDefinition{
		nameColumn(),
		column("Data", "string", corev1.ConfigMap{}.SwaggerDoc()["data"]),
		ageColumn(),
	},
	func(cm *corev1.ConfigMap, now time.Time) []interface{} {
		return []interface{}{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), age(cm.CreationTimestamp, now)}
	},
)

var secretPrinter = typed(
	[]metav1.TableColumnDefinition{
		nameColumn(),
		column("Type", "string", corev1.Secret{}.SwaggerDoc()["type"]),
		column("Data", "string", corev1.Secret{}.SwaggerDoc()["data"]),
		ageColumn(),
	},
	secretCells,
)

func secretCells(s *corev1.Secret, now time.Time) []interface{} {
	// stringData is write-only and merged into data by the API; count the
	// union in case an object still carries it.
	keys := len(s.Data)
	for k := range s.StringData {
		if _, dup := s.Data[k]; !dup {
			keys++
		}
	}
	return []interface{}{s.Name, string(s.Type), int64(keys), age(s.CreationTimestamp, now)}
}

var serviceAccountPrinter = typed(
	[]metav1.TableColumnDefinition{
		nameColumn(),
		column("Secrets", "string", corev1.ServiceAccount{}.SwaggerDoc()["secrets"]),
		ageColumn(),
	},
	func(sa *corev1.ServiceAccount, now time.Time) []interface{} {
		return []interface{}{sa.Name, int64(len(sa.Secrets)), age(sa.CreationTimestamp, now)}
	},
)

// Events.

// eventPrinter follows kubectl get events: the name is a wide column at the end.
var eventPrinter = typed(
	[]metav1.TableColumnDefinition{
		column("Last Seen", "string", corev1.Event{}.SwaggerDoc()["lastTimestamp"]),
		column("Type", "string", corev1.Event{}.SwaggerDoc()["type"]),
		column("Reason", "string", corev1.Event{}.SwaggerDoc()["reason"]),
		column("Object", "string", corev1.Event{}.SwaggerDoc()["involvedObject"]),
		wide(column("Subobject", "string", corev1.ObjectReference{}.SwaggerDoc()["fieldPath"])),
		wide(column("Source", "string", corev1.Event{}.SwaggerDoc()["source"])),
		column("Message", "string", corev1.Event{}.SwaggerDoc()["message"]),
		wide(column("First Seen", "string", corev1.Event{}.SwaggerDoc()["firstTimestamp"])),
		wide(column("Count", "string", corev1.Event{}.SwaggerDoc()["count"])),
		wide(nameColumn()),
	},
	eventCells,
)

func eventCells(ev *corev1.Event, now time.Time) []interface{} {
	first := age(ev.FirstTimestamp, now)
	if ev.FirstTimestamp.IsZero() {
		first = microAge(ev.EventTime, now)
	}
	last := first
	if !ev.LastTimestamp.IsZero() {
		last = age(ev.LastTimestamp, now)
	}
	count := ev.Count
	switch {
	case ev.Series != nil:
		last = microAge(ev.Series.LastObservedTime, now)
		count = ev.Series.Count
	case count == 0:
		count = 1 // singleton events from the events.k8s.io API carry no count
	}

	object := strings.ToLower(ev.InvolvedObject.Kind)
	if ev.InvolvedObject.Name != "" {
		object += "/" + ev.InvolvedObject.Name
	}

	source := orDefault(ev.Source.Component, ev.ReportingController)
	if host := orDefault(ev.Source.Host, ev.ReportingInstance); host != "" {
		source += ", " + host
	}

	return []interface{}{
		last,
		ev.Type,
		ev.Reason,
		object,
		ev.InvolvedObject.FieldPath,
		source,
		strings.TrimSpace(ev.Message),
		first,
		int64(count),
		ev.Name,
	}
}

// PersistentVolumes and claims.

var persistentVolumePrinter = typed(
	[]metav1.TableColumnDefinition{
		nameColumn(),
		column("Capacity", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["capacity"]),
		column("Access Modes", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["accessModes"]),
		column("Reclaim Policy", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["persistentVolumeReclaimPolicy"]),
		column("Status", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["phase"]),
		column("Claim", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["claimRef"]),
		column("StorageClass", "string", "StorageClass of the pv"),
		column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
		column("Reason", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["reason"]),
		ageColumn(),
		wide(column("VolumeMode", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["volumeMode"])),
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
		age(pv.CreationTimestamp, now),
		volumeModeCell(pv.Spec.VolumeMode),
	}
}

var persistentVolumeClaimPrinter = typed(
	[]metav1.TableColumnDefinition{
		nameColumn(),
		column("Status", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"]),
		column("Volume", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"]),
		column("Capacity", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"]),
		column("Access Modes", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"]),
		column("StorageClass", "string", "StorageClass of the pvc"),
		column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
		ageColumn(),
		wide(column("VolumeMode", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"])),
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
		age(pvc.CreationTimestamp, now),
		volumeModeCell(pvc.Spec.VolumeMode),
	}
}

func stringPtrCell(s *string) string {
	if s == nil {
		return unset
	}
	return *s
}

func volumeModeCell(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return unset
	}
	return string(*m)
}
