package authz

import (
	"context"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"

	"github.com/minik8s/minik8s/pkg/serviceaccount"
)

// Annotations and labels of the default policy, as Kubernetes marks it.
const (
	// AnnAutoupdate "false" on a default role or binding keeps Reconcile
	// from adding back what an administrator removed.
	AnnAutoupdate  = "rbac.authorization.kubernetes.io/autoupdate"
	LabelBootstrap = "kubernetes.io/bootstrapping"
	// Aggregation labels: a ClusterRole with one of them adds its rules
	// to admin, edit or view (pkg/controller/clusterroleaggregation).
	LabelAggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	LabelAggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	LabelAggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// Groups of users that authentication assigns.
const (
	AuthenticatedGroup   = "system:authenticated"
	UnauthenticatedGroup = "system:unauthenticated"
	BootstrappersGroup   = "system:bootstrappers"
)

func rule(verbs []string, groups []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

func urls(verbs []string, paths ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, NonResourceURLs: paths}
}

var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "delete", "deletecollection", "patch", "update"}
	readWrite = append(slices.Clone(read), write...)
	core      = []string{""}
)

// Workload rules, shared by view (read) and edit (write).
var workloadResources = []struct {
	group     string
	resources []string
}{
	{"", []string{"pods", "pods/log", "pods/status", "podtemplates", "configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status",
		"replicationcontrollers", "replicationcontrollers/scale", "replicationcontrollers/status", "serviceaccounts", "services", "services/status",
		"events", "limitranges", "resourcequotas", "resourcequotas/status", "namespaces/status"}},
	{"apps", []string{"controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
		"replicasets", "replicasets/scale", "replicasets/status", "statefulsets", "statefulsets/scale", "statefulsets/status"}},
	{"autoscaling", []string{"horizontalpodautoscalers", "horizontalpodautoscalers/status"}},
	{"batch", []string{"cronjobs", "cronjobs/status", "jobs", "jobs/status"}},
	{"policy", []string{"poddisruptionbudgets", "poddisruptionbudgets/status"}},
	{"networking.k8s.io", []string{"ingresses", "ingresses/status", "networkpolicies"}},
	{"discovery.k8s.io", []string{"endpointslices"}},
	{"events.k8s.io", []string{"events"}},
	{"minik8s.io", []string{"functions", "functions/status", "workflows", "workflows/status", "workflowruns", "workflowruns/status",
		"triggers", "triggers/status", "dnsrecords", "dnsrecords/status"}},
}

func viewRules() []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, w := range workloadResources {
		out = append(out, rule(read, []string{w.group}, w.resources...))
	}
	return append(out, rule(read, core, "namespaces"))
}

func editRules() []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, w := range workloadResources {
		var writable []string
		for _, r := range w.resources {
			if !slices.Contains([]string{"pods/log", "pods/status", "namespaces/status", "events", "limitranges", "resourcequotas",
				"resourcequotas/status", "controllerrevisions"}, r) {
				writable = append(writable, r)
			}
		}
		if len(writable) > 0 {
			out = append(out, rule(write, []string{w.group}, writable...))
		}
	}
	return append(out,
		rule(readWrite, core, "secrets"),
		rule([]string{"create", "get"}, core, "pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "services/proxy"),
		rule([]string{"create"}, core, "pods/eviction", "serviceaccounts/token"),
		rule([]string{"impersonate"}, core, "serviceaccounts"),
	)
}

func adminRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(readWrite, []string{rbacv1.GroupName}, "roles", "rolebindings"),
		rule([]string{"create"}, []string{"authorization.k8s.io"}, "localsubjectaccessreviews"),
	}
}

// aggregated is a ClusterRole whose rules the aggregation controller
// fills from the ClusterRoles labeled label.
func aggregated(name, label string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}}}
}

func withRules(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
}

// ClusterRoles is the default policy's roles, as Kubernetes bootstraps
// them (the subset of its groups minik8s serves, and minik8s.io's).
func ClusterRoles() []*rbacv1.ClusterRole {
	// admin holds what edit holds, and edit what view holds: the
	// aggregate-to roles carry the labels of the roles above theirs.
	components, _ := componentPolicy()
	return append([]*rbacv1.ClusterRole{
		withRules("cluster-admin", nil, rule([]string{"*"}, []string{"*"}, "*"), urls([]string{"*"}, "*")),
		aggregated("admin", LabelAggregateToAdmin), aggregated("edit", LabelAggregateToEdit), aggregated("view", LabelAggregateToView),
		withRules("system:aggregate-to-admin", map[string]string{LabelAggregateToAdmin: "true"}, adminRules()...),
		withRules("system:aggregate-to-edit", map[string]string{LabelAggregateToAdmin: "true", LabelAggregateToEdit: "true"}, editRules()...),
		withRules("system:aggregate-to-view", map[string]string{LabelAggregateToAdmin: "true", LabelAggregateToEdit: "true", LabelAggregateToView: "true"}, viewRules()...),
		withRules("system:basic-user", nil, rule([]string{"create"}, []string{"authorization.k8s.io"}, "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule([]string{"create"}, []string{"authentication.k8s.io"}, "selfsubjectreviews")),
		withRules("system:discovery", nil, urls([]string{"get"}, "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/readyz", "/version", "/version/", "/openapi", "/openapi/*", "/dashboard", "/dashboard/*")),
		withRules("system:service-account-issuer-discovery", nil, urls([]string{"get"},
			"/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/")),
		withRules("system:public-info-viewer", nil, urls([]string{"get"}, "/healthz", "/livez", "/readyz", "/version", "/version/")),
		withRules("system:monitoring", nil, urls([]string{"get"}, "/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*", "/healthz/*")),
		withRules("system:node-bootstrapper", nil, rule([]string{"create", "get", "list", "watch"}, []string{"certificates.k8s.io"}, "certificatesigningrequests")),
		// What an extension API server (the aggregation layer's backends)
		// is bound to, to ask who a token is and what a user may do.
		withRules("system:auth-delegator", nil, rule([]string{"create"}, []string{"authentication.k8s.io"}, "tokenreviews"),
			rule([]string{"create"}, []string{"authorization.k8s.io"}, "subjectaccessreviews")),
		// CoreDNS's kubernetes plugin (pkg/dns runs it as system:coredns).
		withRules("system:coredns", nil, rule([]string{"list", "watch"}, core, "endpoints", "services", "pods", "namespaces"),
			rule([]string{"list", "watch"}, []string{"discovery.k8s.io"}, "endpointslices")),
	}, components...)
}

// ClusterRoleBindings is the default policy's bindings.
func ClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	bind := func(name, role string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: subjects}
	}
	group := func(g string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: g}
	}
	user := func(u string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u}
	}
	_, components := componentPolicy()
	return append([]*rbacv1.ClusterRoleBinding{
		bind("cluster-admin", "cluster-admin", group(MastersGroup)),
		bind("system:basic-user", "system:basic-user", group(AuthenticatedGroup)),
		bind("system:discovery", "system:discovery", group(AuthenticatedGroup)),
		bind("system:service-account-issuer-discovery", "system:service-account-issuer-discovery", group(serviceaccount.AllGroup)),
		bind("system:public-info-viewer", "system:public-info-viewer", group(AuthenticatedGroup), group(UnauthenticatedGroup)),
		bind("system:monitoring", "system:monitoring", group("system:monitoring")),
		bind("system:node-bootstrapper", "system:node-bootstrapper", group(BootstrappersGroup)),
		bind("system:coredns", "system:coredns", user("system:coredns")),
	}, components...)
}

// Roles is the default policy's namespaced roles, as Kubernetes
// bootstraps them in kube-system.
func Roles() []*rbacv1.Role {
	return []*rbacv1.Role{{
		// Extension API servers read how to trust the front proxy.
		ObjectMeta: metav1.ObjectMeta{Name: "extension-apiserver-authentication-reader", Namespace: metav1.NamespaceSystem},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: core, Resources: []string{"configmaps"},
			ResourceNames: []string{"extension-apiserver-authentication"}}},
	}}
}

// Reconcile makes the default policy exist: missing roles and bindings
// are created; existing ones that do not say autoupdate "false" get the
// rules and subjects they lack back. Nothing is ever removed.
func Reconcile(ctx context.Context, client kubernetes.Interface) error {
	roles := client.RbacV1().ClusterRoles()
	for _, want := range ClusterRoles() {
		mark(&want.ObjectMeta)
		have, err := roles.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if _, err := roles.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("clusterrole %s: %w", want.Name, err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("clusterrole %s: %w", want.Name, err)
		}
		if have.Annotations[AnnAutoupdate] == "false" {
			continue
		}
		changed := false
		if have.AggregationRule == nil && want.AggregationRule != nil {
			have.AggregationRule, changed = want.AggregationRule, true
		}
		if want.AggregationRule == nil {
			if ok, missing := rbacvalidation.Covers(have.Rules, want.Rules); !ok {
				have.Rules, changed = append(have.Rules, missing...), true
			}
		}
		for k, v := range want.Labels {
			if have.Labels[k] != v {
				if have.Labels == nil {
					have.Labels = map[string]string{}
				}
				have.Labels[k], changed = v, true
			}
		}
		if changed {
			if _, err := roles.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("clusterrole %s: %w", want.Name, err)
			}
		}
	}
	for _, want := range Roles() {
		mark(&want.ObjectMeta)
		roles := client.RbacV1().Roles(want.Namespace)
		have, err := roles.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if _, err := roles.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("role %s/%s: %w", want.Namespace, want.Name, err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("role %s/%s: %w", want.Namespace, want.Name, err)
		}
		if ok, missing := rbacvalidation.Covers(have.Rules, want.Rules); !ok && have.Annotations[AnnAutoupdate] != "false" {
			have.Rules = append(have.Rules, missing...)
			if _, err := roles.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("role %s/%s: %w", want.Namespace, want.Name, err)
			}
		}
	}
	bindings := client.RbacV1().ClusterRoleBindings()
	for _, want := range ClusterRoleBindings() {
		mark(&want.ObjectMeta)
		have, err := bindings.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if _, err := bindings.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("clusterrolebinding %s: %w", want.Name, err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("clusterrolebinding %s: %w", want.Name, err)
		}
		if have.Annotations[AnnAutoupdate] == "false" || have.RoleRef != want.RoleRef {
			continue
		}
		changed := false
		for _, s := range want.Subjects {
			if !slices.Contains(have.Subjects, s) {
				have.Subjects, changed = append(have.Subjects, s), true
			}
		}
		if changed {
			if _, err := bindings.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("clusterrolebinding %s: %w", want.Name, err)
			}
		}
	}
	return nil
}

func mark(m *metav1.ObjectMeta) {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[LabelBootstrap] = "rbac-defaults"
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[AnnAutoupdate] = "true"
}
