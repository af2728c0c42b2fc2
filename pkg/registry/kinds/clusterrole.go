package kinds

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// ClusterRoles: rules over the whole cluster, cluster-scoped resources and
// non-resource URLs, granted by ClusterRoleBindings (or in one namespace
// by RoleBindings). An aggregationRule selects other ClusterRoles whose
// rules the aggregation controller copies in. Stored only: enforcing them
// is the authorizer's.
func clusterRoles() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: rbacv1.SchemeGroupVersion.WithResource("clusterroles"), Kind: "ClusterRole",
		NoGeneration: true,
		NameRule:     validation.PathSegmentName,
		Validate:     validator(validateClusterRole),
		// Kubernetes has no columns of its own for cluster roles: NAME, CREATED AT.
		Printer: printers.Default,
	}
}

// Validation.

func validateClusterRole(r *rbacv1.ClusterRole) field.ErrorList {
	allErrs := validation.PolicyRules(r.Rules, false, field.NewPath("rules"))
	return append(allErrs, validation.AggregationRule(r.AggregationRule, field.NewPath("aggregationRule"))...)
}
