package integration

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Changing a Service's type with an update that sends back what the old
// type filled in (node ports, cluster IP, traffic policy) works, as in
// Kubernetes: those fields are dropped, and freed node ports can be taken
// again.
func TestServiceTypeChange(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	svcs := c.client.CoreV1().Services("default")
	create := func(name string, nodePort int32) *corev1.Service {
		t.Helper()
		svc, err := svcs.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: nodePort}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	np := create("to-external", 0)
	if np.Spec.Ports[0].NodePort == 0 || np.Spec.ClusterIP == "" || np.Spec.ExternalTrafficPolicy == "" {
		t.Fatalf("NodePort service: %+v", np.Spec)
	}
	np.Spec.Type, np.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.com"
	ext, err := svcs.Update(ctx, np, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("NodePort to ExternalName with the old fields sent back: %v", err)
	}
	if ext.Spec.ClusterIP != "" || ext.Spec.Ports[0].NodePort != 0 || ext.Spec.ExternalTrafficPolicy != "" {
		t.Errorf("ExternalName service keeps %q, node port %d, policy %q", ext.Spec.ClusterIP, ext.Spec.Ports[0].NodePort, ext.Spec.ExternalTrafficPolicy)
	}
	// The freed node port is free again.
	again := create("reuse-port", np.Spec.Ports[0].NodePort)
	// NodePort to ClusterIP keeps the cluster IP and drops the node port.
	ip := again.Spec.ClusterIP
	again.Spec.Type = corev1.ServiceTypeClusterIP
	cip, err := svcs.Update(ctx, again, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("NodePort to ClusterIP with the node port sent back: %v", err)
	}
	if cip.Spec.ClusterIP != ip || cip.Spec.Ports[0].NodePort != 0 {
		t.Errorf("ClusterIP service: IP %q (was %q), node port %d", cip.Spec.ClusterIP, ip, cip.Spec.Ports[0].NodePort)
	}
	// A node port the client asks for with a ClusterIP type is refused.
	cip.Spec.Ports[0].NodePort = 30999
	if _, err := svcs.Update(ctx, cip, metav1.UpdateOptions{}); err == nil {
		t.Error("a ClusterIP service with a node port was accepted")
	}
}
