// Package clusterroleaggregation is Kubernetes' ClusterRole aggregation
// controller: a ClusterRole with an aggregationRule gets, as its rules,
// the rules of every ClusterRole its selectors match (by name order,
// duplicates dropped), so that admin, edit and view grow with the roles
// labeled rbac.authorization.k8s.io/aggregate-to-*. It owns the rules of
// aggregated ClusterRoles and nothing else.
package clusterroleaggregation

import (
	"context"
	"errors"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// Controller aggregates ClusterRoles.
type Controller struct {
	kit.Base
	roles rbaclisters.ClusterRoleLister
}

// New wires the controller to kc's ClusterRole informer: any change of
// any ClusterRole re-aggregates every aggregated one (there are few).
func New(kc *kit.Context) (*Controller, error) {
	inf := kc.Factory.Rbac().V1().ClusterRoles()
	c := &Controller{Base: kc.NewBase("clusterrole-aggregation", "clusterrole", 1, ""), roles: inf.Lister()}
	c.Loop.Reconcile = c.Reconcile
	all := func(any) { c.enqueueAggregated() }
	return c, errors.Join(c.Loop.Watch(inf.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: all, DeleteFunc: all, UpdateFunc: func(_, cur any) { all(cur) },
	}))
}

func (c *Controller) enqueueAggregated() {
	roles, _ := c.roles.List(labels.Everything())
	for _, r := range roles {
		if r.AggregationRule != nil {
			loop.Enqueue(c.Queue, r)
		}
	}
}

// Reconcile sets the aggregated rules of the ClusterRole key names.
func (c *Controller) Reconcile(ctx context.Context, key string) error {
	role, err := c.roles.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || role.AggregationRule == nil {
		return err
	}
	all, err := c.roles.List(labels.Everything())
	if err != nil {
		return err
	}
	slices.SortFunc(all, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	var rules []rbacv1.PolicyRule
	for _, sel := range role.AggregationRule.ClusterRoleSelectors {
		s, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil {
			continue
		}
		for _, other := range all {
			if other.Name == role.Name || !s.Matches(labels.Set(other.Labels)) {
				continue
			}
			for _, r := range other.Rules {
				if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, r) }) {
					rules = append(rules, r)
				}
			}
		}
	}
	if equality.Semantic.DeepEqual(rules, role.Rules) || (len(rules) == 0 && len(role.Rules) == 0) {
		return nil
	}
	role = role.DeepCopy()
	role.Rules = rules
	_, err = c.Client.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{})
	return err
}
