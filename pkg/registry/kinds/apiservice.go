package kinds

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
)

// APIServices (apiregistration.k8s.io/v1): the group versions the API
// serves, named <version>.<group>. minik8s publishes its own as Local
// (served by itself); one naming a Service is proxied to by the
// aggregation layer (pkg/apiserver/aggregator.go, docs/design/0041).
func apiServices() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: apiregistrationv1.SchemeGroupVersion.WithResource("apiservices"), Kind: "APIService",
		Status: true, KeepStatusOnCreate: true,
		NameRule: func(string, bool) []string { return nil }, // <version>.<group>, checked with the spec
		Validate: validator(validateAPIService),
		Printer:  apiServicePrinter,
	}
}

func validateAPIService(s *apiregistrationv1.APIService) field.ErrorList {
	var allErrs field.ErrorList
	spec := field.NewPath("spec")
	if want := s.Spec.Version + "." + s.Spec.Group; s.Name != want {
		allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "name"), s.Name, fmt.Sprintf("must be spec.version+\".\"+spec.group: %q", want)))
	}
	if s.Spec.Version == "" {
		allErrs = append(allErrs, field.Required(spec.Child("version"), ""))
	}
	if s.Spec.GroupPriorityMinimum <= 0 || s.Spec.GroupPriorityMinimum > 20000 {
		allErrs = append(allErrs, field.Invalid(spec.Child("groupPriorityMinimum"), s.Spec.GroupPriorityMinimum, "must be positive and less than 20000"))
	}
	if s.Spec.VersionPriority <= 0 || s.Spec.VersionPriority > 1000 {
		allErrs = append(allErrs, field.Invalid(spec.Child("versionPriority"), s.Spec.VersionPriority, "must be positive and less than 1000"))
	}
	if s.Spec.Service == nil && (len(s.Spec.CABundle) > 0 || s.Spec.InsecureSkipTLSVerify) {
		allErrs = append(allErrs, field.Invalid(spec.Child("service"), nil, "a local APIService has no caBundle or insecureSkipTLSVerify"))
	}
	return allErrs
}

var apiServicePrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Service", "string", "The reference to the service that hosts this API endpoint."),
		printers.Column("Available", "string", "Whether this service is available."),
		printers.AgeColumn(),
	},
	func(s *apiregistrationv1.APIService, now time.Time) []interface{} {
		service := "Local"
		if s.Spec.Service != nil {
			service = s.Spec.Service.Namespace + "/" + s.Spec.Service.Name
		}
		available := "Unknown"
		for _, c := range s.Status.Conditions {
			if c.Type == apiregistrationv1.Available {
				available = string(c.Status)
				if c.Status != apiregistrationv1.ConditionTrue && c.Reason != "" {
					available += " (" + c.Reason + ")"
				}
			}
		}
		return []interface{}{s.Name, service, available, printers.Age(s.CreationTimestamp, now)}
	},
)
