package kinds

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Pods: the scheduler binds them to a node (POST .../binding), and a pod
// bound to a node is deleted gracefully, by its kubelet.
func pods() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Namespaced: true,
		ShortNames: []string{"po"}, Categories: []string{"all"}, Status: true,
		Actions:        []registry.Action{podBinding, podEviction},
		Default:        defaulter(defaultPod),
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validatePod),
		ValidateUpdate: updateValidator(validatePodUpdate),
		Printer:        podPrinter,
		FieldLabels:    podFields,
		GracefulDelete: podGracefulDelete,

		PrepareForStatusUpdate: keepPodObservedGeneration,
		ValidateCreateOnly:     validator(validatePodCreate),
		SpecParts: map[string]registry.SpecPart{
			"resize":              {Take: podResize, Validate: updateValidator(validatePodResize)},
			"ephemeralcontainers": {Take: podEphemeralContainers, Validate: updateValidator(validatePodEphemeralContainers)},
		},
	}
}

// keepPodObservedGeneration: a status writer that leaves out
// status.observedGeneration, or a condition's, keeps what was stored, as
// Kubernetes' pod status strategy does (conditions matched by type, in
// order).
func keepPodObservedGeneration(obj, old runtime.Object) {
	pod, prev := obj.(*corev1.Pod), old.(*corev1.Pod)
	if pod.Status.ObservedGeneration == 0 {
		pod.Status.ObservedGeneration = prev.Status.ObservedGeneration
	}
	gens := map[corev1.PodConditionType][]int64{}
	for _, c := range prev.Status.Conditions {
		gens[c.Type] = append(gens[c.Type], c.ObservedGeneration)
	}
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		var g int64
		if list := gens[c.Type]; len(list) > 0 {
			g, gens[c.Type] = list[0], list[1:]
		}
		if c.ObservedGeneration == 0 {
			c.ObservedGeneration = g
		}
	}
}

func podFields(obj runtime.Object) fields.Set {
	p := obj.(*corev1.Pod)
	return fields.Set{
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  p.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(p.Spec.HostNetwork),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             p.Status.PodIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
}

// podGracefulDelete: a pod bound to a node stays (Terminating) until its
// kubelet has stopped the containers and deletes it with grace 0.
func podGracefulDelete(obj runtime.Object, requested *int64) (int64, bool) {
	p := obj.(*corev1.Pod)
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if p.Spec.TerminationGracePeriodSeconds != nil {
		grace = *p.Spec.TerminationGracePeriodSeconds
	}
	if requested != nil {
		grace = *requested
	}
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return 0, false
	}
	if grace == 0 {
		return 0, false
	}
	return grace, true
}

// podBinding assigns a pod to a node, once, as the scheduler does.
var podBinding = registry.Action{
	Name: "binding", Kind: "Binding",
	New: func() runtime.Object { return &corev1.Binding{} },
	Check: func(body runtime.Object) error {
		if b := body.(*corev1.Binding); b.Target.Name == "" {
			return apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, b.Name, nil)
		}
		return nil
	},
	Apply: bindPod,
}

func bindPod(obj, body runtime.Object, now time.Time) error {
	pod, binding := obj.(*corev1.Pod), body.(*corev1.Binding)
	pods := corev1.Resource("pods")
	if pod.DeletionTimestamp != nil {
		return apierrors.NewConflict(pods, pod.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name))
	}
	if pod.Spec.NodeName != "" {
		return apierrors.NewConflict(pods, pod.Name, fmt.Errorf("pod %s is already assigned to node %q", pod.Name, pod.Spec.NodeName))
	}
	if binding.UID != "" && binding.UID != pod.UID {
		return apierrors.NewConflict(pods, pod.Name, fmt.Errorf("precondition failed: UID in binding %s does not match the pod's %s", binding.UID, pod.UID))
	}
	pod.Spec.NodeName = binding.Target.Name
	for k, v := range binding.Annotations {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[k] = v
	}
	setPodCondition(pod, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)})
	pod.ResourceVersion = binding.ResourceVersion
	return nil
}

// setPodCondition puts c in place of the pod's condition of its type, or
// adds it.
func setPodCondition(pod *corev1.Pod, c corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == c.Type {
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}

// Defaults.

const (
	// defaultServiceAccountName is what the ServiceAccount admission plugin
	// puts in pods that do not name a service account.
	defaultServiceAccountName = "default"
	// defaultTolerationSeconds is what the DefaultTolerationSeconds admission
	// plugin uses for the not-ready and unreachable NoExecute taints.
	defaultTolerationSeconds int64 = 300
)

// systemPriorityClasses are the built-in priority classes the Priority
// admission plugin resolves without looking at the API.
var systemPriorityClasses = map[string]int32{
	"system-cluster-critical": 2000000000,
	"system-node-critical":    2000001000,
}

// defaultPod applies the pod-only defaults on top of the shared PodSpec ones.
func defaultPod(pod *corev1.Pod) {
	defaults.PodSpec(&pod.Spec)
	spec := &pod.Spec

	// If limits are set but requests are not, requests default to limits.
	// Upstream does this for Pods only, never for pod templates.
	for i := range spec.Containers {
		defaults.RequestsFromLimits(&spec.Containers[i].Resources)
	}
	for i := range spec.InitContainers {
		defaults.RequestsFromLimits(&spec.InitContainers[i].Resources)
	}
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = ptr.To(corev1.DefaultEnableServiceLinks)
	}
	if spec.HostNetwork {
		defaults.HostNetworkPorts(spec.Containers)
		defaults.HostNetworkPorts(spec.InitContainers)
	}

	defaultPodAdmission(spec)

	if pod.Status.Phase == "" {
		pod.Status.Phase = corev1.PodPending
	}
	if pod.Status.QOSClass == "" {
		pod.Status.QOSClass = podQOSClass(spec)
	}
}

// defaultPodAdmission applies what upstream's always-on admission plugins
// (ServiceAccount, Priority, DefaultTolerationSeconds) add to every pod.
func defaultPodAdmission(spec *corev1.PodSpec) {
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = defaultServiceAccountName
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName

	if spec.Priority == nil {
		if spec.PriorityClassName == "" {
			spec.Priority = ptr.To[int32](0)
		} else if v, ok := systemPriorityClasses[spec.PriorityClassName]; ok {
			spec.Priority = ptr.To(v)
		}
	}
	if spec.PreemptionPolicy == nil {
		spec.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
	}

	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		if !toleratesNoExecute(spec.Tolerations, key) {
			spec.Tolerations = append(spec.Tolerations, corev1.Toleration{
				Key:               key,
				Operator:          corev1.TolerationOpExists,
				Effect:            corev1.TaintEffectNoExecute,
				TolerationSeconds: ptr.To(defaultTolerationSeconds),
			})
		}
	}
}

// toleratesNoExecute reports whether some toleration already covers the
// NoExecute taint with the given key.
func toleratesNoExecute(tolerations []corev1.Toleration, key string) bool {
	for _, t := range tolerations {
		keyMatches := t.Key == key || (t.Key == "" && t.Operator == corev1.TolerationOpExists)
		effectMatches := t.Effect == "" || t.Effect == corev1.TaintEffectNoExecute
		if keyMatches && effectMatches {
			return true
		}
	}
	return false
}

// podQOSClass computes the pod's quality-of-service class from its cpu and
// memory requests and limits (pod-level resources win when present).
func podQOSClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	isQOSResource := func(n corev1.ResourceName) bool {
		return n == corev1.ResourceCPU || n == corev1.ResourceMemory
	}
	positive := func(q resource.Quantity) bool { return q.Sign() > 0 }

	requests := corev1.ResourceList{}
	limits := corev1.ResourceList{}
	guaranteed := true
	add := func(r corev1.ResourceRequirements) {
		found := map[corev1.ResourceName]bool{}
		for n, q := range r.Requests {
			if isQOSResource(n) && positive(q) {
				if cur, ok := requests[n]; ok {
					q.Add(cur)
				}
				requests[n] = q
			}
		}
		for n, q := range r.Limits {
			if isQOSResource(n) && positive(q) {
				found[n] = true
				if cur, ok := limits[n]; ok {
					q.Add(cur)
				}
				limits[n] = q
			}
		}
		if !found[corev1.ResourceCPU] || !found[corev1.ResourceMemory] {
			guaranteed = false
		}
	}
	if spec.Resources != nil {
		add(*spec.Resources)
	} else {
		for _, c := range spec.InitContainers {
			add(c.Resources)
		}
		for _, c := range spec.Containers {
			add(c.Resources)
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for n, req := range requests {
			if lim, ok := limits[n]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// Validation.

// podUpdateForbiddenMsg is upstream's message for changes to fixed pod fields.
const podUpdateForbiddenMsg = "pod updates may not change fields other than `spec.containers[*].image`," +
	"`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations)," +
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"

func validatePod(pod *corev1.Pod) field.ErrorList {
	return validation.PodSpec(&pod.Spec, field.NewPath("spec"))
}

// validatePodUpdate enforces that a pod's spec is fixed except for the
// fields upstream lets users change in place.
func validatePodUpdate(pod, old *corev1.Pod) field.ErrorList {
	allErrs := field.ErrorList{}
	specPath := field.NewPath("spec")

	if newDeadline, oldDeadline := pod.Spec.ActiveDeadlineSeconds, old.Spec.ActiveDeadlineSeconds; oldDeadline != nil {
		p := specPath.Child("activeDeadlineSeconds")
		if newDeadline == nil {
			allErrs = append(allErrs, field.Invalid(p, newDeadline, "must not update from a positive integer to nil value"))
		} else if *newDeadline > *oldDeadline {
			allErrs = append(allErrs, field.Invalid(p, *newDeadline, "must be less than or equal to previous value"))
		}
	}

	if !toleratesAll(pod.Spec.Tolerations, old.Spec.Tolerations) {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("tolerations"), "existing toleration can not be modified except its tolerationSeconds"))
	}

	// Compare the specs with every mutable field copied from the new one.
	mungedOld := old.Spec.DeepCopy()
	if len(pod.Spec.Containers) == len(old.Spec.Containers) {
		for i := range pod.Spec.Containers {
			mungedOld.Containers[i].Image = pod.Spec.Containers[i].Image
		}
	}
	if len(pod.Spec.InitContainers) == len(old.Spec.InitContainers) {
		for i := range pod.Spec.InitContainers {
			mungedOld.InitContainers[i].Image = pod.Spec.InitContainers[i].Image
		}
	}
	mungedOld.ActiveDeadlineSeconds = pod.Spec.ActiveDeadlineSeconds
	mungedOld.Tolerations = pod.Spec.Tolerations
	if old.Spec.TerminationGracePeriodSeconds != nil && *old.Spec.TerminationGracePeriodSeconds < 0 &&
		pod.Spec.TerminationGracePeriodSeconds != nil && *pod.Spec.TerminationGracePeriodSeconds == 1 {
		mungedOld.TerminationGracePeriodSeconds = pod.Spec.TerminationGracePeriodSeconds
	}
	if isSubsetGates(pod.Spec.SchedulingGates, old.Spec.SchedulingGates) {
		mungedOld.SchedulingGates = pod.Spec.SchedulingGates
	}
	if !equality.Semantic.DeepEqual(mungedOld, &pod.Spec) {
		allErrs = append(allErrs, field.Forbidden(specPath, podUpdateForbiddenMsg+"\n"+diff.Diff(mungedOld, &pod.Spec)))
	}
	return allErrs
}

// toleratesAll reports whether every old toleration is still present
// (tolerationSeconds may change).
func toleratesAll(newTols, oldTols []corev1.Toleration) bool {
	for _, o := range oldTols {
		found := false
		for _, n := range newTols {
			if o.Key == n.Key && o.Operator == n.Operator && o.Value == n.Value && o.Effect == n.Effect {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// isSubsetGates reports whether scheduling gates were only removed.
func isSubsetGates(newGates, oldGates []corev1.PodSchedulingGate) bool {
	old := sets.New[string]()
	for _, g := range oldGates {
		old.Insert(g.Name)
	}
	for _, g := range newGates {
		if !old.Has(g.Name) {
			return false
		}
	}
	return true
}

// The table.

var podPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
		printers.Column("Status", "string", "The aggregate status of the containers in this pod."),
		printers.Column("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
		printers.AgeColumn(),
		printers.Wide(printers.Column("IP", "string", corev1.PodStatus{}.SwaggerDoc()["podIP"])),
		printers.Wide(printers.Column("Node", "string", corev1.PodSpec{}.SwaggerDoc()["nodeName"])),
		printers.Wide(printers.Column("Nominated Node", "string", corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"])),
		printers.Wide(printers.Column("Readiness Gates", "string", corev1.PodSpec{}.SwaggerDoc()["readinessGates"])),
	},
	podCells,
)

func podCells(pod *corev1.Pod, now time.Time) []interface{} {
	s := summarizePod(pod)
	restarts := strconv.Itoa(s.restarts)
	if s.restarts != 0 && !s.lastRestart.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", s.restarts, printers.Age(s.lastRestart, now))
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
		printers.Age(pod.CreationTimestamp, now),
		printers.OrDefault(ip, printers.None),
		printers.OrDefault(pod.Spec.NodeName, printers.None),
		printers.OrDefault(pod.Status.NominatedNodeName, printers.None),
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
		return printers.None
	}
	passed := 0
	for _, g := range pod.Spec.ReadinessGates {
		if hasPodCondition(pod, g.ConditionType) {
			passed++
		}
	}
	return fmt.Sprintf("%d/%d", passed, len(pod.Spec.ReadinessGates))
}
