package kinds

import (
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// PodDisruptionBudgets (policy/v1): how many of the pods a selector
// picks may be down at once by choice; the disruption controller keeps
// their status and pods' eviction (pod_eviction.go) honours it.
func podDisruptionBudgets() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets"), Kind: "PodDisruptionBudget",
		Namespaced: true, ShortNames: []string{"pdb"}, Status: true,
		NameRule: apivalidation.NameIsDNSSubdomain,
		Validate: validator(validatePodDisruptionBudget),
		Printer:  podDisruptionBudgetPrinter,
	}
}

// unhealthyPodEvictionPolicies are the values of spec.unhealthyPodEvictionPolicy.
var unhealthyPodEvictionPolicies = []policyv1.UnhealthyPodEvictionPolicyType{policyv1.AlwaysAllow, policyv1.IfHealthyBudget}

// validatePodDisruptionBudget: at most one of minAvailable and
// maxUnavailable, each a count or a percentage up to 100%; a valid
// selector; a known unhealthy pod eviction policy; and a status whose
// counts are not negative, as Kubernetes checks them. The spec may change
// (Kubernetes allows it since 1.15).
func validatePodDisruptionBudget(pdb *policyv1.PodDisruptionBudget) field.ErrorList {
	spec, specPath := &pdb.Spec, field.NewPath("spec")
	var allErrs field.ErrorList
	if spec.MinAvailable != nil && spec.MaxUnavailable != nil {
		allErrs = append(allErrs, field.Invalid(specPath, "", "minAvailable and maxUnavailable cannot be both set"))
	}
	if spec.MinAvailable != nil {
		allErrs = append(allErrs, validateIntOrPercentTo100(*spec.MinAvailable, specPath.Child("minAvailable"))...)
	}
	if spec.MaxUnavailable != nil {
		allErrs = append(allErrs, validateIntOrPercentTo100(*spec.MaxUnavailable, specPath.Child("maxUnavailable"))...)
	}
	allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector,
		metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: true}, specPath.Child("selector"))...)
	if p := spec.UnhealthyPodEvictionPolicy; p != nil {
		allErrs = append(allErrs, validation.Enum(*p, unhealthyPodEvictionPolicies, specPath.Child("unhealthyPodEvictionPolicy"))...)
	}
	st, stPath := &pdb.Status, field.NewPath("status")
	allErrs = append(allErrs, metav1validation.ValidateConditions(st.Conditions, stPath.Child("conditions"))...)
	for _, f := range []struct {
		name string
		v    int32
	}{{"disruptionsAllowed", st.DisruptionsAllowed}, {"currentHealthy", st.CurrentHealthy}, {"desiredHealthy", st.DesiredHealthy}, {"expectedPods", st.ExpectedPods}} {
		allErrs = append(allErrs, validation.Nonnegative(int64(f.v), stPath.Child(f.name))...)
	}
	return allErrs
}

var podDisruptionBudgetPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Min Available", "string", "The minimum number of pods that must be available."),
		printers.Column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
		printers.Column("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
		printers.AgeColumn(),
	},
	func(pdb *policyv1.PodDisruptionBudget, now time.Time) []interface{} {
		minAvailable, maxUnavailable := "N/A", "N/A"
		if pdb.Spec.MinAvailable != nil {
			minAvailable = pdb.Spec.MinAvailable.String()
		}
		if pdb.Spec.MaxUnavailable != nil {
			maxUnavailable = pdb.Spec.MaxUnavailable.String()
		}
		return []interface{}{pdb.Name, minAvailable, maxUnavailable, int64(pdb.Status.DisruptionsAllowed), printers.Age(pdb.CreationTimestamp, now)}
	},
)
