package endpoints

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/minik8s/minik8s/pkg/controller/podutil"
)

// FindPort is the port number that a service port's targetPort names in
// pod: a number is taken as is (0 means the service port itself), a name
// is looked up among the ports of the pod's containers (and restartable
// init containers) with the service port's protocol.
func FindPort(pod *corev1.Pod, sp *corev1.ServicePort) (int32, error) {
	tp := sp.TargetPort
	if tp.Type == intstr.Int {
		if tp.IntVal == 0 {
			return sp.Port, nil
		}
		return tp.IntVal, nil
	}
	if tp.StrVal == "" {
		return sp.Port, nil
	}
	proto := sp.Protocol
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	containers := pod.Spec.Containers
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			containers = append(containers[:len(containers):len(containers)], c)
		}
	}
	for _, c := range containers {
		for _, p := range c.Ports {
			pp := p.Protocol
			if pp == "" {
				pp = corev1.ProtocolTCP
			}
			if p.Name == tp.StrVal && pp == proto {
				return p.ContainerPort, nil
			}
		}
	}
	return 0, fmt.Errorf("pod %s/%s has no %s port named %q", pod.Namespace, pod.Name, proto, tp.StrVal)
}

// ShouldBeInEndpoints: pod has an IP and has not finished; a pod being
// deleted counts only with includeTerminating.
func ShouldBeInEndpoints(pod *corev1.Pod, includeTerminating bool) bool {
	if pod.Status.PodIP == "" || podutil.IsTerminal(pod) {
		return false
	}
	return includeTerminating || pod.DeletionTimestamp == nil
}

// Hostname is the DNS hostname pod has within svc: its spec.hostname
// when its spec.subdomain names svc, otherwise none.
func Hostname(pod *corev1.Pod, svc *corev1.Service) string {
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace {
		return pod.Spec.Hostname
	}
	return ""
}
