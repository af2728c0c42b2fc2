package kinds

import (
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/defaults"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
)

// ClusterRoleBindings: grant a ClusterRole across the cluster to users,
// groups and service accounts (named with their namespace). The roleRef
// never changes. Stored only: enforcing them is the authorizer's.
func clusterRoleBindings() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"), Kind: "ClusterRoleBinding",
		NoGeneration:   true,
		Default:        defaulter(defaultClusterRoleBinding),
		NameRule:       validation.PathSegmentName,
		Validate:       validator(validateClusterRoleBinding),
		ValidateUpdate: updateValidator(validateClusterRoleBindingUpdate),
		Printer:        clusterRoleBindingPrinter,
	}
}

// Defaults.

func defaultClusterRoleBinding(b *rbacv1.ClusterRoleBinding) {
	defaults.RoleRef(&b.RoleRef)
	defaults.Subjects(b.Subjects)
}

// Validation.

func validateClusterRoleBinding(b *rbacv1.ClusterRoleBinding) field.ErrorList {
	allErrs := validation.RoleRef(b.RoleRef, []string{"ClusterRole"}, field.NewPath("roleRef"))
	return append(allErrs, validation.Subjects(b.Subjects, false, field.NewPath("subjects"))...)
}

func validateClusterRoleBindingUpdate(b, old *rbacv1.ClusterRoleBinding) field.ErrorList {
	return validation.RoleRefUpdate(b.RoleRef, old.RoleRef, field.NewPath("roleRef"))
}

// The table.

var clusterRoleBindingPrinter = printers.Typed(
	printers.BindingColumns("clusterRoleBinding", rbacv1.ClusterRoleBinding{}.SwaggerDoc()["roleRef"]),
	func(b *rbacv1.ClusterRoleBinding, now time.Time) []interface{} {
		users, groups, sas := printers.SubjectCells(b.Subjects)
		return []interface{}{b.Name, printers.RoleRefCell(b.RoleRef), printers.Age(b.CreationTimestamp, now), users, groups, sas}
	},
)
