package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DNSRecord names a host in the cluster DNS and routes URL paths under it
// to Services of its namespace, through the gateway.
type DNSRecord struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DNSRecordSpec   `json:"spec"`
	Status DNSRecordStatus `json:"status,omitempty"`
}

// DNSRecordSpec is the host and the paths a DNSRecord asks for.
type DNSRecordSpec struct {
	// Host is the name that resolves, in the cluster DNS, to the gateway, e.g. minik8s.com.
	Host  string          `json:"host"`
	Paths []DNSRecordPath `json:"paths"`
}

// DNSRecordPath routes one URL path prefix to a Service port.
type DNSRecordPath struct {
	// Path is a URL path prefix, "/path1"; the gateway strips it before forwarding (as the seeds' nginx did).
	Path string `json:"path"`
	// Service names a Service in the record's namespace; Port is its port, by number or by name.
	Service string             `json:"service"`
	Port    intstr.IntOrString `json:"port"`
}

// DNSRecordStatus is what the gateway reports about a DNSRecord.
type DNSRecordStatus struct {
	// Address is the gateway address Host resolves to (set by the gateway).
	Address            string             `json:"address,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DNSRecordList is a list of DNSRecords.
type DNSRecordList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []DNSRecord `json:"items"`
}
