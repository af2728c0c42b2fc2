// Package customresource turns a CustomResourceDefinition into the
// registry.Resources that serve its objects, one per served version:
// unstructured objects checked, pruned and defaulted by the version's
// structural schema with apiextensions-apiserver's own algorithms, its
// x-kubernetes-validations rules run by CEL, its status and scale
// subresources, printer columns and selectable fields.
package customresource

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/util/jsonpath"
	"k8s.io/kube-openapi/pkg/spec3"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
)

// Finalizer holds a deleted definition until its objects are gone.
const Finalizer = "customresourcecleanup.apiextensions.k8s.io"

// StoragePrefix is where the objects of crd live, whatever their version.
func StoragePrefix(crd *apiextensionsv1.CustomResourceDefinition) string {
	return "/registry/" + crd.Spec.Group + "/" + crd.Spec.Names.Plural + "/"
}

// Resources builds the resources serving crd's served versions, under
// its accepted names. Their objects are stored in the definition's
// storage version: conv (apiextensions-apiserver's CR converter for
// crd: None or Webhook) converts each object written through another
// version to it, and each object read to the version it is read
// through; a converted object is pruned by the schema of the version it
// was converted to, as kube-apiserver does.
func Resources(crd *apiextensionsv1.CustomResourceDefinition, conv runtime.ObjectConvertor) ([]*registry.Resource, error) {
	var out []*registry.Resource
	types := fieldTypes(crd)
	storage, err := storageVersion(crd)
	if err != nil {
		return nil, err
	}
	versions := slices.Clone(crd.Spec.Versions)
	// Highest priority first (v2 before v1beta1 before v1alpha1), so that
	// discovery prefers it, as Kubernetes does.
	slices.SortStableFunc(versions, func(a, b apiextensionsv1.CustomResourceDefinitionVersion) int {
		return -kubeversion.CompareKubeAwareVersionStrings(a.Name, b.Name)
	})
	for i := range versions {
		v := &versions[i]
		if !v.Served {
			continue
		}
		r, err := resource(crd, v, types)
		if err != nil {
			return nil, fmt.Errorf("%s version %s: %w", crd.Name, v.Name, err)
		}
		if r.StoredAs, err = storedAs(r, storage, conv); err != nil {
			return nil, fmt.Errorf("%s version %s: %w", crd.Name, v.Name, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// version is what one version's resource checks objects with.
type version struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
	selectable []selectableField
}

type selectableField struct {
	name string
	path *jsonpath.JSONPath
}

func resource(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion, types func() (managedfields.TypeConverter, error)) (*registry.Resource, error) {
	names := crd.Status.AcceptedNames
	if names.Plural == "" {
		names = crd.Spec.Names
	}
	ver, err := newVersion(v)
	if err != nil {
		return nil, err
	}
	gv := apiextensionsv1.SchemeGroupVersion
	gv.Group, gv.Version = crd.Spec.Group, v.Name
	r := &registry.Resource{
		GroupVersionResource: gv.WithResource(names.Plural), Kind: names.Kind, Singular: names.Singular,
		Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		ShortNames: names.ShortNames, Categories: names.Categories,
		NewObject:     func() runtime.Object { return &unstructured.Unstructured{Object: map[string]any{}} },
		NewListObject: func() runtime.Object { return &unstructured.UnstructuredList{Object: map[string]any{}} },
		StoragePrefix: StoragePrefix(crd),
		Prune:         ver.prune,
		Default:       ver.defaults,
		Validate:      ver.validate,
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return ver.validateRules(obj, old)
		},
		Printer:     printer(v.AdditionalPrinterColumns),
		FieldLabels: ver.fieldLabels,
		FieldTypes:  types,
	}
	if crd.DeletionTimestamp != nil {
		r.RefuseCreate = "create not allowed while custom resource definition is terminating"
	}
	if sub := v.Subresources; sub != nil {
		r.Status = sub.Status != nil
		if sub.Scale != nil {
			r.Scale = scale(sub.Scale)
		}
	}
	return r, nil
}

// fieldTypes is the schema server-side apply merges crd's objects with:
// the OpenAPI of all its versions, as kube-apiserver builds it, so lists
// marked x-kubernetes-list-type=map merge by their keys, and fields owned
// through one version are known through another. It is built on first
// use, as the definitions are synced far more often than applied to.
func fieldTypes(crd *apiextensionsv1.CustomResourceDefinition) func() (managedfields.TypeConverter, error) {
	return sync.OnceValues(func() (managedfields.TypeConverter, error) {
		var docs []*spec3.OpenAPI
		for _, v := range crd.Spec.Versions {
			doc, err := builder.BuildOpenAPIV3(crd, v.Name, builder.Options{})
			if err != nil {
				return nil, err
			}
			docs = append(docs, doc)
		}
		merged, err := builder.MergeSpecsV3(docs...)
		if err != nil {
			return nil, err
		}
		return managedfields.NewTypeConverter(merged.Components.Schemas, crd.Spec.PreserveUnknownFields)
	})
}

func newVersion(v *apiextensionsv1.CustomResourceDefinitionVersion) (*version, error) {
	ver := &version{}
	if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
			return nil, err
		}
		s, err := structuralschema.NewStructural(internal)
		if err != nil {
			return nil, err
		}
		ver.structural = s
		if ver.validator, _, err = apiservervalidation.NewSchemaValidator(internal); err != nil {
			return nil, err
		}
		ver.cel = cel.NewValidator(s, true, math.MaxInt64)
	}
	for _, f := range v.SelectableFields {
		p := jsonpath.New(f.JSONPath)
		if err := p.Parse("{" + f.JSONPath + "}"); err != nil {
			return nil, err
		}
		ver.selectable = append(ver.selectable, selectableField{name: strings.TrimPrefix(f.JSONPath, "."), path: p})
	}
	return ver, nil
}

// prune drops what the schema does not know and names it.
func (ver *version) prune(obj runtime.Object) []string {
	u := obj.(*unstructured.Unstructured)
	var dropped []string
	if ver.structural != nil {
		dropped = pruning.PruneWithOptions(u.Object, ver.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	}
	// metadata is ObjectMeta whatever the schema says: unknown fields
	// in it go as well.
	_, _, metaDropped, err := objectmeta.GetObjectMetaWithOptions(u.Object, objectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true, ParentPath: field.NewPath("metadata")})
	if err == nil && len(metaDropped) > 0 {
		if m, ok := u.Object["metadata"].(map[string]any); ok {
			typed := &metav1.ObjectMeta{}
			if runtime.DefaultUnstructuredConverter.FromUnstructured(m, typed) == nil {
				_ = objectmeta.SetObjectMeta(u.Object, typed)
			}
		}
		dropped = append(dropped, metaDropped...)
	}
	return dropped
}

func (ver *version) defaults(obj runtime.Object) {
	if ver.structural != nil {
		structuraldefaulting.Default(obj.(*unstructured.Unstructured).Object, ver.structural)
	}
}

func (ver *version) validate(obj runtime.Object) field.ErrorList {
	u := obj.(*unstructured.Unstructured)
	var errs field.ErrorList
	if ver.structural == nil {
		return nil
	}
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u.Object, ver.validator)...)
	errs = append(errs, objectmeta.Validate(context.Background(), nil, u.Object, ver.structural, true)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, ver.structural, u.Object)...)
	errs = append(errs, ver.validateRules(obj, nil)...)
	return errs
}

// validateRules runs the x-kubernetes-validations rules; old is nil on
// create, so transition rules run only on update.
func (ver *version) validateRules(obj, old runtime.Object) field.ErrorList {
	if ver.cel == nil {
		return nil
	}
	var oldObj any
	if old != nil {
		oldObj = old.(*unstructured.Unstructured).Object
	}
	errs, _ := ver.cel.Validate(context.Background(), nil, ver.structural, obj.(*unstructured.Unstructured).Object, oldObj, celBudget)
	return errs
}

// celBudget is Kubernetes' runtime cost budget of one object's rules.
const celBudget = 10000000

func (ver *version) fieldLabels(obj runtime.Object) fields.Set {
	if len(ver.selectable) == 0 {
		return nil
	}
	set := fields.Set{}
	u := obj.(*unstructured.Unstructured)
	for _, f := range ver.selectable {
		set[f.name] = ""
		if v, ok := jsonPathValue(f.path, u.Object); ok {
			set[f.name] = fmt.Sprint(v)
		}
	}
	return set
}

// jsonPathValue is the single value p finds in obj.
func jsonPathValue(p *jsonpath.JSONPath, obj map[string]any) (any, bool) {
	p.AllowMissingKeys(true)
	results, err := p.FindResults(obj)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return nil, false
	}
	return results[0][0].Interface(), true
}

// printer renders the version's additionalPrinterColumns after the name;
// without any, Kubernetes' default: the age.
func printer(columns []apiextensionsv1.CustomResourceColumnDefinition) printers.Printer {
	if len(columns) == 0 {
		columns = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"}}
	}
	defs := []metav1.TableColumnDefinition{printers.NameColumn()}
	paths := make([]*jsonpath.JSONPath, len(columns))
	for i, c := range columns {
		defs = append(defs, metav1.TableColumnDefinition{Name: c.Name, Type: c.Type, Format: c.Format, Description: c.Description, Priority: c.Priority})
		p := jsonpath.New(c.Name)
		if err := p.Parse("{" + c.JSONPath + "}"); err == nil {
			paths[i] = p
		}
	}
	return printers.Printer{
		Columns: defs,
		Cells: func(obj runtime.Object, now time.Time) []interface{} {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return make([]interface{}, len(defs))
			}
			cells := []interface{}{u.GetName()}
			for i, c := range columns {
				cells = append(cells, cell(c, paths[i], u.Object, now))
			}
			return cells
		},
	}
}

// cell is one column's value in obj, as Kubernetes renders it: a date as
// the age, a string column as its text, nil where the path finds nothing.
func cell(c apiextensionsv1.CustomResourceColumnDefinition, p *jsonpath.JSONPath, obj map[string]any, now time.Time) interface{} {
	if p == nil {
		return nil
	}
	v, ok := jsonPathValue(p, obj)
	if !ok {
		return nil
	}
	switch c.Type {
	case "date":
		if s, ok := v.(string); ok {
			if t, err := time.Parse(time.RFC3339, s); err == nil {
				return printers.Age(metav1.NewTime(t), now)
			}
		}
	case "string":
		return fmt.Sprint(v)
	}
	return v
}

// scale serves /scale from the paths the definition names.
func scale(s *apiextensionsv1.CustomResourceSubresourceScale) *registry.ScaleAccessor {
	pathOf := func(path string) []string { return strings.Split(strings.TrimPrefix(path, "."), ".") }
	spec, status := pathOf(s.SpecReplicasPath), pathOf(s.StatusReplicasPath)
	return &registry.ScaleAccessor{
		Get: func(obj runtime.Object) (int32, int32, *metav1.LabelSelector) {
			u := obj.(*unstructured.Unstructured).Object
			want, _, _ := unstructured.NestedInt64(u, spec...)
			have, _, _ := unstructured.NestedInt64(u, status...)
			var sel *metav1.LabelSelector
			if s.LabelSelectorPath != nil {
				if str, ok, _ := unstructured.NestedString(u, pathOf(*s.LabelSelectorPath)...); ok {
					sel, _ = metav1.ParseToLabelSelector(str)
				}
			}
			return int32(want), int32(have), sel
		},
		Set: func(obj runtime.Object, n int32) {
			_ = unstructured.SetNestedField(obj.(*unstructured.Unstructured).Object, int64(n), spec...)
		},
	}
}
