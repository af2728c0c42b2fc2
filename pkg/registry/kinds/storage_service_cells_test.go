package kinds

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

var gkService = schema.GroupKind{Kind: "Service"}

func TestServiceCells(t *testing.T) {
	svc := func(typ corev1.ServiceType, mutate func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{
			ObjectMeta: objMeta("web"),
			Spec: corev1.ServiceSpec{
				Type: typ, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"},
				Ports:    []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}},
				Selector: map[string]string{"app": "web"},
			},
		}
		if mutate != nil {
			mutate(s)
		}
		return s
	}
	runCellCases(t, []cellCase{
		{
			name: "cluster ip",
			gk:   gkService,
			obj:  svc(corev1.ServiceTypeClusterIP, nil),
			want: map[string]interface{}{"Name": "web", "Type": "ClusterIP", "Cluster-IP": "10.96.0.10", "External-IP": "<none>", "Port(s)": "80/TCP", "Age": "10m", "Selector": "app=web"},
		},
		{
			name: "type defaults to ClusterIP",
			gk:   gkService,
			obj:  svc("", func(s *corev1.Service) { s.Spec.Selector = nil }),
			want: map[string]interface{}{"Type": "ClusterIP", "Selector": "<none>"},
		},
		{
			name: "headless, several ports",
			gk:   gkService,
			obj: svc(corev1.ServiceTypeClusterIP, func(s *corev1.Service) {
				s.Spec.ClusterIP, s.Spec.ClusterIPs = "None", []string{"None"}
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: 53, Protocol: corev1.ProtocolUDP})
			}),
			want: map[string]interface{}{"Cluster-IP": "None", "Port(s)": "80/TCP,53/UDP"},
		},
		{
			name: "node port",
			gk:   gkService,
			obj: svc(corev1.ServiceTypeNodePort, func(s *corev1.Service) {
				s.Spec.Ports[0].NodePort = 30080
			}),
			want: map[string]interface{}{"Type": "NodePort", "External-IP": "<none>", "Port(s)": "80:30080/TCP"},
		},
		{
			name: "external ips",
			gk:   gkService,
			obj: svc(corev1.ServiceTypeClusterIP, func(s *corev1.Service) {
				s.Spec.ExternalIPs = []string{"1.2.3.4", "5.6.7.8"}
			}),
			want: map[string]interface{}{"External-IP": "1.2.3.4,5.6.7.8"},
		},
		{
			name: "load balancer pending",
			gk:   gkService,
			obj: svc(corev1.ServiceTypeLoadBalancer, func(s *corev1.Service) {
				s.Spec.Ports[0].NodePort = 31000
			}),
			want: map[string]interface{}{"Type": "LoadBalancer", "External-IP": "<pending>", "Port(s)": "80:31000/TCP"},
		},
		{
			name: "load balancer assigned",
			gk:   gkService,
			obj: svc(corev1.ServiceTypeLoadBalancer, func(s *corev1.Service) {
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "lb.example.com"}, {IP: "172.18.0.200"}, {IP: "172.18.0.200"}}
				s.Spec.ExternalIPs = []string{"9.9.9.9"}
			}),
			want: map[string]interface{}{"External-IP": "172.18.0.200,lb.example.com,9.9.9.9"},
		},
		{
			name: "external name without ports",
			gk:   gkService,
			obj: svc(corev1.ServiceTypeExternalName, func(s *corev1.Service) {
				s.Spec.ExternalName = "db.example.com"
				s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.Ports = "", nil, nil
			}),
			want: map[string]interface{}{"Cluster-IP": "<none>", "External-IP": "db.example.com", "Port(s)": "<none>"},
		},
	})
}

func TestVolumeCells(t *testing.T) {
	fs := corev1.PersistentVolumeFilesystem
	runCellCases(t, []cellCase{
		{
			name: "bound pv",
			gk:   schema.GroupKind{Kind: "PersistentVolume"},
			obj: &corev1.PersistentVolume{
				ObjectMeta: objMeta("pv1"),
				Spec: corev1.PersistentVolumeSpec{
					Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")},
					AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadWriteOnce},
					PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
					ClaimRef:                      &corev1.ObjectReference{Namespace: "default", Name: "data"},
					StorageClassName:              "standard",
					VolumeMode:                    &fs,
				},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
			},
			want: map[string]interface{}{
				"Capacity": "5Gi", "Access Modes": "RWO,RWX", "Reclaim Policy": "Retain", "Status": "Bound",
				"Claim": "default/data", "StorageClass": "standard", "VolumeAttributesClass": "<unset>", "Reason": "",
				"Age": "10m", "VolumeMode": "Filesystem",
			},
		},
		{
			name: "terminating pv",
			gk:   schema.GroupKind{Kind: "PersistentVolume"},
			obj: &corev1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: "pv2", DeletionTimestamp: ptr.To(ago(0))},
				Status:     corev1.PersistentVolumeStatus{Phase: corev1.VolumeReleased},
			},
			want: map[string]interface{}{"Status": "Terminating", "Claim": "", "VolumeMode": "<unset>", "Age": "<unknown>"},
		},
		{
			name: "bound pvc",
			gk:   schema.GroupKind{Kind: "PersistentVolumeClaim"},
			obj: &corev1.PersistentVolumeClaim{
				ObjectMeta: objMeta("data"),
				Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: "pv1", StorageClassName: ptr.To("standard")},
				Status: corev1.PersistentVolumeClaimStatus{
					Phase:       corev1.ClaimBound,
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")},
				},
			},
			want: map[string]interface{}{"Status": "Bound", "Volume": "pv1", "Capacity": "5Gi", "Access Modes": "RWO", "StorageClass": "standard"},
		},
		{
			name: "pending pvc",
			gk:   schema.GroupKind{Kind: "PersistentVolumeClaim"},
			obj: &corev1.PersistentVolumeClaim{
				ObjectMeta: objMeta("data"),
				Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
			},
			want: map[string]interface{}{"Status": "Pending", "Volume": "", "Capacity": "", "Access Modes": "", "StorageClass": ""},
		},
	})
}

// TestForeignObjectCells: an object a printer cannot read renders its name
// only, the other cells empty.
func TestForeignObjectCells(t *testing.T) {
	got := render(t, gkService, &corev1.ConfigMap{ObjectMeta: objMeta("web")})
	if got["Name"] != "web" || got["Type"] != nil {
		t.Errorf("foreign object rendered as %v", got)
	}
}
