package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is minik8s' own API group.
const GroupName = "minik8s.io"

// SchemeGroupVersion is the group version of the kinds of this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

var (
	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme registers the kinds (and metav1 options via metav1.AddToGroupVersion).
	AddToScheme = schemeBuilder.AddToScheme
)

// Resource qualifies a plural resource name with the group, for API errors.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &DNSRecord{}, &DNSRecordList{}, &Function{}, &FunctionList{},
		&Workflow{}, &WorkflowList{}, &WorkflowRun{}, &WorkflowRunList{}, &Trigger{}, &TriggerList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
