package authz

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
)

// Escalation is Kubernetes' RBAC privilege-escalation prevention: a user
// may write a role only with rules they hold already (or the escalate
// verb on it), and bind a role only when they hold its rules (or the bind
// verb on it).
type Escalation struct {
	RBAC       *RBAC
	Authorizer Authorizer
}

// Admit checks a Role, ClusterRole or binding that user creates or
// updates; other objects pass.
func (e *Escalation) Admit(ctx context.Context, user User, obj runtime.Object) error {
	var (
		resource, ns, name string
		rules              []rbacv1.PolicyRule
		ref                *rbacv1.RoleRef
	)
	switch o := obj.(type) {
	case *rbacv1.Role:
		resource, ns, name, rules = "roles", o.Namespace, o.Name, o.Rules
	case *rbacv1.ClusterRole:
		resource, name, rules = "clusterroles", o.Name, o.Rules
	case *rbacv1.RoleBinding:
		resource, ns, name, ref = "rolebindings", o.Namespace, o.Name, &o.RoleRef
	case *rbacv1.ClusterRoleBinding:
		resource, name, ref = "clusterrolebindings", o.Name, &o.RoleRef
	default:
		return nil
	}
	gr := rbacv1.Resource(resource)
	if ref == nil {
		if e.allowed(ctx, user, "escalate", resource, ns, name) {
			return nil
		}
		return e.covers(ctx, user, ns, rules, gr, name, "attempting to grant RBAC permissions not currently held")
	}
	refResource := "clusterroles"
	if ref.Kind == "Role" {
		refResource = "roles"
	}
	if e.allowed(ctx, user, "bind", refResource, ns, ref.Name) {
		return nil
	}
	var roleRules []rbacv1.PolicyRule
	switch ref.Kind {
	case "Role":
		role, err := e.RBAC.roles.Roles(ns).Get(ref.Name)
		if err != nil {
			return apierrors.NewForbidden(gr, name, fmt.Errorf("user %q cannot bind role %q: %v", user.Name, ref.Name, err))
		}
		roleRules = role.Rules
	default:
		role, err := e.RBAC.clusterRoles.Get(ref.Name)
		if err != nil {
			return apierrors.NewForbidden(gr, name, fmt.Errorf("user %q cannot bind clusterrole %q: %v", user.Name, ref.Name, err))
		}
		roleRules = role.Rules
	}
	return e.covers(ctx, user, ns, roleRules, gr, name, "attempting to grant RBAC permissions not currently held")
}

func (e *Escalation) allowed(ctx context.Context, user User, verb, resource, ns, name string) bool {
	d, _, _ := e.Authorizer.Authorize(ctx, Attributes{User: user, Verb: verb, IsResource: true,
		APIGroup: rbacv1.GroupName, Resource: resource, Namespace: ns, Name: name})
	return d == Allow
}

func (e *Escalation) covers(ctx context.Context, user User, ns string, rules []rbacv1.PolicyRule, gr schema.GroupResource, name, what string) error {
	held, err := e.RBAC.RulesFor(ctx, user, ns)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	ok, missing := rbacvalidation.Covers(held, rules)
	if ok {
		return nil
	}
	var lines []string
	for _, r := range missing {
		lines = append(lines, r.String())
	}
	return apierrors.NewForbidden(gr, name,
		fmt.Errorf("user %q (groups=%q) is %s:\n%s", user.Name, user.Groups, what, strings.Join(lines, "\n")))
}

// Deferred is an Authorizer set once its parts exist (the apiserver
// serves before its own informers can list through it); until then it
// waits, for a while, rather than deny.
type Deferred struct {
	once  sync.Once
	ready chan struct{}
	z     Authorizer
}

// NewDeferred is a Deferred not yet set.
func NewDeferred() *Deferred { return &Deferred{ready: make(chan struct{})} }

// Set hands over the real authorizer (once).
func (d *Deferred) Set(z Authorizer) {
	d.once.Do(func() {
		d.z = z
		close(d.ready)
	})
}

// Authorize waits up to 30s for Set, then asks the real authorizer.
func (d *Deferred) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	select {
	case <-d.ready:
		return d.z.Authorize(ctx, a)
	case <-ctx.Done():
		return NoOpinion, "", ctx.Err()
	case <-time.After(30 * time.Second):
		return NoOpinion, "", fmt.Errorf("authorization is not ready")
	}
}
