package podutil

import (
	"net"

	corev1 "k8s.io/api/core/v1"
)

// ReadyCondition is the Pod's Ready condition; nil when it has none.
func ReadyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// IsReady: the Pod's Ready condition is True.
func IsReady(p *corev1.Pod) bool {
	c := ReadyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsTerminal: the Pod has Succeeded or Failed.
func IsTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// IsActive: the Pod has not finished and is not being deleted.
func IsActive(p *corev1.Pod) bool { return !IsTerminal(p) && p.DeletionTimestamp == nil }

// IsTerminating: the Pod is being deleted but has not finished.
func IsTerminating(p *corev1.Pod) bool { return !IsTerminal(p) && p.DeletionTimestamp != nil }

// IPOfFamily is the Pod's IP of one family (IPv6 when v6); "" when it has
// none of that family.
func IPOfFamily(p *corev1.Pod, v6 bool) string {
	if len(p.Status.PodIPs) == 0 {
		if p.Status.PodIP != "" && IsV6(p.Status.PodIP) == v6 {
			return p.Status.PodIP
		}
		return ""
	}
	for _, ip := range p.Status.PodIPs {
		if IsV6(ip.IP) == v6 {
			return ip.IP
		}
	}
	return ""
}

// IsV6: ip is an IPv6 address.
func IsV6(ip string) bool {
	p := net.ParseIP(ip)
	return p != nil && p.To4() == nil
}
