package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Endpoints a user writes for a Service without a selector are mirrored
// into EndpointSlices, through create, update and delete, as Kubernetes'
// endpointslicemirroring controller does.
func TestEndpointSliceMirroring(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	if _, err := c.client.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "external"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	endpoints := c.client.CoreV1().Endpoints("default")
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "external", Labels: map[string]string{"team": "a"}},
		Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Name: "http", Port: 80}},
			Addresses: []corev1.EndpointAddress{{IP: "10.1.2.3"}}, NotReadyAddresses: []corev1.EndpointAddress{{IP: "fd00::1"}}}}}
	if _, err := endpoints.Create(ctx, ep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slicesOf := func() []discoveryv1.EndpointSlice {
		list, err := c.client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=external"})
		if err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	waitFor := func(what string, ok func([]discoveryv1.EndpointSlice) bool) {
		t.Helper()
		var got []discoveryv1.EndpointSlice
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
			got = slicesOf()
			return ok(got), nil
		})
		if err != nil {
			t.Fatalf("%s: slices %+v", what, got)
		}
	}
	address := func(s discoveryv1.EndpointSlice) string {
		if len(s.Endpoints) != 1 || len(s.Endpoints[0].Addresses) != 1 {
			return ""
		}
		return s.Endpoints[0].Addresses[0]
	}
	waitFor("mirrored on create", func(s []discoveryv1.EndpointSlice) bool {
		if len(s) != 2 {
			return false
		}
		for _, sl := range s {
			if sl.Labels[discoveryv1.LabelManagedBy] != "endpointslicemirroring-controller.k8s.io" || sl.Labels["team"] != "a" ||
				len(sl.Ports) != 1 || *sl.Ports[0].Port != 80 {
				return false
			}
			switch sl.AddressType {
			case discoveryv1.AddressTypeIPv4:
				if address(sl) != "10.1.2.3" || !*sl.Endpoints[0].Conditions.Ready {
					return false
				}
			case discoveryv1.AddressTypeIPv6:
				if address(sl) != "fd00::1" || *sl.Endpoints[0].Conditions.Ready {
					return false
				}
			}
		}
		return true
	})
	ep, err := endpoints.Get(ctx, "external", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ep.Subsets[0].Addresses = []corev1.EndpointAddress{{IP: "10.2.3.4"}}
	ep.Subsets[0].NotReadyAddresses = nil
	if _, err := endpoints.Update(ctx, ep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("mirrored on update", func(s []discoveryv1.EndpointSlice) bool { return len(s) == 1 && address(s[0]) == "10.2.3.4" })
	if err := endpoints.Delete(ctx, "external", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("removed on delete", func(s []discoveryv1.EndpointSlice) bool { return len(s) == 0 })
}
