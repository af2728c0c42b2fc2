package policy

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// Matches says whether m (a policy's matchConstraints or a binding's
// matchResources) selects the write: its namespace and object
// selectors, then its resource rules (all resources when it has none
// and emptyRulesMatch, as a binding's), less its excluded rules.
func (r *Request) Matches(m *admissionregistrationv1.MatchResources, emptyRulesMatch bool) bool {
	if m == nil {
		return emptyRulesMatch
	}
	if !r.namespaceMatches(m.NamespaceSelector) || !r.objectMatches(m.ObjectSelector) {
		return false
	}
	for _, rule := range m.ExcludeResourceRules {
		if r.ruleMatches(&rule) {
			return false
		}
	}
	if len(m.ResourceRules) == 0 {
		return emptyRulesMatch
	}
	for _, rule := range m.ResourceRules {
		if r.ruleMatches(&rule) {
			return true
		}
	}
	return false
}

// namespaceMatches applies a namespace selector: cluster-scoped objects
// other than Namespaces match any; a Namespace is matched by its own
// labels.
func (r *Request) namespaceMatches(sel *metav1.LabelSelector) bool {
	if sel == nil || r.namespaceLabels == nil && !r.isNamespace() {
		return true
	}
	return selectorMatches(sel, r.namespaceLabels)
}

func (r *Request) isNamespace() bool {
	return r.Resource.Group == "" && r.Resource.Resource == "namespaces" && r.Subresource == ""
}

// objectMatches applies an object selector to the new object or the old.
func (r *Request) objectMatches(sel *metav1.LabelSelector) bool {
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

// ruleMatches applies one rule: operations, groups, versions and
// resource[/subresource] with their wildcards, scope and names.
func (r *Request) ruleMatches(rule *admissionregistrationv1.NamedRuleWithOperations) bool {
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
