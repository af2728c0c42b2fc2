// Package matching decides whether admission configuration selects a
// write, as Kubernetes' admissionregistration.k8s.io/v1 says: resource
// rules (operations, groups, versions, resource[/subresource] with their
// wildcards, scope, names), namespaceSelector against the labels of the
// write's namespace, and objectSelector against the new or old object.
// ValidatingAdmissionPolicies, their bindings and admission webhooks
// match through it; it reads the namespace and nothing else.
package matching

import (
	"context"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/minik8s/minik8s/pkg/admission"
)

var namespacesGVR = corev1.SchemeGroupVersion.WithResource("namespaces")

// Request is what matching reads of a write: its attributes, and its
// namespace with the namespace's labels (NamespaceLabels nil for
// cluster-scoped objects; for a Namespace itself the labels of the
// object).
type Request struct {
	*admission.Attributes
	NamespaceObject *corev1.Namespace
	NamespaceLabels map[string]string
}

// NewRequest reads the namespace of the write a describes.
func NewRequest(ctx context.Context, a *admission.Attributes, objects admission.Objects) (Request, error) {
	r := Request{Attributes: a}
	switch {
	case r.IsNamespace():
		obj := a.Object
		if obj == nil {
			obj = a.OldObject
		}
		r.NamespaceLabels = LabelsOf(obj)
	case a.Namespace != "":
		obj, err := objects.Get(ctx, namespacesGVR, "", a.Namespace)
		if err != nil {
			return r, err
		}
		ns, ok := obj.(*corev1.Namespace)
		if !ok {
			return r, apierrors.NewInternalError(fmt.Errorf("namespace %s is a %T", a.Namespace, obj))
		}
		r.NamespaceObject = ns
		r.NamespaceLabels = LabelsOf(ns)
	}
	return r, nil
}

// Matches says whether m (a policy's matchConstraints, a binding's
// matchResources, a webhook's selectors and rules) selects the write:
// its namespace and object selectors, then its resource rules (all
// resources when it has none and emptyRulesMatch, as a binding's), less
// its excluded rules.
func (r Request) Matches(m *admissionregistrationv1.MatchResources, emptyRulesMatch bool) bool {
	if m == nil {
		return emptyRulesMatch
	}
	if !r.NamespaceMatches(m.NamespaceSelector) || !r.ObjectMatches(m.ObjectSelector) {
		return false
	}
	for _, rule := range m.ExcludeResourceRules {
		if r.RuleMatches(&rule) {
			return false
		}
	}
	if len(m.ResourceRules) == 0 {
		return emptyRulesMatch
	}
	for _, rule := range m.ResourceRules {
		if r.RuleMatches(&rule) {
			return true
		}
	}
	return false
}

// NamespaceMatches applies a namespace selector: cluster-scoped objects
// other than Namespaces match any; a Namespace is matched by its own
// labels.
func (r Request) NamespaceMatches(sel *metav1.LabelSelector) bool {
	if sel == nil || r.NamespaceLabels == nil && !r.IsNamespace() {
		return true
	}
	return selectorMatches(sel, r.NamespaceLabels)
}

// IsNamespace says whether the write is of a Namespace itself.
func (r Request) IsNamespace() bool {
	return r.Resource.Group == "" && r.Resource.Resource == "namespaces" && r.Subresource == ""
}

// ObjectMatches applies an object selector to the new object or the old.
func (r Request) ObjectMatches(sel *metav1.LabelSelector) bool {
	if sel == nil {
		return true
	}
	for _, obj := range []runtime.Object{r.Object, r.OldObject} {
		if obj != nil && selectorMatches(sel, LabelsOf(obj)) {
			return true
		}
	}
	return false
}

func selectorMatches(sel *metav1.LabelSelector, l map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(l))
}

// RuleMatches applies one rule: operations, groups, versions and
// resource[/subresource] with their wildcards, scope and names.
func (r Request) RuleMatches(rule *admissionregistrationv1.NamedRuleWithOperations) bool {
	if !anyOf(rule.Operations, admissionregistrationv1.OperationType(r.Operation)) ||
		!anyOf(rule.APIGroups, r.Resource.Group) || !anyOf(rule.APIVersions, r.Resource.Version) {
		return false
	}
	if len(rule.ResourceNames) > 0 && !anyOf(rule.ResourceNames, r.Name) {
		return false
	}
	if s := rule.Scope; s != nil {
		if *s == admissionregistrationv1.ClusterScope && r.Namespace != "" || *s == admissionregistrationv1.NamespacedScope && r.Namespace == "" {
			return false
		}
	}
	for _, res := range rule.Resources {
		name, sub, _ := strings.Cut(res, "/")
		if (name == "*" || name == r.Resource.Resource) && (sub == "*" || sub == r.Subresource) {
			return true
		}
	}
	return false
}

// anyOf says whether values hold v or "*".
func anyOf[T ~string](values []T, v T) bool {
	for _, x := range values {
		if x == v || x == "*" {
			return true
		}
	}
	return false
}

// LabelsOf is obj's labels, never nil.
func LabelsOf(obj runtime.Object) map[string]string {
	if obj == nil {
		return map[string]string{}
	}
	m, err := meta.Accessor(obj)
	if err != nil || m.GetLabels() == nil {
		return map[string]string{}
	}
	return m.GetLabels()
}
