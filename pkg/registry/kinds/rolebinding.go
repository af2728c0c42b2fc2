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

// RoleBindings: grant a Role, or a ClusterRole's rules in the binding's
// namespace, to users, groups and service accounts. The roleRef never
// changes. Stored only: enforcing them is the authorizer's.
func roleBindings() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: rbacv1.SchemeGroupVersion.WithResource("rolebindings"), Kind: "RoleBinding",
		Namespaced: true, NoGeneration: true,
		Default:        defaulter(defaultRoleBinding),
		NameRule:       validation.PathSegmentName,
		Validate:       validator(validateRoleBinding),
		ValidateUpdate: updateValidator(validateRoleBindingUpdate),
		Printer:        roleBindingPrinter,
	}
}

// Defaults.

func defaultRoleBinding(b *rbacv1.RoleBinding) {
	defaults.RoleRef(&b.RoleRef)
	defaults.Subjects(b.Subjects)
}

// Validation.

func validateRoleBinding(b *rbacv1.RoleBinding) field.ErrorList {
	allErrs := validation.RoleRef(b.RoleRef, []string{"Role", "ClusterRole"}, field.NewPath("roleRef"))
	return append(allErrs, validation.Subjects(b.Subjects, true, field.NewPath("subjects"))...)
}

func validateRoleBindingUpdate(b, old *rbacv1.RoleBinding) field.ErrorList {
	return validation.RoleRefUpdate(b.RoleRef, old.RoleRef, field.NewPath("roleRef"))
}

// The table.

var roleBindingPrinter = printers.Typed(
	printers.BindingColumns("roleBinding", rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]),
	func(b *rbacv1.RoleBinding, now time.Time) []interface{} {
		users, groups, sas := printers.SubjectCells(b.Subjects)
		return []interface{}{b.Name, printers.RoleRefCell(b.RoleRef), printers.Age(b.CreationTimestamp, now), users, groups, sas}
	},
)
