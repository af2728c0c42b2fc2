package openapi

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Resource describes one served resource (a plural name of a group
// version) and the Go types behind it.
type Resource struct {
	// GroupVersionKind of the objects of the resource.
	GroupVersionKind schema.GroupVersionKind
	// Resource is the plural lower-case name, e.g. "deployments".
	Resource string
	// Namespaced tells whether objects live in a namespace.
	Namespaced bool
	// Verbs served on the resource: a subset of get, list, watch, create,
	// update, patch, delete and deletecollection.
	Verbs []string
	// Subresources served below an object, e.g. "status", "scale",
	// "binding".
	Subresources []string
	// Object is a zero value of the Go type, e.g. &corev1.Pod{}.
	Object runtime.Object
	// ListObject is a zero value of the list type, e.g. &corev1.PodList{}.
	// It may be nil when neither list nor watch is served.
	ListObject runtime.Object
}

const (
	docTitle   = "Kubernetes"
	docVersion = "unversioned"
)

// BuildV2 builds the OpenAPI v2 (Swagger 2.0) document for resources.
func BuildV2(resources []Resource) (*spec.Swagger, error) {
	items, err := allPaths(resources)
	if err != nil {
		return nil, err
	}
	g := newSchemaGenerator(false)
	if err := registerKinds(g, resources); err != nil {
		return nil, err
	}
	paths := map[string]spec.PathItem{}
	for _, it := range items {
		pi := spec.PathItem{}
		for _, p := range it.params {
			pi.Parameters = append(pi.Parameters, v2Param(p))
		}
		for _, op := range it.ops {
			o, err := v2Operation(g, op)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", op.method, it.path, err)
			}
			setV2Op(&pi, op.method, o)
		}
		paths[it.path] = pi
	}
	g.finish()
	defs := spec.Definitions{}
	for name, s := range g.defs {
		defs[name] = *s
	}
	return &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: docTitle, Version: docVersion}},
		Paths:       &spec.Paths{Paths: paths},
		Definitions: defs,
	}}, nil
}

// BuildV3 builds one OpenAPI v3 document per group version. The map is
// keyed by the discovery path of the group version: "api/v1",
// "apis/apps/v1", ...
func BuildV3(resources []Resource) (map[string]*spec3.OpenAPI, error) {
	items, err := allPaths(resources)
	if err != nil {
		return nil, err
	}
	g := newSchemaGenerator(true)
	if err := registerKinds(g, resources); err != nil {
		return nil, err
	}
	docs := map[string]*spec3.OpenAPI{}
	roots := map[string]map[string]bool{}
	for _, it := range items {
		key := gvDocPath(it.gv)
		doc := docs[key]
		if doc == nil {
			doc = &spec3.OpenAPI{
				Version:    "3.0.0",
				Info:       &spec.Info{InfoProps: spec.InfoProps{Title: docTitle, Version: docVersion}},
				Paths:      &spec3.Paths{Paths: map[string]*spec3.Path{}},
				Components: &spec3.Components{Schemas: map[string]*spec.Schema{}},
			}
			docs[key] = doc
			roots[key] = map[string]bool{}
		}
		p := &spec3.Path{}
		for _, prm := range it.params {
			p.Parameters = append(p.Parameters, v3Param(prm))
		}
		for _, op := range it.ops {
			o, used, err := v3Operation(g, op)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", op.method, it.path, err)
			}
			for _, name := range used {
				roots[key][name] = true
			}
			setV3Op(p, op.method, o)
		}
		doc.Paths.Paths[it.path] = p
	}
	g.finish()
	for key, doc := range docs {
		for name := range closure(g.defs, roots[key], refPrefixV3) {
			doc.Components.Schemas[name] = g.defs[name]
		}
	}
	return docs, nil
}

// Definitions returns the OpenAPI v3 schemas of the resources' kinds and
// of every type they reach, keyed by model name, each kind's tagged with
// its x-kubernetes-group-version-kind: what managedfields.NewTypeConverter
// reads to track field ownership for server-side apply.
func Definitions(resources []Resource) (map[string]*spec.Schema, error) {
	g := newSchemaGenerator(true)
	if err := registerKinds(g, resources); err != nil {
		return nil, err
	}
	g.finish()
	return g.defs, nil
}

// allPaths describes the paths of all resources, rejecting duplicates.
func allPaths(resources []Resource) ([]pathItem, error) {
	var items []pathItem
	seen := map[string]string{}
	for _, r := range resources {
		ps, err := resourcePaths(r)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if other, dup := seen[p.path]; dup {
				return nil, fmt.Errorf("path %s is served by both %s and %s", p.path, other, r.GroupVersionKind)
			}
			seen[p.path] = r.GroupVersionKind.String()
		}
		items = append(items, ps...)
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].path < items[j].path })
	return items, nil
}

// registerKinds creates the definitions of all kinds and tags them with
// their group-version-kind.
func registerKinds(g *schemaGenerator, resources []Resource) error {
	gvs := map[schema.GroupVersion]bool{}
	for _, r := range resources {
		gvk := r.GroupVersionKind
		gvs[gvk.GroupVersion()] = true
		if err := g.addGVK(reflect.TypeOf(r.Object), gvk); err != nil {
			return fmt.Errorf("resource %q: %w", r.Resource, err)
		}
		if r.ListObject != nil {
			lt := indirect(reflect.TypeOf(r.ListObject))
			listGVK := gvk.GroupVersion().WithKind(lt.Name())
			if err := g.addGVK(lt, listGVK); err != nil {
				return fmt.Errorf("resource %q: %w", r.Resource, err)
			}
		}
		for _, sub := range r.Subresources {
			info := subresourceFor(r, sub)
			if info.object != nil {
				if err := g.addGVK(info.object, info.gvk); err != nil {
					return fmt.Errorf("resource %q subresource %q: %w", r.Resource, sub, err)
				}
			}
		}
	}
	if err := g.addGVK(statusType, schema.GroupVersionKind{Version: "v1", Kind: "Status"}); err != nil {
		return err
	}
	for gv := range gvs {
		for _, t := range []reflect.Type{deleteOptionsType, watchEventType} {
			if err := g.addGVK(t, gv.WithKind(t.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func v2Param(p param) spec.Parameter {
	out := spec.Parameter{
		ParamProps:   spec.ParamProps{Name: p.name, In: p.in, Description: p.desc, Required: p.required},
		SimpleSchema: spec.SimpleSchema{Type: p.typ},
	}
	out.UniqueItems = p.uniqueItems
	return out
}

func gvkExt(op operation) spec.Extensions {
	return spec.Extensions{
		extAction: op.action,
		extGVK:    gvkExtension(op.gvk),
	}
}

func v2Operation(g *schemaGenerator, op operation) (*spec.Operation, error) {
	o := &spec.Operation{OperationProps: spec.OperationProps{
		ID:          op.id,
		Description: op.desc,
		Consumes:    op.consumes,
		Produces:    op.produces,
		Schemes:     []string{"https"},
		Tags:        []string{op.tag},
	}}
	o.Extensions = gvkExt(op)
	for _, p := range op.params {
		o.Parameters = append(o.Parameters, v2Param(p))
	}
	if op.body != nil {
		ref, _, err := g.typeRef(op.body)
		if err != nil {
			return nil, err
		}
		o.Parameters = append(o.Parameters, spec.Parameter{
			ParamProps: spec.ParamProps{Name: "body", In: "body", Required: true, Schema: &ref},
		})
	}
	o.Responses = &spec.Responses{ResponsesProps: spec.ResponsesProps{StatusCodeResponses: map[int]spec.Response{}}}
	for _, r := range op.responses {
		s, _, err := responseSchema(g, r)
		if err != nil {
			return nil, err
		}
		o.Responses.StatusCodeResponses[r.code] = spec.Response{ResponseProps: spec.ResponseProps{Description: r.desc, Schema: &s}}
	}
	o.Responses.StatusCodeResponses[401] = spec.Response{ResponseProps: spec.ResponseProps{Description: "Unauthorized"}}
	return o, nil
}

func responseSchema(g *schemaGenerator, r response) (spec.Schema, string, error) {
	if r.model == nil {
		return typed("string", ""), "", nil
	}
	return g.typeRef(r.model)
}

func setV2Op(pi *spec.PathItem, method string, o *spec.Operation) {
	switch method {
	case "get":
		pi.Get = o
	case "put":
		pi.Put = o
	case "post":
		pi.Post = o
	case "patch":
		pi.Patch = o
	case "delete":
		pi.Delete = o
	}
}

func v3Param(p param) *spec3.Parameter {
	s := typed(p.typ, "")
	s.UniqueItems = p.uniqueItems
	return &spec3.Parameter{ParameterProps: spec3.ParameterProps{
		Name: p.name, In: p.in, Description: p.desc, Required: p.required, Schema: &s,
	}}
}

func v3Operation(g *schemaGenerator, op operation) (*spec3.Operation, []string, error) {
	var used []string
	o := &spec3.Operation{OperationProps: spec3.OperationProps{
		OperationId: op.id,
		Description: op.desc,
		Tags:        []string{op.tag},
	}}
	o.Extensions = gvkExt(op)
	for _, p := range op.params {
		o.Parameters = append(o.Parameters, v3Param(p))
	}
	if op.body != nil {
		ref, name, err := g.typeRef(op.body)
		if err != nil {
			return nil, nil, err
		}
		used = append(used, name)
		content := map[string]*spec3.MediaType{}
		for _, m := range op.consumes {
			s := ref
			content[m] = &spec3.MediaType{MediaTypeProps: spec3.MediaTypeProps{Schema: &s}}
		}
		o.RequestBody = &spec3.RequestBody{RequestBodyProps: spec3.RequestBodyProps{Content: content, Required: true}}
	}
	o.Responses = &spec3.Responses{ResponsesProps: spec3.ResponsesProps{StatusCodeResponses: map[int]*spec3.Response{}}}
	for _, r := range op.responses {
		s, name, err := responseSchema(g, r)
		if err != nil {
			return nil, nil, err
		}
		if name != "" {
			used = append(used, name)
		}
		content := map[string]*spec3.MediaType{}
		for _, m := range op.produces {
			s := s
			content[m] = &spec3.MediaType{MediaTypeProps: spec3.MediaTypeProps{Schema: &s}}
		}
		o.Responses.StatusCodeResponses[r.code] = &spec3.Response{ResponseProps: spec3.ResponseProps{Description: r.desc, Content: content}}
	}
	o.Responses.StatusCodeResponses[401] = &spec3.Response{ResponseProps: spec3.ResponseProps{Description: "Unauthorized"}}
	return o, used, nil
}

func setV3Op(p *spec3.Path, method string, o *spec3.Operation) {
	switch method {
	case "get":
		p.Get = o
	case "put":
		p.Put = o
	case "post":
		p.Post = o
	case "patch":
		p.Patch = o
	case "delete":
		p.Delete = o
	}
}

// closure returns the names of the definitions reachable from roots.
func closure(defs map[string]*spec.Schema, roots map[string]bool, prefix string) map[string]bool {
	out := map[string]bool{}
	var queue []string
	for name := range roots {
		queue = append(queue, name)
	}
	for len(queue) > 0 {
		name := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if out[name] {
			continue
		}
		def, ok := defs[name]
		if !ok {
			continue
		}
		out[name] = true
		walkRefs(def, func(ref string) {
			if n := strings.TrimPrefix(ref, prefix); n != ref && !out[n] {
				queue = append(queue, n)
			}
		})
	}
	return out
}

// walkRefs calls fn with every $ref found in s and its subschemas.
func walkRefs(s *spec.Schema, fn func(string)) {
	if s == nil {
		return
	}
	if ref := s.Ref.String(); ref != "" {
		fn(ref)
	}
	for k := range s.Properties {
		p := s.Properties[k]
		walkRefs(&p, fn)
	}
	for k := range s.PatternProperties {
		p := s.PatternProperties[k]
		walkRefs(&p, fn)
	}
	if s.Items != nil {
		walkRefs(s.Items.Schema, fn)
		for i := range s.Items.Schemas {
			walkRefs(&s.Items.Schemas[i], fn)
		}
	}
	if s.AdditionalProperties != nil {
		walkRefs(s.AdditionalProperties.Schema, fn)
	}
	for _, list := range [][]spec.Schema{s.AllOf, s.OneOf, s.AnyOf} {
		for i := range list {
			walkRefs(&list[i], fn)
		}
	}
	walkRefs(s.Not, fn)
}
