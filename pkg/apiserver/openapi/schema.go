package openapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Vendor extension keys understood by the Kubernetes clients.
const (
	extGVK                  = "x-kubernetes-group-version-kind"
	extAction               = "x-kubernetes-action"
	extPatchStrategy        = "x-kubernetes-patch-strategy"
	extPatchMergeKey        = "x-kubernetes-patch-merge-key"
	extIntOrString          = "x-kubernetes-int-or-string"
	extPreserveUnknownField = "x-kubernetes-preserve-unknown-fields"
)

const (
	refPrefixV2 = "#/definitions/"
	refPrefixV3 = "#/components/schemas/"
)

// Optional methods of the apimachinery / k8s.io/api types that describe how
// a type is represented in OpenAPI. They are generated upstream and let us
// match the upstream documents without hard-coding type lists.
type (
	openAPISchemaTyper interface {
		OpenAPISchemaType() []string
		OpenAPISchemaFormat() string
	}
	openAPIV3OneOfTyper interface {
		OpenAPIV3OneOfTypes() []string
	}
	openAPIModelNamer interface {
		OpenAPIModelName() string
	}
	swaggerDocer interface {
		SwaggerDoc() map[string]string
	}
)

var (
	jsonMarshalerType = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
	timeType          = reflect.TypeOf(time.Time{})
)

// schemaGenerator turns Go types into OpenAPI schemas. Named struct types
// (and the special apimachinery types) become definitions that are
// referenced with $ref, which also takes care of recursive types.
type schemaGenerator struct {
	v3 bool
	// defs holds the generated definitions by model name.
	defs map[string]*spec.Schema
	// names maps a Go type to its model name once a definition exists.
	names map[reflect.Type]string
	// owners maps a model name back to the Go type that owns it.
	owners map[string]reflect.Type
	// gvks collects the x-kubernetes-group-version-kind values per model.
	gvks map[string][]schema.GroupVersionKind
}

func newSchemaGenerator(v3 bool) *schemaGenerator {
	return &schemaGenerator{
		v3:     v3,
		defs:   map[string]*spec.Schema{},
		names:  map[reflect.Type]string{},
		owners: map[string]reflect.Type{},
		gvks:   map[string][]schema.GroupVersionKind{},
	}
}

func (g *schemaGenerator) refPrefix() string {
	if g.v3 {
		return refPrefixV3
	}
	return refPrefixV2
}

// refSchema returns a schema that references the named definition.
func (g *schemaGenerator) refSchema(name string) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef(g.refPrefix() + name)}}
}

// typeRef returns a $ref schema for t, creating the definition as needed.
// It is used for top-level kinds, request bodies and responses.
func (g *schemaGenerator) typeRef(t reflect.Type) (spec.Schema, string, error) {
	t = indirect(t)
	if !needsDefinition(t) {
		return spec.Schema{}, "", fmt.Errorf("type %v is not a named struct type", t)
	}
	name, err := g.define(t)
	if err != nil {
		return spec.Schema{}, "", err
	}
	return g.refSchema(name), name, nil
}

// addGVK records that the definition of t is the schema of kind gvk.
func (g *schemaGenerator) addGVK(t reflect.Type, gvk schema.GroupVersionKind) error {
	_, name, err := g.typeRef(t)
	if err != nil {
		return err
	}
	for _, existing := range g.gvks[name] {
		if existing == gvk {
			return nil
		}
	}
	g.gvks[name] = append(g.gvks[name], gvk)
	return nil
}

// finish attaches the collected group-version-kind extensions to the
// definitions. It must be called once after all types were added.
func (g *schemaGenerator) finish() {
	for name, list := range g.gvks {
		sort.Slice(list, func(i, j int) bool {
			a, b := list[i], list[j]
			if a.Group != b.Group {
				return a.Group < b.Group
			}
			if a.Version != b.Version {
				return a.Version < b.Version
			}
			return a.Kind < b.Kind
		})
		values := make([]interface{}, 0, len(list))
		for _, gvk := range list {
			values = append(values, gvkExtension(gvk))
		}
		def := g.defs[name]
		if def.Extensions == nil {
			def.Extensions = spec.Extensions{}
		}
		def.Extensions[extGVK] = values
	}
}

func gvkExtension(gvk schema.GroupVersionKind) map[string]interface{} {
	return map[string]interface{}{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
}

// schemaFor returns the schema used where a value of type t appears (a
// struct field, a list item, a map value).
func (g *schemaGenerator) schemaFor(t reflect.Type) (spec.Schema, error) {
	t = indirect(t)
	if needsDefinition(t) {
		name, err := g.define(t)
		if err != nil {
			return spec.Schema{}, err
		}
		return g.refSchema(name), nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return typed("boolean", ""), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32,
		reflect.Uint8, reflect.Uint16:
		return typed("integer", "int32"), nil
	case reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return typed("integer", "int64"), nil
	case reflect.Float32:
		return typed("number", "float"), nil
	case reflect.Float64:
		return typed("number", "double"), nil
	case reflect.String:
		return typed("string", ""), nil
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			// encoding/json writes []byte as base64.
			return typed("string", "byte"), nil
		}
		item, err := g.schemaFor(t.Elem())
		if err != nil {
			return spec.Schema{}, err
		}
		s := typed("array", "")
		s.Items = &spec.SchemaOrArray{Schema: &item}
		return s, nil
	case reflect.Map:
		value, err := g.schemaFor(t.Elem())
		if err != nil {
			return spec.Schema{}, err
		}
		s := typed("object", "")
		s.AdditionalProperties = &spec.SchemaOrBool{Allows: true, Schema: &value}
		return s, nil
	case reflect.Interface:
		// Anything goes (runtime.Object and friends).
		return g.arbitrary(), nil
	case reflect.Struct:
		// An anonymous struct: inline it.
		s := typed("object", "")
		if err := g.fillStruct(t, &s); err != nil {
			return spec.Schema{}, err
		}
		return s, nil
	}
	return spec.Schema{}, fmt.Errorf("unsupported Go type %v (kind %v)", t, t.Kind())
}

func (g *schemaGenerator) arbitrary() spec.Schema {
	s := spec.Schema{}
	if g.v3 {
		s.Extensions = spec.Extensions{extPreserveUnknownField: true}
	}
	return s
}

// define creates (once) the definition of the named type t and returns its
// model name.
func (g *schemaGenerator) define(t reflect.Type) (string, error) {
	if name, ok := g.names[t]; ok {
		return name, nil
	}
	name := modelName(t)
	if other, taken := g.owners[name]; taken && other != t {
		base := name
		for i := 2; ; i++ {
			name = fmt.Sprintf("%s_%d", base, i)
			if _, taken := g.owners[name]; !taken {
				break
			}
		}
	}
	// Register before building so that recursive types terminate.
	g.names[t] = name
	g.owners[name] = t
	def := &spec.Schema{}
	g.defs[name] = def
	s, err := g.buildDefinition(t)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	*def = s
	return name, nil
}

func (g *schemaGenerator) buildDefinition(t reflect.Type) (spec.Schema, error) {
	doc := swaggerDoc(t)
	zero := reflect.New(t)

	// Types that declare their OpenAPI representation (metav1.Time,
	// MicroTime, Duration, resource.Quantity, intstr.IntOrString, and
	// the JSON types of any value, whose type is none).
	if typer, ok := implements[openAPISchemaTyper](zero); ok {
		s := spec.Schema{}
		s.Description = doc[""]
		s.Format = typer.OpenAPISchemaFormat()
		oneOf, hasOneOf := implements[openAPIV3OneOfTyper](zero)
		if g.v3 && hasOneOf {
			for _, typ := range oneOf.OpenAPIV3OneOfTypes() {
				s.OneOf = append(s.OneOf, typed(typ, ""))
			}
			// Values of these types are either a number or a string.
			s.Extensions = spec.Extensions{extIntOrString: true}
		} else {
			s.Type = typer.OpenAPISchemaType()
			// No type is any JSON value (apiextensions' JSON, minik8s'
			// JSON): in v3, a schema without a type that keeps whatever
			// it holds, as a CRD's x-kubernetes-preserve-unknown-fields.
			if g.v3 && len(s.Type) == 0 {
				s.Extensions = spec.Extensions{extPreserveUnknownField: true}
			}
		}
		return s, nil
	}

	if t == timeType {
		s := typed("string", "date-time")
		return s, nil
	}

	// Types with a custom JSON encoding (runtime.RawExtension,
	// metav1.FieldsV1, ...): describe them by how they encode.
	if t.Kind() == reflect.Struct && reflect.PointerTo(t).Implements(jsonMarshalerType) {
		s := opaqueSchema(zero)
		s.Description = doc[""]
		if g.v3 && (len(s.Type) == 0 || s.Type.Contains("object")) {
			s.Extensions = spec.Extensions{extPreserveUnknownField: true}
		}
		return s, nil
	}

	if t.Kind() != reflect.Struct {
		return spec.Schema{}, fmt.Errorf("cannot define non-struct type %v", t)
	}
	s := typed("object", "")
	s.Description = doc[""]
	if err := g.fillStruct(t, &s); err != nil {
		return spec.Schema{}, err
	}
	return s, nil
}

// opaqueSchema describes a type with a custom JSON encoding by looking at
// how its zero value is encoded.
func opaqueSchema(zero reflect.Value) (s spec.Schema) {
	defer func() {
		if recover() != nil {
			s = typed("object", "")
		}
	}()
	data, err := json.Marshal(zero.Interface())
	if err != nil || len(data) == 0 {
		return typed("object", "")
	}
	switch data[0] {
	case '"':
		return typed("string", "")
	case 't', 'f':
		return typed("boolean", "")
	case '[':
		return spec.Schema{}
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return typed("number", "")
	}
	return typed("object", "")
}

// fillStruct adds the JSON fields of struct type t to s.
func (g *schemaGenerator) fillStruct(t reflect.Type, s *spec.Schema) error {
	props := map[string]spec.Schema{}
	required := map[string]bool{}
	var order []string
	if err := g.collectFields(t, props, required, &order, map[reflect.Type]bool{}, 0, map[string]int{}); err != nil {
		return err
	}
	if len(props) > 0 {
		s.Properties = props
	}
	for _, name := range order {
		if required[name] {
			s.Required = append(s.Required, name)
		}
	}
	return nil
}

// collectFields walks the fields of t the way encoding/json does:
// embedded structs without a JSON name are inlined, fields tagged "-" and
// unexported fields are skipped, and shallower fields win over deeper ones.
func (g *schemaGenerator) collectFields(t reflect.Type, props map[string]spec.Schema, required map[string]bool,
	order *[]string, inlining map[reflect.Type]bool, depth int, depths map[string]int) error {
	if inlining[t] {
		return nil
	}
	inlining[t] = true
	defer delete(inlining, t)

	doc := swaggerDoc(t)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts := parseJSONTag(tag)
		if f.Anonymous && name == "" {
			ft := indirect(f.Type)
			if ft.Kind() == reflect.Struct {
				if err := g.collectFields(ft, props, required, order, inlining, depth+1, depths); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if d, seen := depths[name]; seen && d <= depth {
			continue
		}
		fs, err := g.schemaFor(f.Type)
		if err != nil {
			return fmt.Errorf("field %s.%s: %w", t.Name(), f.Name, err)
		}
		ext := spec.Extensions{}
		if v := f.Tag.Get("patchStrategy"); v != "" {
			ext[extPatchStrategy] = v
		}
		if v := f.Tag.Get("patchMergeKey"); v != "" {
			ext[extPatchMergeKey] = v
		}
		fs = g.decorate(fs, doc[name], ext)

		if _, seen := depths[name]; !seen {
			*order = append(*order, name)
		}
		depths[name] = depth
		props[name] = fs
		required[name] = !opts["omitempty"] && !opts["omitzero"]
	}
	return nil
}

// decorate adds a description and vendor extensions to a field schema. In
// OpenAPI v3 siblings of $ref are ignored, so a reference gets wrapped in
// allOf, as upstream does.
func (g *schemaGenerator) decorate(s spec.Schema, description string, ext spec.Extensions) spec.Schema {
	if description == "" && len(ext) == 0 {
		return s
	}
	if g.v3 && s.Ref.String() != "" {
		s = spec.Schema{SchemaProps: spec.SchemaProps{AllOf: []spec.Schema{s}}}
	}
	s.Description = description
	if len(ext) > 0 {
		merged := spec.Extensions{}
		for k, v := range s.Extensions {
			merged[k] = v
		}
		for k, v := range ext {
			merged[k] = v
		}
		s.Extensions = merged
	}
	return s
}

func typed(typ, format string) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{typ}, Format: format}}
}

func indirect(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// needsDefinition reports whether values of t are described by a named
// definition rather than inline.
func needsDefinition(t reflect.Type) bool {
	if t.Name() == "" || t.PkgPath() == "" {
		return false
	}
	if t.Kind() == reflect.Struct {
		return true
	}
	_, ok := implements[openAPISchemaTyper](reflect.New(t))
	return ok
}

// implements checks whether the value ptr (a pointer to a zero value) or
// the value it points to implements T.
func implements[T any](ptr reflect.Value) (T, bool) {
	if v, ok := ptr.Elem().Interface().(T); ok {
		return v, true
	}
	v, ok := ptr.Interface().(T)
	return v, ok
}

func swaggerDoc(t reflect.Type) map[string]string {
	if d, ok := implements[swaggerDocer](reflect.New(t)); ok {
		if m := d.SwaggerDoc(); m != nil {
			return m
		}
	}
	return map[string]string{}
}

func parseJSONTag(tag string) (string, map[string]bool) {
	parts := strings.Split(tag, ",")
	opts := map[string]bool{}
	for _, o := range parts[1:] {
		opts[strings.TrimSpace(o)] = true
	}
	return parts[0], opts
}

var unsafeNameChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// modelName returns the definition name of t, e.g. io.k8s.api.core.v1.Pod.
func modelName(t reflect.Type) string {
	if n, ok := implements[openAPIModelNamer](reflect.New(t)); ok {
		if name := n.OpenAPIModelName(); name != "" {
			return name
		}
	}
	return friendlyName(t.PkgPath() + "." + t.Name())
}

// friendlyName converts a Go package path and type name into a REST
// friendly name: the domain of the first path element is reversed and
// slashes become dots (k8s.io/api/core/v1.Pod -> io.k8s.api.core.v1.Pod).
func friendlyName(name string) string {
	parts := strings.Split(name, "/")
	if len(parts) > 0 && strings.Contains(parts[0], ".") {
		domain := strings.Split(parts[0], ".")
		for i, j := 0, len(domain)-1; i < j; i, j = i+1, j-1 {
			domain[i], domain[j] = domain[j], domain[i]
		}
		parts[0] = strings.Join(domain, ".")
	}
	return strings.Trim(unsafeNameChars.ReplaceAllString(strings.Join(parts, "."), "_"), "_")
}
