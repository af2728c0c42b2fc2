package authz

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
)

// RBAC authorizes by Roles, ClusterRoles and their bindings.
type RBAC struct {
	roles               rbaclisters.RoleLister
	clusterRoles        rbaclisters.ClusterRoleLister
	roleBindings        rbaclisters.RoleBindingLister
	clusterRoleBindings rbaclisters.ClusterRoleBindingLister
	synced              []cache.InformerSynced
}

// NewRBAC reads from f's rbac/v1 informers (the caller starts f).
func NewRBAC(f informers.SharedInformerFactory) *RBAC {
	v1 := f.Rbac().V1()
	r := &RBAC{
		roles: v1.Roles().Lister(), clusterRoles: v1.ClusterRoles().Lister(),
		roleBindings: v1.RoleBindings().Lister(), clusterRoleBindings: v1.ClusterRoleBindings().Lister(),
	}
	r.synced = []cache.InformerSynced{
		v1.Roles().Informer().HasSynced, v1.ClusterRoles().Informer().HasSynced,
		v1.RoleBindings().Informer().HasSynced, v1.ClusterRoleBindings().Informer().HasSynced,
	}
	return r
}

// waitSynced waits (briefly) for the caches: until they have loaded, a
// decision would deny what is allowed.
func (r *RBAC) waitSynced(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return cache.WaitForCacheSync(ctx.Done(), r.synced...)
}

// Authorize allows what a rule bound to the user allows; it never denies
// (other authorizers may still allow).
func (r *RBAC) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	if !r.waitSynced(ctx) {
		return NoOpinion, "", fmt.Errorf("RBAC: the role caches have not loaded")
	}
	allowed := false
	r.visitRules(a.User, a.Namespace, func(rule *rbacv1.PolicyRule) bool {
		allowed = RuleAllows(a, rule)
		return !allowed
	})
	if allowed {
		return Allow, "", nil
	}
	return NoOpinion, "", nil
}

// RulesFor are the rules that apply to user in namespace (cluster-wide
// ones included; namespace "" for the cluster's alone).
func (r *RBAC) RulesFor(ctx context.Context, user User, namespace string) ([]rbacv1.PolicyRule, error) {
	if !r.waitSynced(ctx) {
		return nil, fmt.Errorf("RBAC: the role caches have not loaded")
	}
	var out []rbacv1.PolicyRule
	r.visitRules(user, namespace, func(rule *rbacv1.PolicyRule) bool {
		out = append(out, *rule)
		return true
	})
	return out, nil
}

// visitRules calls visit with each rule bound to user, cluster-wide first,
// until visit returns false.
func (r *RBAC) visitRules(user User, namespace string, visit func(*rbacv1.PolicyRule) bool) {
	crbs, _ := r.clusterRoleBindings.List(labels.Everything())
	for _, b := range crbs {
		if !bindsUser(b.Subjects, "", user) {
			continue
		}
		if !r.visitRole(b.RoleRef, "", visit) {
			return
		}
	}
	if namespace == "" {
		return
	}
	rbs, _ := r.roleBindings.RoleBindings(namespace).List(labels.Everything())
	for _, b := range rbs {
		if !bindsUser(b.Subjects, namespace, user) {
			continue
		}
		if !r.visitRole(b.RoleRef, namespace, visit) {
			return
		}
	}
}

func (r *RBAC) visitRole(ref rbacv1.RoleRef, namespace string, visit func(*rbacv1.PolicyRule) bool) bool {
	var rules []rbacv1.PolicyRule
	switch ref.Kind {
	case "ClusterRole":
		cr, err := r.clusterRoles.Get(ref.Name)
		if err != nil {
			return true
		}
		rules = cr.Rules
	case "Role":
		if namespace == "" {
			return true
		}
		role, err := r.roles.Roles(namespace).Get(ref.Name)
		if err != nil {
			return true
		}
		rules = role.Rules
	}
	for i := range rules {
		if !visit(&rules[i]) {
			return false
		}
	}
	return true
}

// ServiceAccountUser is the user name of a service account's tokens.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// bindsUser says whether subjects name user (a ServiceAccount subject
// without a namespace is in the binding's).
func bindsUser(subjects []rbacv1.Subject, bindingNamespace string, user User) bool {
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			if s.Name == user.Name {
				return true
			}
		case rbacv1.GroupKind:
			if slices.Contains(user.Groups, s.Name) {
				return true
			}
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = bindingNamespace
			}
			if ns != "" && ServiceAccountUser(ns, s.Name) == user.Name {
				return true
			}
		}
	}
	return false
}

// RuleAllows says whether rule allows the request a describes.
func RuleAllows(a Attributes, rule *rbacv1.PolicyRule) bool {
	if !matches(rule.Verbs, a.Verb) {
		return false
	}
	if !a.IsResource {
		for _, u := range rule.NonResourceURLs {
			if u == rbacv1.NonResourceAll || u == a.Path ||
				(strings.HasSuffix(u, "*") && strings.HasPrefix(a.Path, strings.TrimSuffix(u, "*"))) {
				return true
			}
		}
		return false
	}
	if !matches(rule.APIGroups, a.APIGroup) || !resourceMatches(rule.Resources, a.Resource, a.Subresource) {
		return false
	}
	return len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, a.Name)
}

func matches(set []string, v string) bool {
	return slices.Contains(set, "*") || slices.Contains(set, v)
}

func resourceMatches(set []string, resource, sub string) bool {
	want := resource
	if sub != "" {
		want += "/" + sub
	}
	for _, r := range set {
		switch {
		case r == rbacv1.ResourceAll, r == want:
			return true
		case sub != "" && r == "*/"+sub:
			return true
		}
	}
	return false
}
