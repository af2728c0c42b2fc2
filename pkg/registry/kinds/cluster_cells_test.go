package kinds

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func TestClusterCells(t *testing.T) {
	gkIngress := schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}
	rules := func(hosts ...string) []networkingv1.IngressRule {
		out := make([]networkingv1.IngressRule, len(hosts))
		for i, h := range hosts {
			out[i].Host = h
		}
		return out
	}

	runCellCases(t, []cellCase{
		{
			name: "endpointslice",
			gk:   schema.GroupKind{Group: "discovery.k8s.io", Kind: "EndpointSlice"},
			obj: &discoveryv1.EndpointSlice{
				ObjectMeta:  objMeta("web-abc"),
				AddressType: discoveryv1.AddressTypeIPv4,
				Ports:       []discoveryv1.EndpointPort{{Port: ptr.To(int32(80))}, {Name: ptr.To("metrics")}, {}},
				Endpoints: []discoveryv1.Endpoint{
					{Addresses: []string{"10.0.0.1"}}, {Addresses: []string{"10.0.0.2"}},
					{Addresses: []string{"10.0.0.3"}}, {Addresses: []string{"10.0.0.4"}},
				},
			},
			want: map[string]interface{}{"AddressType": "IPv4", "Ports": "80,metrics,*", "Endpoints": "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more..."},
		},
		{
			name: "empty endpointslice",
			gk:   schema.GroupKind{Group: "discovery.k8s.io", Kind: "EndpointSlice"},
			obj:  &discoveryv1.EndpointSlice{ObjectMeta: objMeta("web-abc"), AddressType: discoveryv1.AddressTypeIPv4},
			want: map[string]interface{}{"Ports": "<unset>", "Endpoints": "<unset>"},
		},
		{
			name: "lease",
			gk:   schema.GroupKind{Group: "coordination.k8s.io", Kind: "Lease"},
			obj:  &coordinationv1.Lease{ObjectMeta: objMeta("kube-scheduler"), Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("cp_1234")}},
			want: map[string]interface{}{"Name": "kube-scheduler", "Holder": "cp_1234", "Age": "10m"},
		},
		{
			name: "default storage class",
			gk:   schema.GroupKind{Group: "storage.k8s.io", Kind: "StorageClass"},
			obj: &storagev1.StorageClass{
				ObjectMeta:  metav1.ObjectMeta{Name: "standard", CreationTimestamp: created, Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
				Provisioner: "rancher.io/local-path",
			},
			want: map[string]interface{}{
				"Name": "standard (default)", "Provisioner": "rancher.io/local-path", "ReclaimPolicy": "Delete",
				"VolumeBindingMode": "Immediate", "AllowVolumeExpansion": false, "Age": "10m",
			},
		},
		{
			name: "storage class",
			gk:   schema.GroupKind{Group: "storage.k8s.io", Kind: "StorageClass"},
			obj: &storagev1.StorageClass{
				ObjectMeta:           objMeta("fast"),
				ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimRetain),
				VolumeBindingMode:    ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
				AllowVolumeExpansion: ptr.To(true),
			},
			want: map[string]interface{}{"Name": "fast", "ReclaimPolicy": "Retain", "VolumeBindingMode": "WaitForFirstConsumer", "AllowVolumeExpansion": true},
		},
		{
			name: "ingress",
			gk:   gkIngress,
			obj: &networkingv1.Ingress{
				ObjectMeta: objMeta("web"),
				Spec:       networkingv1.IngressSpec{IngressClassName: ptr.To("nginx"), Rules: rules("a.example.com", "b.example.com"), TLS: []networkingv1.IngressTLS{{}}},
				Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{
					{IP: "192.168.49.2"}, {Hostname: "lb.example.com"},
				}}},
			},
			want: map[string]interface{}{
				"Class": "nginx", "Hosts": "a.example.com,b.example.com", "Address": "192.168.49.2,lb.example.com", "Ports": "80, 443", "Age": "10m",
			},
		},
		{
			name: "ingress catch-all",
			gk:   gkIngress,
			obj:  &networkingv1.Ingress{ObjectMeta: objMeta("web"), Spec: networkingv1.IngressSpec{Rules: rules("")}},
			want: map[string]interface{}{"Class": "<none>", "Hosts": "*", "Address": "", "Ports": "80"},
		},
		{
			name: "ingress many hosts",
			gk:   gkIngress,
			obj:  &networkingv1.Ingress{ObjectMeta: objMeta("web"), Spec: networkingv1.IngressSpec{Rules: rules("a", "", "b", "c", "d")}},
			want: map[string]interface{}{"Hosts": "a,b,c + 2 more..."},
		},
	})
}
