package defaults

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// The defaults RoleBindings and ClusterRoleBindings share, as Kubernetes'
// pkg/apis/rbac/v1/defaults.go sets them.

// RoleRef defaults a binding's roleRef.apiGroup to rbac.authorization.k8s.io.
func RoleRef(ref *rbacv1.RoleRef) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
}

// Subjects defaults the apiGroup of User and Group subjects to
// rbac.authorization.k8s.io; a ServiceAccount's stays the core group "".
func Subjects(subjects []rbacv1.Subject) {
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}
