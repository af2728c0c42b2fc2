package kinds

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// Roles: the rules of what may be done in one namespace, which
// RoleBindings grant. Stored only: enforcing them is the authorizer's.
func roles() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: rbacv1.SchemeGroupVersion.WithResource("roles"), Kind: "Role",
		Namespaced: true, NoGeneration: true,
		NameRule: validation.PathSegmentName,
		Validate: validator(validateRole),
		// Kubernetes has no columns of its own for roles: NAME, CREATED AT.
		Printer: printers.Default,
	}
}

// Validation.

func validateRole(r *rbacv1.Role) field.ErrorList {
	// A namespaced role's rules cannot apply to non-resource URLs.
	return validation.PolicyRules(r.Rules, true, field.NewPath("rules"))
}
