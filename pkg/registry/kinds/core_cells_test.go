package kinds

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	gkNode      = schema.GroupKind{Kind: "Node"}
	gkEndpoints = schema.GroupKind{Kind: "Endpoints"}
	gkEvent     = schema.GroupKind{Kind: "Event"}
)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func TestNodeCells(t *testing.T) {
	ready := func(s corev1.ConditionStatus) []corev1.NodeCondition {
		return []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: s}}
	}
	runCellCases(t, []cellCase{
		{
			name: "ready control plane",
			gk:   gkNode,
			obj: &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: "cp", CreationTimestamp: ago(49 * time.Hour), Labels: map[string]string{
					"node-role.kubernetes.io/control-plane": "",
					"node-role.kubernetes.io/etcd":          "true",
					"kubernetes.io/role":                    "control-plane",
					"kubernetes.io/hostname":                "cp",
				}},
				Status: corev1.NodeStatus{
					Conditions: ready(corev1.ConditionTrue),
					Addresses: []corev1.NodeAddress{
						{Type: corev1.NodeHostName, Address: "cp"},
						{Type: corev1.NodeInternalIP, Address: "192.168.1.10"},
						{Type: corev1.NodeExternalIP, Address: "203.0.113.7"},
					},
					NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OSImage: "Ubuntu 24.04", KernelVersion: "6.8.0", ContainerRuntimeVersion: "containerd://2.0.0"},
				},
			},
			want: map[string]interface{}{
				"Name": "cp", "Status": "Ready", "Roles": "control-plane,etcd", "Age": "2d1h", "Version": "v1.37.2",
				"Internal-IP": "192.168.1.10", "External-IP": "203.0.113.7", "OS-Image": "Ubuntu 24.04",
				"Kernel-Version": "6.8.0", "Container-Runtime": "containerd://2.0.0",
			},
		},
		{
			name: "cordoned worker",
			gk:   gkNode,
			obj: &corev1.Node{
				ObjectMeta: objMeta("w1"),
				Spec:       corev1.NodeSpec{Unschedulable: true},
				Status:     corev1.NodeStatus{Conditions: ready(corev1.ConditionTrue)},
			},
			want: map[string]interface{}{
				"Status": "Ready,SchedulingDisabled", "Roles": "<none>", "Version": "",
				"Internal-IP": "<none>", "External-IP": "<none>", "OS-Image": "<unknown>", "Kernel-Version": "<unknown>", "Container-Runtime": "<unknown>",
			},
		},
		{
			name: "not ready",
			gk:   gkNode,
			obj:  &corev1.Node{ObjectMeta: objMeta("w2"), Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionUnknown)}},
			want: map[string]interface{}{"Status": "NotReady"},
		},
		{
			name: "no conditions",
			gk:   gkNode,
			obj:  &corev1.Node{ObjectMeta: objMeta("w3"), Spec: corev1.NodeSpec{Unschedulable: true}},
			want: map[string]interface{}{"Status": "Unknown,SchedulingDisabled"},
		},
	})
}

func TestEndpointsCells(t *testing.T) {
	addrs := func(ips ...string) []corev1.EndpointAddress {
		out := make([]corev1.EndpointAddress, len(ips))
		for i, ip := range ips {
			out[i].IP = ip
		}
		return out
	}
	runCellCases(t, []cellCase{
		{
			name: "no subsets",
			gk:   gkEndpoints,
			obj:  &corev1.Endpoints{ObjectMeta: objMeta("web")},
			want: map[string]interface{}{"Endpoints": "<none>"},
		},
		{
			name: "two addresses",
			gk:   gkEndpoints,
			obj: &corev1.Endpoints{ObjectMeta: objMeta("web"), Subsets: []corev1.EndpointSubset{
				{Addresses: addrs("10.244.0.5", "10.244.0.6"), Ports: []corev1.EndpointPort{{Port: 8080}}},
			}},
			want: map[string]interface{}{"Endpoints": "10.244.0.5:8080,10.244.0.6:8080"},
		},
		{
			name: "truncated",
			gk:   gkEndpoints,
			obj: &corev1.Endpoints{ObjectMeta: objMeta("web"), Subsets: []corev1.EndpointSubset{
				{Addresses: addrs("10.0.0.1", "10.0.0.2"), Ports: []corev1.EndpointPort{{Port: 80}, {Port: 443}}},
				{Addresses: addrs("fd00::1")},
			}},
			want: map[string]interface{}{"Endpoints": "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 2 more..."},
		},
	})
}

func TestSimpleCoreCells(t *testing.T) {
	runCellCases(t, []cellCase{
		{
			name: "namespace",
			gk:   schema.GroupKind{Kind: "Namespace"},
			obj:  &corev1.Namespace{ObjectMeta: objMeta("dev"), Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
			want: map[string]interface{}{"Name": "dev", "Status": "Active", "Age": "10m"},
		},
		{
			name: "configmap",
			gk:   schema.GroupKind{Kind: "ConfigMap"},
			obj: &corev1.ConfigMap{ObjectMeta: objMeta("cfg"), Data: map[string]string{"a": "1", "b": "2"},
				BinaryData: map[string][]byte{"c": {1}}},
			want: map[string]interface{}{"Name": "cfg", "Data": int64(3), "Age": "10m"},
		},
		{
			name: "secret",
			gk:   schema.GroupKind{Kind: "Secret"},
			obj: &corev1.Secret{ObjectMeta: objMeta("tls"), Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{"tls.crt": nil, "tls.key": nil}, StringData: map[string]string{"tls.key": "", "ca.crt": ""}},
			want: map[string]interface{}{"Name": "tls", "Type": "kubernetes.io/tls", "Data": int64(3)},
		},
		{
			name: "service account",
			gk:   schema.GroupKind{Kind: "ServiceAccount"},
			obj:  &corev1.ServiceAccount{ObjectMeta: objMeta("default")},
			want: map[string]interface{}{"Name": "default", "Secrets": int64(0), "Age": "10m"},
		},
	})
}

func TestEventCells(t *testing.T) {
	runCellCases(t, []cellCase{
		{
			name: "core event",
			gk:   gkEvent,
			obj: &corev1.Event{
				ObjectMeta:     objMeta("web.17f"),
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", FieldPath: "spec.containers{a}"},
				Reason:         "BackOff", Type: corev1.EventTypeWarning, Message: "Back-off restarting failed container\n",
				Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
				FirstTimestamp: ago(time.Hour), LastTimestamp: ago(30 * time.Second), Count: 7,
			},
			want: map[string]interface{}{
				"Last Seen": "30s", "Type": "Warning", "Reason": "BackOff", "Object": "pod/web",
				"Subobject": "spec.containers{a}", "Source": "kubelet, node-1",
				"Message": "Back-off restarting failed container", "First Seen": "60m", "Count": int64(7), "Name": "web.17f",
			},
		},
		{
			name: "events.k8s.io style singleton",
			gk:   gkEvent,
			obj: &corev1.Event{
				ObjectMeta:          objMeta("n.1"),
				InvolvedObject:      corev1.ObjectReference{Kind: "Node"},
				Reason:              "Starting",
				EventTime:           metav1.NewMicroTime(now.Add(-2 * time.Minute)),
				ReportingController: "kube-proxy",
			},
			want: map[string]interface{}{"Last Seen": "2m", "First Seen": "2m", "Object": "node", "Source": "kube-proxy", "Count": int64(1)},
		},
		{
			name: "series",
			gk:   gkEvent,
			obj: &corev1.Event{
				ObjectMeta: objMeta("s.1"), FirstTimestamp: ago(time.Hour), Count: 1,
				Series: &corev1.EventSeries{Count: 12, LastObservedTime: metav1.NewMicroTime(now.Add(-5 * time.Second))},
			},
			want: map[string]interface{}{"Last Seen": "5s", "Count": int64(12)},
		},
		{
			name: "no timestamps",
			gk:   gkEvent,
			obj:  &corev1.Event{ObjectMeta: objMeta("x")},
			want: map[string]interface{}{"Last Seen": "<unknown>", "First Seen": "<unknown>"},
		},
	})
}
