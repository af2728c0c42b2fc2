package defaults

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

const (
	// serviceAccountTokenExpirationSeconds is the default lifetime of a
	// projected service account token.
	serviceAccountTokenExpirationSeconds int64 = 3600
)

// PodTemplateSpec defaults the pod spec inside a workload template.
// Templates get the PodSpec defaults but none of the Pod-only ones.
func PodTemplateSpec(t *corev1.PodTemplateSpec) {
	if t == nil {
		return
	}
	PodSpec(&t.Spec)
}

// PodSpec applies the defaults shared by Pods and pod templates.
func PodSpec(spec *corev1.PodSpec) {
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
		ResourceList(spec.Resources.Limits)
		ResourceList(spec.Resources.Requests)
	}
	if spec.Overhead != nil {
		ResourceList(spec.Overhead)
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
	ResourceList(c.Resources.Limits)
	ResourceList(c.Resources.Requests)
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
		HostPath(src.HostPath)
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
	if src.Image != nil && src.Image.PullPolicy == "" {
		// As a container's imagePullPolicy.
		if imageTag(src.Image.Reference) == "latest" {
			src.Image.PullPolicy = corev1.PullAlways
		} else {
			src.Image.PullPolicy = corev1.PullIfNotPresent
		}
	}
	if src.ISCSI != nil && src.ISCSI.ISCSIInterface == "" {
		src.ISCSI.ISCSIInterface = "default"
	}
}

// HostPath gives a hostPath volume its type (unset: no check).
func HostPath(h *corev1.HostPathVolumeSource) {
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

// ResourceList rounds every quantity up to milli precision, as the
// apiserver does for all resource lists.
func ResourceList(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(-3)
		list[name] = q
	}
}

// RequestsFromLimits makes a limit without a request the request too.
func RequestsFromLimits(r *corev1.ResourceRequirements) {
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

// HostNetworkPorts makes a host-network container's ports host ports.
func HostNetworkPorts(containers []corev1.Container) {
	for i := range containers {
		for j := range containers[i].Ports {
			p := &containers[i].Ports[j]
			if p.HostPort == 0 {
				p.HostPort = p.ContainerPort
			}
		}
	}
}
