package integration

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestRBACKinds: the four kinds of rbac.authorization.k8s.io/v1 are stored
// and served as Kubernetes serves them (storage only, no authorization):
// discovery, client-go, `kubectl create role/clusterrole/rolebinding/
// clusterrolebinding`, get (-o wide), describe, explain, the defaults,
// the immutable roleRef and the 422s of bad objects.
func TestRBACKinds(t *testing.T) {
	c := startClusterWith(t, apiServerOnly)
	ctx := ctxT(t)
	k := newKubectl(t, c)
	rbac := c.client.RbacV1()
	const ns = "rbac-kinds"
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("discovery", func(t *testing.T) {
		list, err := c.client.Discovery().ServerResourcesForGroupVersion(rbacv1.SchemeGroupVersion.String())
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]struct {
			kind       string
			namespaced bool
		}{
			"clusterrolebindings": {"ClusterRoleBinding", false}, "clusterroles": {"ClusterRole", false},
			"rolebindings": {"RoleBinding", true}, "roles": {"Role", true},
		}
		var names []string
		for _, r := range list.APIResources {
			names = append(names, r.Name)
			w := want[r.Name]
			if r.Kind != w.kind || r.Namespaced != w.namespaced || len(r.ShortNames) != 0 ||
				!slices.Equal(r.Verbs, []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}) {
				t.Errorf("%s: %+v", r.Name, r)
			}
		}
		if !slices.Equal(names, []string{"clusterrolebindings", "clusterroles", "rolebindings", "roles"}) {
			t.Errorf("rbac.authorization.k8s.io/v1 resources = %v", names)
		}
		out := k.ok(t, "api-resources", "--api-group=rbac.authorization.k8s.io", "-o", "wide")
		if h := tableHeader(out); !slices.Equal(h, []string{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND", "VERBS", "CATEGORIES"}) {
			t.Fatalf("api-resources header %v:\n%s", h, out)
		}
		rows := outputLines(out)[1:]
		if len(rows) != 4 {
			t.Fatalf("api-resources --api-group=rbac.authorization.k8s.io:\n%s", out)
		}
		for _, l := range rows {
			f := strings.Fields(l)
			w := want[f[0]]
			if !slices.Equal(f[1:4], []string{"rbac.authorization.k8s.io/v1", map[bool]string{true: "true", false: "false"}[w.namespaced], w.kind}) ||
				(len(f) < 5 || f[4] != "create,delete,deletecollection,get,list,patch,update,watch") {
				t.Errorf("api-resources row %q", l)
			}
		}
		if !slices.Contains(outputLines(k.ok(t, "api-versions")), "rbac.authorization.k8s.io/v1") {
			t.Error("api-versions lacks rbac.authorization.k8s.io/v1")
		}
		// explain reads the kinds' schemas from /openapi/v3.
		out = k.ok(t, "explain", "clusterrole.aggregationRule")
		if !describeHasField(out, "KIND", "ClusterRole") || !strings.Contains(out, "clusterRoleSelectors") {
			t.Errorf("explain clusterrole.aggregationRule:\n%s", out)
		}
		out = k.ok(t, "explain", "rolebinding.roleRef")
		if !describeHasField(out, "KIND", "RoleBinding") || !strings.Contains(out, "apiGroup") {
			t.Errorf("explain rolebinding.roleRef:\n%s", out)
		}
	})

	t.Run("client-go", func(t *testing.T) {
		role, err := rbac.Roles(ns).Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "secret-reader"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"db"}, Verbs: []string{"get"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if role.Generation != 0 || role.UID == "" || len(role.Rules) != 1 || role.Rules[0].ResourceNames[0] != "db" {
			t.Errorf("created role: %+v", role)
		}
		cr, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "example:node-viewer", Labels: map[string]string{"rbac.example.com/aggregate-to-monitoring": "true"}},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
				{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cr.Namespace != "" || len(cr.Rules) != 2 {
			t.Errorf("created cluster role: %+v", cr)
		}
		// The roleRef's and the users' and groups' apiGroup are defaulted;
		// a service account's stays the core group.
		rb, err := rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "read-secrets"},
			RoleRef:    rbacv1.RoleRef{Kind: "Role", Name: "secret-reader"},
			Subjects: []rbacv1.Subject{
				{Kind: "User", Name: "jane"},
				{Kind: "ServiceAccount", Name: "ci"},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rb.RoleRef.APIGroup != rbacv1.GroupName || rb.Subjects[0].APIGroup != rbacv1.GroupName || rb.Subjects[1].APIGroup != "" {
			t.Errorf("role binding not defaulted: %+v %+v", rb.RoleRef, rb.Subjects)
		}
		crb, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "view-nodes"},
			RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: "example:node-viewer"},
			Subjects: []rbacv1.Subject{
				{Kind: "Group", Name: "ops"},
				{Kind: "ServiceAccount", Name: "ci", Namespace: ns},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if crb.RoleRef.APIGroup != rbacv1.GroupName || crb.Subjects[0].APIGroup != rbacv1.GroupName {
			t.Errorf("cluster role binding not defaulted: %+v %+v", crb.RoleRef, crb.Subjects)
		}

		// Read back, listed, and selected by label.
		got, err := rbac.ClusterRoleBindings().Get(ctx, "view-nodes", metav1.GetOptions{})
		if err != nil || got.UID != crb.UID || got.Subjects[1].Namespace != ns {
			t.Fatalf("get view-nodes: %+v, %v", got, err)
		}
		roles, err := rbac.Roles("").List(ctx, metav1.ListOptions{})
		if err != nil || !slices.ContainsFunc(roles.Items, func(r rbacv1.Role) bool { return r.Namespace == ns && r.Name == "secret-reader" }) {
			t.Fatalf("roles in all namespaces: %+v, %v", roles, err)
		}
		crs, err := rbac.ClusterRoles().List(ctx, metav1.ListOptions{LabelSelector: "rbac.example.com/aggregate-to-monitoring=true"})
		if err != nil || len(crs.Items) != 1 || crs.Items[0].Name != "example:node-viewer" {
			t.Fatalf("cluster roles by label: %+v, %v", crs, err)
		}

		// Subjects may change; the update is stored.
		rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: "Group", Name: "auditors"})
		rb, err = rbac.RoleBindings(ns).Update(ctx, rb, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rb.Subjects) != 3 || rb.Subjects[2].APIGroup != rbacv1.GroupName {
			t.Errorf("updated subjects: %+v", rb.Subjects)
		}

		// The roleRef may not: 422 naming roleRef, with Kubernetes' message.
		changed := rb.DeepCopy()
		changed.RoleRef.Name = "other"
		_, err = rbac.RoleBindings(ns).Update(ctx, changed, metav1.UpdateOptions{})
		rbacWantInvalid(t, err, "roleRef", "cannot change roleRef")
		_, err = rbac.RoleBindings(ns).Patch(ctx, "read-secrets", types.MergePatchType, []byte(`{"roleRef":{"kind":"ClusterRole"}}`), metav1.PatchOptions{})
		rbacWantInvalid(t, err, "roleRef", "cannot change roleRef")
		crbChanged := crb.DeepCopy()
		crbChanged.RoleRef.Name = "admin"
		_, err = rbac.ClusterRoleBindings().Update(ctx, crbChanged, metav1.UpdateOptions{})
		rbacWantInvalid(t, err, "roleRef", "cannot change roleRef")
		if got, err := rbac.RoleBindings(ns).Get(ctx, "read-secrets", metav1.GetOptions{}); err != nil || got.RoleRef.Name != "secret-reader" || got.RoleRef.Kind != "Role" {
			t.Errorf("roleRef after refused updates: %+v, %v", got, err)
		}

		// Watch sees a binding's deletion.
		w, err := rbac.RoleBindings(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rb.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if err := rbac.RoleBindings(ns).Delete(ctx, "read-secrets", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-w.ResultChan():
			if b, ok := ev.Object.(*rbacv1.RoleBinding); ev.Type != "DELETED" || !ok || b.Name != "read-secrets" {
				t.Errorf("watch event %s %T", ev.Type, ev.Object)
			}
		case <-time.After(10 * time.Second):
			t.Error("no watch event for the deletion")
		}
	})

	t.Run("bad objects", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			create func(context.Context) error
			cause  string
		}{
			{"rule without verbs", func(ctx context.Context) error {
				_, err := rbac.Roles(ns).Create(ctx, &rbacv1.Role{
					ObjectMeta: metav1.ObjectMeta{Name: "no-verbs"},
					Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}},
				}, metav1.CreateOptions{})
				return err
			}, "rules[0].verbs"},
			{"cluster role rule without resources", func(ctx context.Context) error {
				_, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
					ObjectMeta: metav1.ObjectMeta{Name: "no-resources"},
					Rules:      []rbacv1.PolicyRule{rbacPodRule("get"), {APIGroups: []string{""}, Verbs: []string{"get"}}},
				}, metav1.CreateOptions{})
				return err
			}, "rules[1].resources"},
			{"non-resource URL in a role", func(ctx context.Context) error {
				_, err := rbac.Roles(ns).Create(ctx, &rbacv1.Role{
					ObjectMeta: metav1.ObjectMeta{Name: "urls"},
					Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/healthz"}, Verbs: []string{"get"}}},
				}, metav1.CreateOptions{})
				return err
			}, "rules[0].nonResourceURLs"},
			{"aggregation rule without selectors", func(ctx context.Context) error {
				_, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
					ObjectMeta: metav1.ObjectMeta{Name: "agg"}, AggregationRule: &rbacv1.AggregationRule{},
				}, metav1.CreateOptions{})
				return err
			}, "aggregationRule.clusterRoleSelectors"},
			{"role name with a slash", func(ctx context.Context) error {
				_, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "a/b"}}, metav1.CreateOptions{})
				return err
			}, "metadata.name"},
			{"cluster role binding of a role", func(ctx context.Context) error {
				_, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: "bad-kind"},
					RoleRef:    rbacv1.RoleRef{Kind: "Role", Name: "x"},
				}, metav1.CreateOptions{})
				return err
			}, "roleRef.kind"},
			{"binding in another group", func(ctx context.Context) error {
				_, err := rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: "bad-group"},
					RoleRef:    rbacv1.RoleRef{APIGroup: "example.com", Kind: "Role", Name: "x"},
				}, metav1.CreateOptions{})
				return err
			}, "roleRef.apiGroup"},
			{"service account without namespace", func(ctx context.Context) error {
				_, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: "sa-no-ns"},
					RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
					Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "ci"}},
				}, metav1.CreateOptions{})
				return err
			}, "subjects[0].namespace"},
			{"subject of another kind", func(ctx context.Context) error {
				_, err := rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: "robot"},
					RoleRef:    rbacv1.RoleRef{Kind: "Role", Name: "x"},
					Subjects:   []rbacv1.Subject{{Kind: "Robot", Name: "r2"}},
				}, metav1.CreateOptions{})
				return err
			}, "subjects[0].kind"},
		} {
			t.Run(tc.name, func(t *testing.T) { rbacWantInvalid(t, tc.create(ctx), tc.cause, "") })
		}
		// kubectl shows the refusal with its field path.
		file := writeTestFile(t, t.TempDir(), "role.yaml", `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: no-verbs
  namespace: `+ns+`
rules:
- apiGroups: [""]
  resources: ["pods"]
`)
		if msg := k.fails(t, "apply", "-f", file); !strings.Contains(msg, `The Role "no-verbs" is invalid: rules[0].verbs: Required value: verbs must contain at least one value`) {
			t.Errorf("kubectl apply of a rule without verbs: %q", msg)
		}
	})

	t.Run("kubectl", func(t *testing.T) {
		if out := k.ok(t, "create", "role", "pod-reader", "--verb=get,list", "--resource=pods", "-n", ns); strings.TrimSpace(out) != "role.rbac.authorization.k8s.io/pod-reader created" {
			t.Errorf("create role: %q", out)
		}
		if out := k.ok(t, "create", "rolebinding", "alice-reads-pods", "--role=pod-reader", "--user=alice", "--group=devs", "--serviceaccount="+ns+":builder", "-n", ns); strings.TrimSpace(out) != "rolebinding.rbac.authorization.k8s.io/alice-reads-pods created" {
			t.Errorf("create rolebinding: %q", out)
		}
		if out := k.ok(t, "create", "clusterrole", "monitoring", "--aggregation-rule=rbac.example.com/aggregate-to-monitoring=true"); strings.TrimSpace(out) != "clusterrole.rbac.authorization.k8s.io/monitoring created" {
			t.Errorf("create clusterrole: %q", out)
		}
		if out := k.ok(t, "create", "clusterrole", "pod-lister", "--verb=get", "--resource=pods,deployments.apps", "--non-resource-url=/logs/*"); !strings.Contains(out, "created") {
			t.Errorf("create clusterrole with a non-resource URL: %q", out)
		}
		if out := k.ok(t, "create", "clusterrolebinding", "monitoring-ops", "--clusterrole=monitoring", "--user=bob", "--group=ops", "--serviceaccount=kube-system:prometheus"); strings.TrimSpace(out) != "clusterrolebinding.rbac.authorization.k8s.io/monitoring-ops created" {
			t.Errorf("create clusterrolebinding: %q", out)
		}

		// What kubectl created, read back with client-go.
		role, err := rbac.Roles(ns).Get(ctx, "pod-reader", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].Verbs, []string{"get", "list"}) || !slices.Equal(role.Rules[0].Resources, []string{"pods"}) || !slices.Equal(role.Rules[0].APIGroups, []string{""}) {
			t.Errorf("pod-reader rules: %+v", role.Rules)
		}
		rb, err := rbac.RoleBindings(ns).Get(ctx, "alice-reads-pods", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantSubjects := []rbacv1.Subject{
			{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice"},
			{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "devs"},
			{Kind: "ServiceAccount", Name: "builder", Namespace: ns},
		}
		if rb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"}) || !slices.Equal(rb.Subjects, wantSubjects) {
			t.Errorf("alice-reads-pods: %+v %+v", rb.RoleRef, rb.Subjects)
		}
		cr, err := rbac.ClusterRoles().Get(ctx, "monitoring", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cr.AggregationRule == nil || len(cr.AggregationRule.ClusterRoleSelectors) != 1 ||
			cr.AggregationRule.ClusterRoleSelectors[0].MatchLabels["rbac.example.com/aggregate-to-monitoring"] != "true" {
			t.Errorf("monitoring aggregationRule: %+v", cr.AggregationRule)
		}
		lister, err := rbac.ClusterRoles().Get(ctx, "pod-lister", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(lister.Rules) != 3 || !slices.Equal(lister.Rules[len(lister.Rules)-1].NonResourceURLs, []string{"/logs/*"}) {
			t.Errorf("pod-lister rules: %+v", lister.Rules)
		}

		// get: the bindings' columns, with -o wide their subjects.
		out := k.ok(t, "get", "rolebinding", "-n", ns)
		if h := tableHeader(out); !slices.Equal(h, []string{"NAME", "ROLE", "AGE"}) {
			t.Errorf("get rolebinding header %v:\n%s", h, out)
		}
		out = k.ok(t, "get", "rolebinding", "alice-reads-pods", "-n", ns, "-o", "wide")
		if h := tableHeader(out); !slices.Equal(h, []string{"NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"}) {
			t.Fatalf("get rolebinding -o wide header %v:\n%s", h, out)
		}
		if row := strings.Fields(outputLines(out)[1]); len(row) != 6 || row[0] != "alice-reads-pods" || row[1] != "Role/pod-reader" ||
			row[3] != "alice" || row[4] != "devs" || row[5] != ns+"/builder" {
			t.Errorf("get rolebinding -o wide row %q", row)
		}
		out = k.ok(t, "get", "clusterrolebinding", "monitoring-ops", "-o", "wide")
		if h := tableHeader(out); !slices.Equal(h, []string{"NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"}) {
			t.Fatalf("get clusterrolebinding -o wide header %v:\n%s", h, out)
		}
		if row := strings.Fields(outputLines(out)[1]); len(row) != 6 || row[0] != "monitoring-ops" || row[1] != "ClusterRole/monitoring" ||
			row[3] != "bob" || row[4] != "ops" || row[5] != "kube-system/prometheus" {
			t.Errorf("get clusterrolebinding -o wide row %q", row)
		}
		// Roles: NAME and CREATED AT, an RFC 3339 time.
		out = k.ok(t, "get", "roles", "-n", ns)
		if h := tableHeader(out); !slices.Equal(h, []string{"NAME", "CREATED", "AT"}) {
			t.Errorf("get roles header %v:\n%s", h, out)
		}
		var names []string
		for _, l := range outputLines(out)[1:] {
			f := strings.Fields(l)
			names = append(names, f[0])
			if _, err := time.Parse(time.RFC3339, f[1]); err != nil {
				t.Errorf("get roles: created at %q: %v", f[1], err)
			}
		}
		if !slices.Equal(names, []string{"pod-reader", "secret-reader"}) {
			t.Errorf("get roles: %v", names)
		}
		out = k.ok(t, "get", "clusterroles", "monitoring", "example:node-viewer")
		if h := tableHeader(out); !slices.Equal(h, []string{"NAME", "CREATED", "AT"}) || len(outputLines(out)) != 3 {
			t.Errorf("get clusterroles:\n%s", out)
		}
		if out := k.ok(t, "get", "clusterrolebindings.rbac.authorization.k8s.io", "-o", "name"); !slices.Contains(outputLines(out), "clusterrolebinding.rbac.authorization.k8s.io/monitoring-ops") {
			t.Errorf("get clusterrolebindings -o name:\n%s", out)
		}

		// describe.
		out = k.ok(t, "describe", "role", "pod-reader", "-n", ns)
		if !describeHasField(out, "Name", "pod-reader") || !strings.Contains(out, "PolicyRule:") || !regexpLine(out, `pods\s+\[\]\s+\[\]\s+\[get list\]`) {
			t.Errorf("describe role:\n%s", out)
		}
		out = k.ok(t, "describe", "rolebinding", "alice-reads-pods", "-n", ns)
		if !describeHasField(out, "Kind", "Role") || !describeHasField(out, "Name", "pod-reader") ||
			!regexpLine(out, `User\s+alice`) || !regexpLine(out, `ServiceAccount\s+builder\s+`+ns) {
			t.Errorf("describe rolebinding:\n%s", out)
		}
		out = k.ok(t, "describe", "clusterrole", "pod-lister")
		if !regexpLine(out, `\[/logs/\*\]\s+\[\]\s+\[get\]`) || !regexpLine(out, `deployments\.apps\s+\[\]\s+\[\]\s+\[get\]`) {
			t.Errorf("describe clusterrole:\n%s", out)
		}
		out = k.ok(t, "describe", "clusterrolebinding", "monitoring-ops")
		if !describeHasField(out, "Kind", "ClusterRole") || !regexpLine(out, `Group\s+ops`) || !regexpLine(out, `ServiceAccount\s+prometheus\s+kube-system`) {
			t.Errorf("describe clusterrolebinding:\n%s", out)
		}

		// kubectl cannot change a binding's role either.
		msg := k.fails(t, "patch", "rolebinding", "alice-reads-pods", "-n", ns, "--type=merge", "-p", `{"roleRef":{"name":"secret-reader"}}`)
		if !strings.Contains(msg, `The RoleBinding "alice-reads-pods" is invalid: roleRef: Invalid value`) || !strings.Contains(msg, "cannot change roleRef") {
			t.Errorf("patch roleRef: %q", msg)
		}
		// ... but may change its subjects (kubectl set subject).
		k.ok(t, "set", "subject", "clusterrolebinding", "monitoring-ops", "--user=carol")
		if got, err := rbac.ClusterRoleBindings().Get(ctx, "monitoring-ops", metav1.GetOptions{}); err != nil || len(got.Subjects) != 4 || got.Subjects[3].Name != "carol" {
			t.Errorf("set subject: %+v, %v", got, err)
		}

		// delete.
		k.ok(t, "delete", "role", "pod-reader", "-n", ns)
		k.ok(t, "delete", "clusterrolebinding", "monitoring-ops")
		if _, err := rbac.Roles(ns).Get(ctx, "pod-reader", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("role after delete: %v", err)
		}
		if _, err := rbac.ClusterRoleBindings().Get(ctx, "monitoring-ops", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("cluster role binding after delete: %v", err)
		}
	})
}

func rbacPodRule(verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: verbs}
}

// rbacWantInvalid checks err is a 422 Invalid whose causes name field
// (and, when msg is set, whose message contains msg).
func rbacWantInvalid(t *testing.T, err error, field, msg string) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("got %v, want a 422 naming %s", err, field)
	}
	s := status.Status()
	if s.Code != http.StatusUnprocessableEntity || s.Reason != metav1.StatusReasonInvalid {
		t.Fatalf("got %d %s (%s), want 422 Invalid naming %s", s.Code, s.Reason, s.Message, field)
	}
	var fields []string
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			fields = append(fields, c.Field)
		}
	}
	if !slices.Contains(fields, field) {
		t.Errorf("422 causes %v (%s), want %s", fields, s.Message, field)
	}
	if msg != "" && !strings.Contains(s.Message, msg) {
		t.Errorf("422 message %q, want %q", s.Message, msg)
	}
}

// regexpLine reports whether a line of out matches re (anywhere in it).
func regexpLine(out, re string) bool {
	return regexp.MustCompile(`(?m)` + re).MatchString(out)
}
