package proxy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// service makes a ClusterIP Service default/name with the given ports
// ("80/TCP"); tweak adjusts it.
func service(name, clusterIP string, ports []corev1.ServicePort, tweak ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: clusterIP, Ports: ports},
	}
	for _, f := range tweak {
		f(s)
	}
	return s
}

func port(name string, proto corev1.Protocol, p, nodePort int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Protocol: proto, Port: p, NodePort: nodePort}
}

// slice makes an EndpointSlice for default/svc with ready endpoints at
// ips, serving the named ports.
func slice(svc string, ips []string, ports ...discoveryv1.EndpointPort) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: svc + "-" + fmt.Sprint(len(ips)),
			Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       ports,
	}
	for _, ip := range ips {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return s
}

func epPort(name string, proto corev1.Protocol, p int32) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{Name: ptr.To(name), Protocol: ptr.To(proto), Port: ptr.To(p)}
}

// checkRules reports what rules text (an nft dump, an iptables-restore
// input) lacks or wrongly has: whole lines, substrings, absent substrings.
func checkRules(t *testing.T, text string, lines, substrings, absent []string) {
	t.Helper()
	all := strings.Split(text, "\n")
	for _, w := range lines {
		if !slices.Contains(all, w) {
			t.Errorf("rules lack the line\n%s\nin:\n%s", w, text)
		}
	}
	for _, w := range substrings {
		if !strings.Contains(text, w) {
			t.Errorf("rules lack %q:\n%s", w, text)
		}
	}
	for _, a := range absent {
		if strings.Contains(text, a) {
			t.Errorf("rules have %q:\n%s", a, text)
		}
	}
}

// replaceAll applies r to every string of in.
func replaceAll(r *strings.Replacer, in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = r.Replace(s)
	}
	return out
}
