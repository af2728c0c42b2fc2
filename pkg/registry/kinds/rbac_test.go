package kinds

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	gkRole               = schema.GroupKind{Group: rbacv1.GroupName, Kind: "Role"}
	gkClusterRole        = schema.GroupKind{Group: rbacv1.GroupName, Kind: "ClusterRole"}
	gkRoleBinding        = schema.GroupKind{Group: rbacv1.GroupName, Kind: "RoleBinding"}
	gkClusterRoleBinding = schema.GroupKind{Group: rbacv1.GroupName, Kind: "ClusterRoleBinding"}
)

func podReaderRule() rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}
}

func validRole() *rbacv1.Role {
	return defaulted(&rbacv1.Role{ObjectMeta: nsMeta("pod-reader"), Rules: []rbacv1.PolicyRule{podReaderRule()}})
}

func validClusterRole() *rbacv1.ClusterRole {
	return defaulted(&rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:metrics-reader"},
		Rules: []rbacv1.PolicyRule{
			podReaderRule(),
			{NonResourceURLs: []string{"/metrics", "/healthz/*"}, Verbs: []string{"get"}},
		},
	})
}

// validRoleBinding is what `kubectl create rolebinding` sends, less the
// defaults: the users' and groups' apiGroup and the roleRef's.
func validRoleBinding() *rbacv1.RoleBinding {
	return defaulted(&rbacv1.RoleBinding{
		ObjectMeta: nsMeta("read-pods"),
		RoleRef:    rbacv1.RoleRef{Kind: "Role", Name: "pod-reader"},
		Subjects: []rbacv1.Subject{
			{Kind: "User", Name: "alice"},
			{Kind: "Group", Name: "system:authenticated"},
			{Kind: "ServiceAccount", Name: "builder"}, // the binding's namespace
			{Kind: "ServiceAccount", Name: "ci", Namespace: "tools"},
		},
	})
}

func validClusterRoleBinding() *rbacv1.ClusterRoleBinding {
	return defaulted(&rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "read-metrics"},
		RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: "system:metrics-reader"},
		Subjects: []rbacv1.Subject{
			{Kind: "Group", Name: "monitoring"},
			{Kind: "ServiceAccount", Name: "prometheus", Namespace: "monitoring"},
		},
	})
}

func TestDefaultRBAC(t *testing.T) {
	rb := validRoleBinding()
	if rb.RoleRef.APIGroup != rbacv1.GroupName {
		t.Errorf("roleRef.apiGroup = %q", rb.RoleRef.APIGroup)
	}
	for i, want := range []string{rbacv1.GroupName, rbacv1.GroupName, "", ""} {
		if got := rb.Subjects[i].APIGroup; got != want {
			t.Errorf("subjects[%d] (%s) apiGroup = %q, want %q", i, rb.Subjects[i].Kind, got, want)
		}
	}
	crb := validClusterRoleBinding()
	if crb.RoleRef.APIGroup != rbacv1.GroupName || crb.Subjects[0].APIGroup != rbacv1.GroupName || crb.Subjects[1].APIGroup != "" {
		t.Errorf("cluster role binding defaults: %+v %+v", crb.RoleRef, crb.Subjects)
	}
	// A group given is kept (and then refused by validation), as upstream.
	other := defaulted(&rbacv1.RoleBinding{
		RoleRef:  rbacv1.RoleRef{APIGroup: "example.com", Kind: "Role", Name: "r"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "example.com", Name: "u"}, {Kind: "Robot", Name: "r"}},
	})
	if other.RoleRef.APIGroup != "example.com" || other.Subjects[0].APIGroup != "example.com" || other.Subjects[1].APIGroup != "" {
		t.Errorf("given groups changed: %+v %+v", other.RoleRef, other.Subjects)
	}
	// Idempotent.
	again := mutate(rb, func(*rbacv1.RoleBinding) {})
	defaultObject(again)
	if !equality.Semantic.DeepEqual(again, rb) {
		t.Error("defaulting a defaulted binding changed it")
	}
}

func TestValidateRBAC(t *testing.T) {
	role, cr, rb, crb := validRole(), validClusterRole(), validRoleBinding(), validClusterRoleBinding()
	runCreateCases(t, []createCase{
		{name: "role", obj: role, namespaced: true},
		{name: "role without rules", obj: mutate(role, func(r *rbacv1.Role) { r.Rules = nil }), namespaced: true},
		{name: "role name with colon and uppercase", obj: mutate(role, func(r *rbacv1.Role) { r.Name = "system:Pod_Reader" }), namespaced: true},
		{name: "role name with slash", obj: mutate(role, func(r *rbacv1.Role) { r.Name = "a/b" }), namespaced: true,
			want: []string{"metadata.name: may not contain '/'"}},
		{name: "role name ..", obj: mutate(role, func(r *rbacv1.Role) { r.Name = ".." }), namespaced: true,
			want: []string{"metadata.name"}},
		{name: "role without namespace", obj: mutate(role, func(r *rbacv1.Role) { r.Namespace = "" }), namespaced: true,
			want: []string{"metadata.namespace: Required value"}},
		{name: "rule without verbs", obj: mutate(role, func(r *rbacv1.Role) { r.Rules[0].Verbs = nil }), namespaced: true,
			want: []string{"rules[0].verbs: Required value: verbs must contain at least one value"}},
		{name: "rule without apiGroups", obj: mutate(role, func(r *rbacv1.Role) { r.Rules[0].APIGroups = nil }), namespaced: true,
			want: []string{"rules[0].apiGroups: Required value: resource rules must supply at least one api group"}},
		{name: "rule without resources", obj: mutate(role, func(r *rbacv1.Role) { r.Rules[0].Resources = nil }), namespaced: true,
			want: []string{"rules[0].resources: Required value: resource rules must supply at least one resource"}},
		{name: "second rule empty", obj: mutate(role, func(r *rbacv1.Role) { r.Rules = append(r.Rules, rbacv1.PolicyRule{}) }), namespaced: true,
			want: []string{"rules[1].verbs", "rules[1].apiGroups", "rules[1].resources"}},
		{name: "non-resource URLs in a role", obj: mutate(role, func(r *rbacv1.Role) {
			r.Rules = []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
		}), namespaced: true, want: []string{"rules[0].nonResourceURLs: Invalid value: [\"/metrics\"]: namespaced rules cannot apply to non-resource URLs"}},

		{name: "cluster role", obj: cr},
		{name: "cluster role with aggregation rule and no rules", obj: mutate(cr, func(r *rbacv1.ClusterRole) {
			r.Rules = nil
			r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
				{MatchLabels: map[string]string{"rbac.example.com/aggregate-to-monitoring": "true"}},
			}}
		})},
		{name: "cluster role with namespace", obj: mutate(cr, func(r *rbacv1.ClusterRole) { r.Namespace = "default" }),
			want: []string{"metadata.namespace: Forbidden"}},
		{name: "non-resource URLs with resources", obj: mutate(cr, func(r *rbacv1.ClusterRole) { r.Rules[1].Resources = []string{"pods"} }),
			want: []string{"rules[1].nonResourceURLs: rules cannot apply to both regular resources and non-resource URLs"}},
		{name: "non-resource URLs with apiGroups", obj: mutate(cr, func(r *rbacv1.ClusterRole) { r.Rules[1].APIGroups = []string{""} }),
			want: []string{"rules[1].nonResourceURLs"}},
		{name: "non-resource URLs with resourceNames", obj: mutate(cr, func(r *rbacv1.ClusterRole) { r.Rules[1].ResourceNames = []string{"x"} }),
			want: []string{"rules[1].nonResourceURLs"}},
		{name: "non-resource rule without verbs", obj: mutate(cr, func(r *rbacv1.ClusterRole) { r.Rules[1].Verbs = nil }),
			want: []string{"rules[1].verbs: Required value"}},
		{name: "aggregation rule without selectors", obj: mutate(cr, func(r *rbacv1.ClusterRole) { r.AggregationRule = &rbacv1.AggregationRule{} }),
			want: []string{"aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"}},
		{name: "aggregation rule with a bad selector", obj: mutate(cr, func(r *rbacv1.ClusterRole) {
			r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
				{MatchLabels: map[string]string{"a": "b"}},
				{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn}}},
				{MatchLabels: map[string]string{"bad key!": "x"}},
			}}
		}), want: []string{"aggregationRule.clusterRoleSelectors[1].matchExpressions[0].values", "aggregationRule.clusterRoleSelectors[2].matchLabels"}},

		{name: "role binding", obj: rb, namespaced: true},
		{name: "role binding of a cluster role", obj: mutate(rb, func(b *rbacv1.RoleBinding) { b.RoleRef.Kind = "ClusterRole" }), namespaced: true},
		{name: "role binding without subjects", obj: mutate(rb, func(b *rbacv1.RoleBinding) { b.Subjects = nil }), namespaced: true},
		{name: "roleRef in another group", obj: mutate(rb, func(b *rbacv1.RoleBinding) { b.RoleRef.APIGroup = "example.com" }), namespaced: true,
			want: []string{`roleRef.apiGroup: Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io"`}},
		{name: "roleRef of another kind", obj: mutate(rb, func(b *rbacv1.RoleBinding) { b.RoleRef.Kind = "Pod" }), namespaced: true,
			want: []string{`roleRef.kind: Unsupported value: "Pod": supported values: "Role", "ClusterRole"`}},
		{name: "roleRef without kind", obj: mutate(rb, func(b *rbacv1.RoleBinding) { b.RoleRef.Kind = "" }), namespaced: true,
			want: []string{"roleRef.kind"}},
		{name: "roleRef without name", obj: mutate(rb, func(b *rbacv1.RoleBinding) { b.RoleRef.Name = "" }), namespaced: true,
			want: []string{"roleRef.name: Required value"}},
		{name: "roleRef name with slash", obj: mutate(rb, func(b *rbacv1.RoleBinding) { b.RoleRef.Name = "a/b" }), namespaced: true,
			want: []string{"roleRef.name: Invalid value"}},
		{name: "subject without name", obj: mutate(rb, func(b *rbacv1.RoleBinding) { b.Subjects[0].Name = "" }), namespaced: true,
			want: []string{"subjects[0].name: Required value"}},
		{name: "subject of another kind", obj: mutate(rb, func(b *rbacv1.RoleBinding) { b.Subjects[1].Kind = "Robot" }), namespaced: true,
			want: []string{`subjects[1].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"`}},
		{name: "user in another group", obj: mutate(rb, func(b *rbacv1.RoleBinding) { b.Subjects[0].APIGroup = "example.com" }), namespaced: true,
			want: []string{`subjects[0].apiGroup: Unsupported value: "example.com"`}},
		{name: "service account in the rbac group", obj: mutate(rb, func(b *rbacv1.RoleBinding) { b.Subjects[2].APIGroup = rbacv1.GroupName }), namespaced: true,
			want: []string{`subjects[2].apiGroup: Unsupported value: "rbac.authorization.k8s.io": supported values: ""`}},
		{name: "service account name not a subdomain", obj: mutate(rb, func(b *rbacv1.RoleBinding) { b.Subjects[3].Name = "CI_Bot" }), namespaced: true,
			want: []string{"subjects[3].name: Invalid value"}},
		{name: "user names are free", obj: mutate(rb, func(b *rbacv1.RoleBinding) { b.Subjects[0].Name = "Alice Smith/admin@example.com" }), namespaced: true},

		{name: "cluster role binding", obj: crb},
		{name: "cluster role binding of a role", obj: mutate(crb, func(b *rbacv1.ClusterRoleBinding) { b.RoleRef.Kind = "Role" }),
			want: []string{`roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"`}},
		{name: "cluster role binding of a service account without namespace", obj: mutate(crb, func(b *rbacv1.ClusterRoleBinding) { b.Subjects[1].Namespace = "" }),
			want: []string{"subjects[1].namespace: Required value"}},
		{name: "cluster role binding without roleRef", obj: mutate(crb, func(b *rbacv1.ClusterRoleBinding) { b.RoleRef = rbacv1.RoleRef{} }),
			want: []string{"roleRef.apiGroup", "roleRef.kind", "roleRef.name"}},
	})
}

func TestValidateRBACUpdate(t *testing.T) {
	rb, crb, cr := stored(validRoleBinding()), stored(validClusterRoleBinding()), stored(validClusterRole())
	runUpdateCases(t, []updateCase{
		{name: "binding subjects change", old: rb, obj: change(rb, func(b *rbacv1.RoleBinding) { b.Subjects = b.Subjects[:1] }), namespaced: true},
		{name: "binding roleRef name change", old: rb, obj: change(rb, func(b *rbacv1.RoleBinding) { b.RoleRef.Name = "pod-writer" }), namespaced: true,
			want: []string{"roleRef: Invalid value", "roleRef: cannot change roleRef"}},
		{name: "binding roleRef kind change", old: rb, obj: change(rb, func(b *rbacv1.RoleBinding) { b.RoleRef.Kind = "ClusterRole" }), namespaced: true,
			want: []string{"roleRef: cannot change roleRef"}},
		{name: "cluster binding roleRef change", old: crb, obj: change(crb, func(b *rbacv1.ClusterRoleBinding) { b.RoleRef.Name = "admin" }),
			want: []string{"roleRef: cannot change roleRef"}},
		{name: "cluster binding subjects change", old: crb, obj: change(crb, func(b *rbacv1.ClusterRoleBinding) {
			b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "bob"})
		})},
		{name: "cluster role rules change", old: cr, obj: change(cr, func(r *rbacv1.ClusterRole) { r.Rules = r.Rules[:1] })},
		{name: "cluster role update still validates", old: cr, obj: change(cr, func(r *rbacv1.ClusterRole) { r.Rules[0].Verbs = nil }),
			want: []string{"rules[0].verbs"}},
	})

	// An update that leaves out the roleRef's group is defaulted first,
	// so it does not change the roleRef.
	upd := change(rb, func(b *rbacv1.RoleBinding) { b.RoleRef.APIGroup = "" })
	defaultObject(upd)
	checkErrors(t, validateUpdate(upd, rb, true), nil)
}

func TestRBACCells(t *testing.T) {
	runCellCases(t, []cellCase{
		{name: "role", gk: gkRole, obj: withCreated(validRole()),
			want: map[string]interface{}{"Name": "pod-reader", "Created At": "2025-06-01T11:50:00Z"}},
		{name: "cluster role", gk: gkClusterRole, obj: withCreated(validClusterRole()),
			want: map[string]interface{}{"Name": "system:metrics-reader", "Created At": "2025-06-01T11:50:00Z"}},
		{name: "role binding", gk: gkRoleBinding, obj: withCreated(validRoleBinding()),
			want: map[string]interface{}{"Name": "read-pods", "Role": "Role/pod-reader", "Age": "10m",
				"Users": "alice", "Groups": "system:authenticated", "ServiceAccounts": "/builder, tools/ci"}},
		{name: "role binding without subjects", gk: gkRoleBinding, obj: mutate(validRoleBinding(), func(b *rbacv1.RoleBinding) {
			b.Subjects, b.RoleRef.Kind = nil, "ClusterRole"
		}), want: map[string]interface{}{"Role": "ClusterRole/pod-reader", "Users": "", "Groups": "", "ServiceAccounts": ""}},
		{name: "cluster role binding", gk: gkClusterRoleBinding, obj: withCreated(mutate(validClusterRoleBinding(), func(b *rbacv1.ClusterRoleBinding) {
			b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: "User", Name: "alice"}, rbacv1.Subject{Kind: "User", Name: "bob"})
		})), want: map[string]interface{}{"Name": "read-metrics", "Role": "ClusterRole/system:metrics-reader", "Age": "10m",
			"Users": "alice, bob", "Groups": "monitoring", "ServiceAccounts": "monitoring/prometheus"}},
	})
}

// withCreated sets obj's creation time to the tests' created.
func withCreated[T metav1.Object](obj T) T {
	obj.SetCreationTimestamp(created)
	return obj
}
