package printers

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RoleBindings and ClusterRoleBindings, as kubectl get prints them:
// NAME, ROLE (Kind/name), AGE, and with -o wide USERS, GROUPS and
// SERVICEACCOUNTS (namespace/name).

// BindingColumns are the columns of a binding kind; what names it in the
// descriptions ("roleBinding", "clusterRoleBinding"), roleRefDoc describes
// its roleRef.
func BindingColumns(what, roleRefDoc string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		NameColumn(),
		Column("Role", "string", roleRefDoc),
		AgeColumn(),
		Wide(Column("Users", "string", "Users in the "+what)),
		Wide(Column("Groups", "string", "Groups in the "+what)),
		Wide(Column("ServiceAccounts", "string", "ServiceAccounts in the "+what)),
	}
}

// RoleRefCell is the ROLE cell: Role/name or ClusterRole/name.
func RoleRefCell(ref rbacv1.RoleRef) string {
	return ref.Kind + "/" + ref.Name
}

// SubjectCells are the USERS, GROUPS and SERVICEACCOUNTS cells, each a
// list joined with ", "; subjects of another kind are not shown.
func SubjectCells(subjects []rbacv1.Subject) (users, groups, serviceAccounts string) {
	var u, g, sa []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			u = append(u, s.Name)
		case rbacv1.GroupKind:
			g = append(g, s.Name)
		case rbacv1.ServiceAccountKind:
			sa = append(sa, s.Namespace+"/"+s.Name)
		}
	}
	return strings.Join(u, ", "), strings.Join(g, ", "), strings.Join(sa, ", ")
}
