package kinds

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// ResourceQuotas: what a namespace may use (spec.hard, scopes), and what
// it uses (status, the resourcequota controller's and the ResourceQuota
// admission's).
func resourceQuotas() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: corev1.SchemeGroupVersion.WithResource("resourcequotas"), Kind: "ResourceQuota",
		Namespaced: true, ShortNames: []string{"quota"}, Status: true, NoGeneration: true,
		NameRule: apivalidation.NameIsDNSSubdomain,
		Default: defaulter(func(q *corev1.ResourceQuota) {
			defaults.ResourceList(q.Spec.Hard)
			defaults.ResourceList(q.Status.Hard)
			defaults.ResourceList(q.Status.Used)
		}),
		Validate: validator(validateResourceQuota),
		Printer:  resourceQuotaPrinter,
	}
}

// standardQuotaResources are the quota names without a domain that
// Kubernetes knows (hugepages-<size> and requests.hugepages-<size> too).
var standardQuotaResources = sets.New[corev1.ResourceName](
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceRequestsStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
	corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
	corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
)

// integerQuotaResources are counted in whole objects.
var integerQuotaResources = sets.New[corev1.ResourceName](
	corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
	corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
)

// podScopeResources are what a pod scope may limit; BestEffort limits
// the pod count alone.
var podScopeResources = sets.New[corev1.ResourceName](
	corev1.ResourcePods, corev1.ResourceCPU, corev1.ResourceMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
)

var quotaScopes = []corev1.ResourceQuotaScope{
	corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
	corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort,
	corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity,
}

func validateResourceQuota(q *corev1.ResourceQuota) field.ErrorList {
	spec, status := field.NewPath("spec"), field.NewPath("status")
	allErrs := validateQuotaList(q.Spec.Hard, spec.Child("hard"))
	allErrs = append(allErrs, validateQuotaList(q.Status.Hard, status.Child("hard"))...)
	allErrs = append(allErrs, validateQuotaList(q.Status.Used, status.Child("used"))...)
	allErrs = append(allErrs, validateQuotaScopes(q, spec.Child("scopes"), q.Spec.Scopes)...)
	if sel := q.Spec.ScopeSelector; sel != nil {
		selPath := spec.Child("scopeSelector")
		var scopes []corev1.ResourceQuotaScope
		for i, r := range sel.MatchExpressions {
			allErrs = append(allErrs, validateScopeRequirement(r, selPath.Child("matchExpressions").Index(i))...)
			scopes = append(scopes, r.ScopeName)
		}
		allErrs = append(allErrs, validateQuotaScopes(q, selPath, scopes)...)
	}
	return allErrs
}

// validateQuotaList checks quota resource names (a standard name, or one
// with a domain: count/<resource>.<group>, requests.<extended>) and that
// quantities are not negative, counts whole.
func validateQuotaList(list corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, name := range validation.SortedKeys(list) {
		p, q := fldPath.Key(string(name)), list[name]
		if errs := validation.QualifiedName(string(name), p); len(errs) > 0 {
			allErrs = append(allErrs, errs...)
		} else if s := string(name); !strings.Contains(s, "/") && !standardQuotaResources.Has(name) &&
			!strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) && !strings.HasPrefix(s, corev1.ResourceRequestsHugePagesPrefix) {
			allErrs = append(allErrs, field.Invalid(p, s, "must be a standard resource for quota"))
		}
		if q.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(p, q.String(), validation.IsNegativeErrorMsg))
		}
		if integerQuotaResources.Has(name) && q.MilliValue()%1000 != 0 {
			allErrs = append(allErrs, field.Invalid(p, q.String(), "must be an integer"))
		}
	}
	return allErrs
}

// validateQuotaScopes checks scopes (of spec.scopes or the scope
// selector): known, not in conflict, and limiting only what they can.
func validateQuotaScopes(q *corev1.ResourceQuota, fldPath *field.Path, scopes []corev1.ResourceQuotaScope) field.ErrorList {
	var allErrs field.ErrorList
	if len(scopes) == 0 {
		return nil
	}
	for _, s := range scopes {
		if !slices.Contains(quotaScopes, s) {
			allErrs = append(allErrs, field.Invalid(fldPath, s, "unsupported scope"))
		}
		for name := range q.Spec.Hard {
			if !scopeLimits(s, name) {
				allErrs = append(allErrs, field.Invalid(fldPath, scopes, "unsupported scope applied to resource"))
				break
			}
		}
	}
	has := func(s corev1.ResourceQuotaScope) bool { return slices.Contains(scopes, s) }
	if has(corev1.ResourceQuotaScopeTerminating) && has(corev1.ResourceQuotaScopeNotTerminating) ||
		has(corev1.ResourceQuotaScopeBestEffort) && has(corev1.ResourceQuotaScopeNotBestEffort) {
		allErrs = append(allErrs, field.Invalid(fldPath, scopes, "conflicting scopes"))
	}
	return allErrs
}

// scopeLimits says whether a quota of scope may limit name.
func scopeLimits(scope corev1.ResourceQuotaScope, name corev1.ResourceName) bool {
	switch scope {
	case corev1.ResourceQuotaScopeBestEffort:
		return name == corev1.ResourcePods
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return podScopeResources.Has(name)
	}
	return true
}

func validateScopeRequirement(r corev1.ScopedResourceSelectorRequirement, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if !slices.Contains(quotaScopes, r.ScopeName) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("scopeName"), r.ScopeName, "unsupported scope"))
	}
	switch r.ScopeName {
	case corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeTerminating,
		corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		if r.Operator != corev1.ScopeSelectorOpExists {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("operator"), r.Operator,
				fmt.Sprintf("must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or %s", r.ScopeName)))
		}
	}
	switch r.Operator {
	case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
		if len(r.Values) == 0 {
			allErrs = append(allErrs, field.Required(fldPath.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
		}
	case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
		if len(r.Values) != 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("values"), r.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("operator"), r.Operator, []string{
			string(corev1.ScopeSelectorOpIn), string(corev1.ScopeSelectorOpNotIn),
			string(corev1.ScopeSelectorOpExists), string(corev1.ScopeSelectorOpDoesNotExist)}))
	}
	return allErrs
}

// The table: kubectl's columns, each tracked resource as used/hard,
// limits.* in LIMIT and the rest in REQUEST.

var resourceQuotaPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.AgeColumn(),
		printers.Column("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
		printers.Column("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
	},
	func(q *corev1.ResourceQuota, now time.Time) []interface{} {
		var requests, limits []string
		for _, name := range validation.SortedKeys(q.Status.Hard) {
			used, hard := q.Status.Used[name], q.Status.Hard[name]
			cell := fmt.Sprintf("%s: %s/%s", name, used.String(), hard.String())
			if strings.HasPrefix(string(name), "limits.") {
				limits = append(limits, cell)
			} else {
				requests = append(requests, cell)
			}
		}
		return []interface{}{q.Name, printers.Age(q.CreationTimestamp, now), strings.Join(requests, ", "), strings.Join(limits, ", ")}
	},
)
