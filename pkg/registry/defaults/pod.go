package defaults

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

const (
	// defaultServiceAccountName is what the ServiceAccount admission plugin
	// puts in pods that do not name a service account.
	defaultServiceAccountName = "default"
	// defaultTolerationSeconds is what the DefaultTolerationSeconds admission
	// plugin uses for the not-ready and unreachable NoExecute taints.
	defaultTolerationSeconds int64 = 300
	// serviceAccountTokenExpirationSeconds is the default lifetime of a
	// projected service account token.
	serviceAccountTokenExpirationSeconds int64 = 3600
)

// systemPriorityClasses are the built-in priority classes the Priority
// admission plugin resolves without looking at the API.
var systemPriorityClasses = map[string]int32{
	"system-cluster-critical": 2000000000,
	"system-node-critical":    2000001000,
}

// Pod applies the pod-only defaults on top of the shared PodSpec ones.
func Pod(pod *corev1.Pod) {
	defaultPodSpec(&pod.Spec)
	spec := &pod.Spec

	// If limits are set but requests are not, requests default to limits.
	// Upstream does this for Pods only, never for pod templates.
	for i := range spec.Containers {
		defaultRequestsFromLimits(&spec.Containers[i].Resources)
	}
	for i := range spec.InitContainers {
		defaultRequestsFromLimits(&spec.InitContainers[i].Resources)
	}
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = ptr.To(corev1.DefaultEnableServiceLinks)
	}
	if spec.HostNetwork {
		defaultHostNetworkPorts(spec.Containers)
		defaultHostNetworkPorts(spec.InitContainers)
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

// PodTemplateSpec defaults the pod spec inside a workload template.
// Templates get the PodSpec defaults but none of the Pod-only ones.
func PodTemplateSpec(t *corev1.PodTemplateSpec) {
	if t == nil {
		return
	}
	defaultPodSpec(&t.Spec)
}

// defaultPodSpec applies the defaults shared by Pods and pod templates.
func defaultPodSpec(spec *corev1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	// v1 keeps the deprecated serviceAccount field in sync with
	// serviceAccountName (done by conversion upstream).
	if spec.ServiceAccountName == "" && spec.DeprecatedServiceAccount != "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	if spec.ServiceAccountName != "" {
		spec.DeprecatedServiceAccount = spec.ServiceAccountName
	}

	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		defaultContainer((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	if spec.Resources != nil {
		DefaultResourceList(spec.Resources.Limits)
		DefaultResourceList(spec.Resources.Requests)
	}
	if spec.Overhead != nil {
		DefaultResourceList(spec.Overhead)
	}
}

// defaultContainer applies the per-container defaults.
func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = corev1.PullAlways
		} else {
			c.ImagePullPolicy = corev1.PullIfNotPresent
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil {
			defaultObjectFieldSelector(vf.FieldRef)
		}
	}
	DefaultResourceList(c.Resources.Limits)
	DefaultResourceList(c.Resources.Requests)
	defaultProbe(c.LivenessProbe)
	defaultProbe(c.ReadinessProbe)
	defaultProbe(c.StartupProbe)
	if c.Lifecycle != nil {
		defaultLifecycleHandler(c.Lifecycle.PostStart)
		defaultLifecycleHandler(c.Lifecycle.PreStop)
	}
}

// imageTag returns the tag of an image reference the way the kubelet's
// image-name parser sees it: "latest" when there is neither a tag nor a
// digest, "" when there is only a digest.
func imageTag(image string) string {
	if image == "" {
		return ""
	}
	name := image
	hasDigest := false
	if i := strings.Index(name, "@"); i >= 0 {
		name = name[:i]
		hasDigest = true
	}
	last := name
	if i := strings.LastIndex(name, "/"); i >= 0 {
		last = name[i+1:]
	}
	if i := strings.LastIndex(last, ":"); i >= 0 {
		return last[i+1:]
	}
	if hasDigest {
		return ""
	}
	return "latest"
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGetAction(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptr.To("")
	}
}

func defaultLifecycleHandler(h *corev1.LifecycleHandler) {
	if h != nil {
		defaultHTTPGetAction(h.HTTPGet)
	}
}

func defaultHTTPGetAction(a *corev1.HTTPGetAction) {
	if a == nil {
		return
	}
	if a.Path == "" {
		a.Path = "/"
	}
	if a.Scheme == "" {
		a.Scheme = corev1.URISchemeHTTP
	}
}

func defaultObjectFieldSelector(s *corev1.ObjectFieldSelector) {
	if s.APIVersion == "" {
		s.APIVersion = "v1"
	}
}

// defaultVolume applies the per-volume-source defaults.
func defaultVolume(v *corev1.Volume) {
	if countSetPointers(&v.VolumeSource) == 0 {
		v.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	}
	src := &v.VolumeSource
	if src.HostPath != nil {
		DefaultHostPath(src.HostPath)
	}
	if src.Secret != nil && src.Secret.DefaultMode == nil {
		src.Secret.DefaultMode = ptr.To(corev1.SecretVolumeSourceDefaultMode)
	}
	if src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil {
		src.ConfigMap.DefaultMode = ptr.To(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if src.DownwardAPI != nil {
		if src.DownwardAPI.DefaultMode == nil {
			src.DownwardAPI.DefaultMode = ptr.To(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		defaultDownwardAPIFiles(src.DownwardAPI.Items)
	}
	if src.Projected != nil {
		if src.Projected.DefaultMode == nil {
			src.Projected.DefaultMode = ptr.To(corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range src.Projected.Sources {
			ps := &src.Projected.Sources[i]
			if ps.DownwardAPI != nil {
				defaultDownwardAPIFiles(ps.DownwardAPI.Items)
			}
			if ps.ServiceAccountToken != nil && ps.ServiceAccountToken.ExpirationSeconds == nil {
				ps.ServiceAccountToken.ExpirationSeconds = ptr.To(serviceAccountTokenExpirationSeconds)
			}
		}
	}
	if src.Ephemeral != nil && src.Ephemeral.VolumeClaimTemplate != nil {
		defaultPersistentVolumeClaimSpec(&src.Ephemeral.VolumeClaimTemplate.Spec)
	}
	if src.ISCSI != nil && src.ISCSI.ISCSIInterface == "" {
		src.ISCSI.ISCSIInterface = "default"
	}
}

func DefaultHostPath(h *corev1.HostPathVolumeSource) {
	if h.Type == nil {
		h.Type = ptr.To(corev1.HostPathUnset)
	}
}

func defaultDownwardAPIFiles(items []corev1.DownwardAPIVolumeFile) {
	for i := range items {
		if items[i].FieldRef != nil {
			defaultObjectFieldSelector(items[i].FieldRef)
		}
	}
}

// defaultResourceList rounds every quantity up to milli precision, as the
// apiserver does for all resource lists.
func DefaultResourceList(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(-3)
		list[name] = q
	}
}

func defaultRequestsFromLimits(r *corev1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = q.DeepCopy()
		}
	}
}

func defaultHostNetworkPorts(containers []corev1.Container) {
	for i := range containers {
		for j := range containers[i].Ports {
			p := &containers[i].Ports[j]
			if p.HostPort == 0 {
				p.HostPort = p.ContainerPort
			}
		}
	}
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
