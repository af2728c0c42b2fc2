package defaults

import (
	"net"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func Service(svc *corev1.Service) {
	spec := &svc.Spec
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityNone:
		spec.SessionAffinityConfig = nil
	case corev1.ServiceAffinityClientIP:
		c := spec.SessionAffinityConfig
		if c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
			spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{
				ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To(corev1.DefaultClientIPServiceAffinitySeconds)},
			}
		}
	}
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	externallyAccessible := spec.Type == corev1.ServiceTypeLoadBalancer ||
		spec.Type == corev1.ServiceTypeNodePort ||
		(spec.Type == corev1.ServiceTypeClusterIP && len(spec.ExternalIPs) > 0)
	if externallyAccessible && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if spec.InternalTrafficPolicy == nil && spec.Type != corev1.ServiceTypeExternalName {
		spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer {
		if spec.AllocateLoadBalancerNodePorts == nil {
			spec.AllocateLoadBalancerNodePorts = ptr.To(true)
		}
		for i := range svc.Status.LoadBalancer.Ingress {
			ing := &svc.Status.LoadBalancer.Ingress[i]
			if ing.IP != "" && ing.IPMode == nil {
				ing.IPMode = ptr.To(corev1.LoadBalancerIPModeVIP)
			}
		}
	}
	defaultServiceIPFields(spec)
}

// defaultServiceIPFields normalizes clusterIP/clusterIPs and fills the IP
// family fields the way the upstream service registry does for a
// single-stack cluster. ExternalName services carry none of them.
func defaultServiceIPFields(spec *corev1.ServiceSpec) {
	if spec.Type == corev1.ServiceTypeExternalName {
		return
	}
	if spec.ClusterIP == "" && len(spec.ClusterIPs) > 0 {
		spec.ClusterIP = spec.ClusterIPs[0]
	}
	if spec.ClusterIP != "" && len(spec.ClusterIPs) == 0 {
		spec.ClusterIPs = []string{spec.ClusterIP}
	}
	if spec.IPFamilyPolicy == nil {
		spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
	}
	if len(spec.IPFamilies) == 0 {
		family := corev1.IPv4Protocol
		if ip := net.ParseIP(spec.ClusterIP); ip != nil && ip.To4() == nil {
			family = corev1.IPv6Protocol
		}
		spec.IPFamilies = []corev1.IPFamily{family}
	}
}

func PersistentVolume(pv *corev1.PersistentVolume) {
	if pv.Status.Phase == "" {
		pv.Status.Phase = corev1.VolumePending
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	if pv.Spec.HostPath != nil {
		defaultHostPath(pv.Spec.HostPath)
	}
	DefaultResourceList(pv.Spec.Capacity)
}

func PersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	defaultPersistentVolumeClaimSpec(&pvc.Spec)
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = corev1.ClaimPending
	}
}

func defaultPersistentVolumeClaimSpec(spec *corev1.PersistentVolumeClaimSpec) {
	if spec.VolumeMode == nil {
		spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	DefaultResourceList(spec.Resources.Limits)
	DefaultResourceList(spec.Resources.Requests)
}

func ReplicationController(rc *corev1.ReplicationController) {
	if rc.Spec.Template != nil {
		if labels := rc.Spec.Template.Labels; labels != nil {
			if len(rc.Spec.Selector) == 0 {
				rc.Spec.Selector = copyStringMap(labels)
			}
			if len(rc.Labels) == 0 {
				rc.Labels = copyStringMap(labels)
			}
		}
		PodTemplateSpec(rc.Spec.Template)
	}
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = ptr.To[int32](1)
	}
}

func copyStringMap(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// countSetPointers counts the non-nil pointer fields of a struct such as
// VolumeSource, where exactly one member is expected to be set.
func countSetPointers(structPtr any) int {
	v := reflect.ValueOf(structPtr).Elem()
	n := 0
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}
