package apiserver

import (
	"context"
	"fmt"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/minik8s/minik8s/pkg/admission"
	"github.com/minik8s/minik8s/pkg/apiserver/authz"
	"github.com/minik8s/minik8s/pkg/apiserver/openapi"
)

// What admission reads beyond objects: the schemas (the ValidatingAdmissionPolicy type
// checker): those of the built-in kinds, as /openapi/v2 publishes them,
// and those of custom resources, built from their definitions by
// apiextensions-apiserver's builder, references inlined; the kinds of
// resources; the server's authorizer.

// builtinSchemas holds the definitions of the built-in kinds, built on
// first use.
type builtinSchemas struct {
	once sync.Once
	defs map[string]spec.Schema
	refs map[schema.GroupVersionKind]string
}

func (b *builtinSchemas) load(resources []openapi.Resource) {
	b.once.Do(func() {
		b.defs, b.refs = map[string]spec.Schema{}, map[schema.GroupVersionKind]string{}
		if doc, err := openapi.BuildV2(resources); err == nil {
			b.add(doc)
		}
	})
}

// add indexes doc's definitions, and their kinds.
func (b *builtinSchemas) add(doc *spec.Swagger) {
	for name, def := range doc.Definitions {
		b.defs[name] = def
		list, _ := def.Extensions["x-kubernetes-group-version-kind"].([]interface{})
		for _, v := range list {
			if m, ok := v.(map[string]interface{}); ok {
				gvk := schema.GroupVersionKind{Group: fmt.Sprint(m["group"]), Version: fmt.Sprint(m["version"]), Kind: fmt.Sprint(m["kind"])}
				b.refs[gvk] = name
			}
		}
	}
}

// resolve returns gvk's schema with its references inlined.
func (b *builtinSchemas) resolve(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	name, ok := b.refs[gvk]
	if !ok {
		return nil, fmt.Errorf("cannot resolve %v: %w", gvk, resolver.ErrSchemaNotFound)
	}
	return resolver.PopulateRefs(func(ref string) (*spec.Schema, bool) {
		s, ok := b.defs[strings.TrimPrefix(ref, "#/definitions/")]
		return &s, ok
	}, name)
}

// ResolveSchema returns the schema of a served kind (resolver.SchemaResolver).
func (o storedObjects) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	o.s.schemas.load(o.s.oapiResources)
	if s, err := o.s.schemas.resolve(gvk); err == nil {
		return s, nil
	}
	list, err := o.List(context.Background(), crdGVR, "")
	if err != nil {
		return nil, err
	}
	for _, obj := range list {
		crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
		if !ok || crd.Spec.Group != gvk.Group || crd.Spec.Names.Kind != gvk.Kind {
			continue
		}
		withNames := crd.DeepCopy()
		if withNames.Status.AcceptedNames.Plural == "" {
			withNames.Status.AcceptedNames = crd.Spec.Names
		}
		doc, err := builder.BuildOpenAPIV2(withNames, gvk.Version, builder.Options{V2: true})
		if err != nil {
			return nil, err
		}
		defs := &builtinSchemas{defs: map[string]spec.Schema{}, refs: map[schema.GroupVersionKind]string{}}
		defs.add(doc)
		return defs.resolve(gvk)
	}
	return nil, fmt.Errorf("cannot resolve %v: %w", gvk, resolver.ErrSchemaNotFound)
}

// KindFor resolves a served resource to its kind (admission.KindResolver).
func (o storedObjects) KindFor(gvr schema.GroupVersionResource) (schema.GroupVersionKind, bool) {
	res, ok := o.s.table.Lookup(gvr)
	if !ok {
		return schema.GroupVersionKind{}, false
	}
	return res.GroupVersionKind(), true
}

// Authorize answers the authorization checks of admission (the
// authorizer of a policy's CEL) with the server's authorizer
// (k8s.io/apiserver's authorizer.UnconditionalAuthorizer).
func (o storedObjects) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if o.s.cfg.Authorizer == nil {
		return authorizer.DecisionAllow, "", nil
	}
	u := authz.User{}
	if info := a.GetUser(); info != nil {
		u = authz.User{Name: info.GetName(), UID: info.GetUID(), Groups: info.GetGroups()}
	}
	d, reason, err := o.s.cfg.Authorizer.Authorize(ctx, authz.Attributes{User: u, Verb: a.GetVerb(), IsResource: a.IsResourceRequest(),
		APIGroup: a.GetAPIGroup(), APIVersion: a.GetAPIVersion(), Namespace: a.GetNamespace(), Resource: a.GetResource(),
		Subresource: a.GetSubresource(), Name: a.GetName(), Path: a.GetPath()})
	switch d {
	case authz.Allow:
		return authorizer.DecisionAllow, reason, err
	case authz.Deny:
		return authorizer.DecisionDeny, reason, err
	}
	return authorizer.DecisionNoOpinion, reason, err
}

var (
	_ admission.KindResolver             = storedObjects{}
	_ admission.SchemaResolver           = storedObjects{}
	_ admission.FieldTypesResolver       = storedObjects{}
	_ authorizer.UnconditionalAuthorizer = storedObjects{}
)
