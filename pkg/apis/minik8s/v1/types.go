package v1

import (
	corev1 "k8s.io/api/core/v1"
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

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Function is Python code served over HTTP: each revision of its code and
// settings is built into an image, run as pods scaled with the requests
// (from and to zero), and reached at /function/<namespace>/<name> on the
// gateway.
type Function struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FunctionSpec   `json:"spec"`
	Status FunctionStatus `json:"status,omitempty"`
}

// FunctionSpec is the code of a function and how it runs and scales.
type FunctionSpec struct {
	// Runtime is the base the code runs on: python3, or python3-ml (with numpy and scikit-learn).
	Runtime string `json:"runtime"`
	// Handler is module.function, called for each request (default main.handle).
	Handler string `json:"handler,omitempty"`
	// Source is where the code is.
	Source FunctionSource `json:"source"`
	// Scale bounds and steers the number of instances.
	Scale FunctionScale `json:"scale,omitempty"`
	// Env is set in every instance, as a container's env.
	Env []corev1.EnvVar `json:"env,omitempty"`
	// Resources are each instance's requests and limits, as a container's.
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// Timeout is the longest a request may take (default 60s); a slower one answers 504.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// FunctionSource is the function's code: inline, or files in a ConfigMap.
type FunctionSource struct {
	// Inline is the source of the handler's module (module.py), for one-file functions.
	Inline string `json:"inline,omitempty"`
	// ConfigMap names a ConfigMap of the function's namespace whose keys are the files of the
	// function (data or binaryData); a key ending in .zip is an archive unpacked in place.
	ConfigMap *FunctionSourceConfigMap `json:"configMap,omitempty"`
}

// FunctionSourceConfigMap names a ConfigMap holding a function's files.
type FunctionSourceConfigMap struct {
	Name string `json:"name"`
}

// FunctionScale bounds and steers how many instances a function has.
type FunctionScale struct {
	// MinScale is the fewest instances (default 0: scale to zero when idle).
	MinScale *int32 `json:"minScale,omitempty"`
	// MaxScale is the most instances (default 10).
	MaxScale *int32 `json:"maxScale,omitempty"`
	// Target is the requests in flight per instance the autoscaler aims at (default 4).
	Target *int32 `json:"target,omitempty"`
	// ScaleToZeroAfter is how long a function with no request keeps its last instance (default 30s).
	ScaleToZeroAfter *metav1.Duration `json:"scaleToZeroAfter,omitempty"`
}

// FunctionStatus is what the function controller and autoscaler report.
type FunctionStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Revision counts the changes of code or settings: each is built into a new image.
	Revision int64 `json:"revision,omitempty"`
	// Image is the current revision's image in the cluster's registry.
	Image string `json:"image,omitempty"`
	// SourceHash identifies what the current revision was built from.
	SourceHash string `json:"sourceHash,omitempty"`
	// URL is where the function answers, through the gateway.
	URL string `json:"url,omitempty"`
	// Instances and ReadyInstances count the function's pods.
	Instances      int32 `json:"instances"`
	ReadyInstances int32 `json:"readyInstances"`
	// Conditions: Ready (reasons such as BuildFailed, HandlerNotFound, SourceNotFound).
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FunctionList is a list of Functions.
type FunctionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Function `json:"items"`
}
