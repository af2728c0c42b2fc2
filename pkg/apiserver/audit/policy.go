package audit

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Request is what a policy rule is matched against.
type Request struct {
	User, Verb                                 string
	Groups                                     []string
	IsResource                                 bool
	APIGroup, Resource, Subresource, Namespace string
	Name, Path                                 string
}

// LoadPolicy reads a Policy file (YAML or JSON, apiVersion audit.k8s.io/v1).
func LoadPolicy(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p Policy
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, fmt.Errorf("audit policy %s: %w", path, err)
	}
	if p.Kind != "Policy" || p.APIVersion != "audit.k8s.io/v1" {
		return nil, fmt.Errorf("audit policy %s: want apiVersion audit.k8s.io/v1, kind Policy, got %s %s", path, p.APIVersion, p.Kind)
	}
	for i, r := range p.Rules {
		if _, ok := rank[r.Level]; !ok {
			return nil, fmt.Errorf("audit policy %s: rules[%d].level: %q is not None, Metadata, Request or RequestResponse", path, i, r.Level)
		}
		if len(r.NonResourceURLs) > 0 && (len(r.Resources) > 0 || len(r.Namespaces) > 0) {
			return nil, fmt.Errorf("audit policy %s: rules[%d]: nonResourceURLs cannot be combined with resources or namespaces", path, i)
		}
	}
	return &p, nil
}

// DefaultPolicy logs every request at Metadata except the routine
// traffic of the cluster's own components (health checks, Events,
// Leases, and reads by system:masters of anything but Secrets): every
// write, every Secret read and every request of a user or node is kept.
func DefaultPolicy() *Policy {
	return &Policy{Rules: []PolicyRule{
		{Level: LevelNone, NonResourceURLs: []string{"/healthz*", "/livez*", "/readyz*", "/version"}},
		{Level: LevelNone, Resources: []GroupResources{{Group: "", Resources: []string{"events"}}, {Group: "events.k8s.io", Resources: []string{"events"}}}},
		{Level: LevelNone, Verbs: []string{"get", "update", "patch"}, Resources: []GroupResources{{Group: "coordination.k8s.io", Resources: []string{"leases"}}}},
		{Level: LevelMetadata, Resources: []GroupResources{{Group: "", Resources: []string{"secrets"}}}},
		{Level: LevelNone, UserGroups: []string{"system:masters"}, Verbs: []string{"get", "list", "watch"}},
		{Level: LevelMetadata},
	}}
}

// LevelOf is the level of the first rule matching r (None if none does).
func (p *Policy) LevelOf(r Request) Level {
	for _, rule := range p.Rules {
		if rule.matches(r) {
			return rule.Level
		}
	}
	return LevelNone
}

func (rule *PolicyRule) matches(r Request) bool {
	if len(rule.Users) > 0 && !slices.Contains(rule.Users, r.User) {
		return false
	}
	if len(rule.UserGroups) > 0 && !slices.ContainsFunc(rule.UserGroups, func(g string) bool { return slices.Contains(r.Groups, g) }) {
		return false
	}
	if len(rule.Verbs) > 0 && !slices.Contains(rule.Verbs, r.Verb) {
		return false
	}
	if !r.IsResource {
		if len(rule.Resources) > 0 || len(rule.Namespaces) > 0 {
			return false
		}
		if len(rule.NonResourceURLs) == 0 {
			return true
		}
		return slices.ContainsFunc(rule.NonResourceURLs, func(u string) bool {
			if prefix, ok := strings.CutSuffix(u, "*"); ok {
				return strings.HasPrefix(r.Path, prefix)
			}
			return u == r.Path
		})
	}
	if len(rule.NonResourceURLs) > 0 {
		return false
	}
	if len(rule.Namespaces) > 0 && !slices.Contains(rule.Namespaces, r.Namespace) {
		return false
	}
	if len(rule.Resources) == 0 {
		return true
	}
	full := r.Resource
	if r.Subresource != "" {
		full += "/" + r.Subresource
	}
	for _, gr := range rule.Resources {
		if gr.Group != r.APIGroup {
			continue
		}
		if len(gr.ResourceNames) > 0 && !slices.Contains(gr.ResourceNames, r.Name) {
			continue
		}
		if len(gr.Resources) == 0 {
			return true
		}
		for _, res := range gr.Resources {
			if res == full || res == "*" || (r.Subresource != "" && (res == "*/"+r.Subresource || res == r.Resource+"/*")) {
				return true
			}
		}
	}
	return false
}
