package kinds

import (
	"fmt"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/minik8s/minik8s/pkg/apiserver/openapi"
	"github.com/minik8s/minik8s/pkg/registry"
)

// The type checking of policies: Kubernetes' checker, over the schemas
// minik8s publishes for its built-in kinds (custom resources are not
// checked: their policies get no warnings).

// builtinSchemas resolves the OpenAPI schema of a built-in kind, its
// references inlined, as the type checker reads it.
type builtinSchemas struct {
	defs map[string]spec.Schema
	refs map[schema.GroupVersionKind]string
}

func (b *builtinSchemas) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	ref, ok := b.refs[gvk]
	if !ok {
		return nil, fmt.Errorf("cannot resolve %v: %w", gvk, resolver.ErrSchemaNotFound)
	}
	return resolver.PopulateRefs(func(ref string) (*spec.Schema, bool) {
		s, ok := b.defs[strings.TrimPrefix(ref, "#/definitions/")]
		return &s, ok
	}, ref)
}

var (
	typeCheckerOnce sync.Once
	typeChecker     *validating.TypeChecker
)

// policyTypeChecker is built once, on the first policy written.
func policyTypeChecker() *validating.TypeChecker {
	typeCheckerOnce.Do(func() { typeChecker = newPolicyTypeChecker() })
	return typeChecker
}

func newPolicyTypeChecker() *validating.TypeChecker {
	var resources []openapi.Resource
	var gvs []schema.GroupVersion
	builtin := Builtin()
	scheme, err := registry.NewScheme()
	if err == nil {
		_, err = registry.NewTable(scheme, builtin) // gives the resources their Go types
	}
	if err != nil {
		panic(fmt.Sprintf("the built-in kinds: %v", err))
	}
	for _, r := range builtin {
		resources = append(resources, openapi.Resource{GroupVersionKind: r.GroupVersionKind(), Resource: r.Resource,
			Namespaced: r.Namespaced, Verbs: []string{"get"}, Object: r.New()})
		gvs = append(gvs, r.GroupVersionResource.GroupVersion())
	}
	mapper := meta.NewDefaultRESTMapper(gvs)
	for _, r := range builtin {
		scope := meta.RESTScopeRoot
		if r.Namespaced {
			scope = meta.RESTScopeNamespace
		}
		mapper.AddSpecific(r.GroupVersionKind(), r.GroupVersionResource, r.GroupVersionResource.GroupVersion().WithResource(strings.ToLower(r.Kind)), scope)
	}
	schemas := &builtinSchemas{defs: map[string]spec.Schema{}, refs: map[schema.GroupVersionKind]string{}}
	if doc, err := openapi.BuildV2(resources); err == nil {
		for name, def := range doc.Definitions {
			schemas.defs[name] = def
			list, _ := def.Extensions["x-kubernetes-group-version-kind"].([]interface{})
			for _, v := range list {
				if m, ok := v.(map[string]interface{}); ok {
					gvk := schema.GroupVersionKind{Group: fmt.Sprint(m["group"]), Version: fmt.Sprint(m["version"]), Kind: fmt.Sprint(m["kind"])}
					schemas.refs[gvk] = "#/definitions/" + name
				}
			}
		}
	}
	return &validating.TypeChecker{SchemaResolver: schemas, RestMapper: mapper}
}

// typeCheckPolicy returns the type checker's warnings on p's validations
// (nil when none).
func typeCheckPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy) []admissionregistrationv1.ExpressionWarning {
	return policyTypeChecker().Check(p)
}
