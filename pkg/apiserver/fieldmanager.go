package apiserver

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	apiextensionsapplyconfiguration "k8s.io/apiextensions-apiserver/pkg/client/applyconfiguration"

	"github.com/minik8s/minik8s/pkg/apiserver/openapi"
	"github.com/minik8s/minik8s/pkg/registry"
)

// Field ownership, as Kubernetes records it in metadata.managedFields:
// every create, update and patch made by a request records the fields it
// set under its field manager (operation Update), and a server-side apply
// merges the applied configuration and records what it owns (operation
// Apply). apimachinery's managedfields does the merging and bookkeeping;
// this file gives it the schema of a resource's kind and its conversions,
// which here are trivial: each resource serves one version.

// fieldManager is the field manager of res's objects written through sub.
func (s *Server) fieldManager(res *registry.Resource, sub subresource) (*managedfields.FieldManager, error) {
	fieldTypes := s.fieldTypes
	if res.FieldTypes != nil {
		fieldTypes = res.FieldTypes
	}
	types, err := fieldTypes()
	if err != nil {
		return nil, fmt.Errorf("the schema of %s for managed fields: %w", res.GroupResource(), err)
	}
	newManager := managedfields.NewDefaultFieldManager
	if res.NewObject != nil {
		// A custom resource may hold fields its schema leaves open
		// (x-kubernetes-preserve-unknown-fields).
		newManager = managedfields.NewDefaultCRDFieldManager
	}
	gvk := res.GroupVersionKind()
	kind := oneVersionKind{res}
	return newManager(types, kind, kind, kind, gvk, gvk.GroupVersion(), sub.managedFieldsName(), resetFields(res, sub))
}

// builtinFieldTypes is the schema of the built-in kinds for managed
// fields. The Kubernetes kinds take Kubernetes' own, which client-go's and
// apiextensions' applyconfigurations carry, generated with the +listType
// and +listMapKey markers that reflection cannot see (a Service's ports
// are keyed by port and protocol, where the patchMergeKey tag says port
// alone, and DNS serves 53 over both); minik8s' own kinds, which no client
// library describes, take the server's OpenAPI.
func builtinFieldTypes(scheme *runtime.Scheme, resources []*registry.Resource, oapi []openapi.Resource) (managedfields.TypeConverter, error) {
	defs, err := openapi.Definitions(oapi)
	if err != nil {
		return nil, err
	}
	ours, err := managedfields.NewTypeConverter(defs, false)
	if err != nil {
		return nil, err
	}
	sources := []managedfields.TypeConverter{
		applyconfigurations.NewTypeConverter(scheme),
		apiextensionsapplyconfiguration.NewTypeConverter(scheme),
		ours,
	}
	byKind := kindFieldTypes{}
	for _, res := range resources {
		for _, src := range sources {
			// A schema that knows a kind can type its empty object.
			if _, err := src.ObjectToTyped(res.New()); err == nil {
				byKind[res.GroupVersionKind()] = src
				break
			}
		}
	}
	return byKind, nil
}

// kindFieldTypes is a schema for managed fields made of the schemas of
// each kind.
type kindFieldTypes map[schema.GroupVersionKind]managedfields.TypeConverter

func (k kindFieldTypes) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	src, ok := k[gvk]
	if !ok {
		return nil, fmt.Errorf("no schema for managed fields of %v", gvk)
	}
	return src.ObjectToTyped(obj, opts...)
}

// TypedToObject is the same for every schema: the value as unstructured.
func (k kindFieldTypes) TypedToObject(value *typed.TypedValue) (runtime.Object, error) {
	return managedfields.NewDeducedTypeConverter().TypedToObject(value)
}

// managedFieldsName is the subresource as managedFields entries name it.
func (sub subresource) managedFieldsName() string {
	if sub == mainResource {
		return ""
	}
	return string(sub)
}

// resetFields are the fields a write through sub cannot change, which
// its manager therefore does not own: the status through the main
// resource, the spec through /status.
func resetFields(res *registry.Resource, sub subresource) map[fieldpath.APIVersion]fieldpath.Filter {
	var reset *fieldpath.Set
	switch {
	case sub == mainResource && res.Status:
		reset = fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	case sub == statusResource:
		reset = fieldpath.NewSet(fieldpath.MakePathOrDie("spec"))
	case res.SpecParts[string(sub)].Take != nil:
		// A part of the spec: the status is not the writer's either.
		reset = fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	default:
		return nil
	}
	return fieldpath.NewExcludeFilterSetMap(map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(res.GroupVersion().String()): reset,
	})
}

// oneVersionKind is the creater, defaulter and converter the field
// manager needs for a resource's kind. A built-in resource serves one
// version, which is also its storage version, so converting is only
// turning the unstructured result of a merge back into the Go type; the
// versions of a custom resource differ in their apiVersion alone (the
// "None" conversion).
type oneVersionKind struct{ res *registry.Resource }

func (k oneVersionKind) New(schema.GroupVersionKind) (runtime.Object, error) { return k.res.New(), nil }

func (k oneVersionKind) Default(obj runtime.Object) { k.res.ApplyDefaults(obj) }

func (k oneVersionKind) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(runtime.Unstructured)
	if !ok {
		return in, nil
	}
	if k.res.NewObject != nil {
		from := in.GetObjectKind().GroupVersionKind()
		to, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{from})
		if !ok || to == from {
			return in, nil
		}
		out := in.DeepCopyObject()
		out.GetObjectKind().SetGroupVersionKind(to)
		return out, nil
	}
	out := k.res.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), out); err != nil {
		return nil, err
	}
	return out, nil
}

func (k oneVersionKind) Convert(in, out, context any) error {
	return errors.New("conversion between types is not supported")
}

func (k oneVersionKind) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// recordFieldOwners records in obj's managedFields what the write of obj
// over live changes, for opts.fieldManager. desired is what the request
// asked for: a server-side apply has recorded its ownership there already.
// The server's own writes (no fieldManager known) leave managedFields as
// they are.
func (s *Server) recordFieldOwners(res *registry.Resource, sub subresource, live, desired, obj runtime.Object, opts writeOptions) (runtime.Object, error) {
	if !opts.trackFields || sub == actionResource {
		return obj, nil
	}
	if opts.applied {
		metaOf(obj).SetManagedFields(metaOf(desired).GetManagedFields())
		return obj, nil
	}
	fm, err := s.fieldManager(res, sub)
	if err != nil {
		return nil, err
	}
	obj = fm.UpdateNoErrors(live, obj, opts.fieldManager)
	keepOwnershipTimes(live, obj)
	return obj, nil
}

// keepOwnershipTimes gives obj the managedFields of live when the write
// changes nothing else than their times (an apply of what is already
// there), so that it is no write at all, as in Kubernetes.
func keepOwnershipTimes(live, obj runtime.Object) {
	lm, om := metaOf(live), metaOf(obj)
	if lm == nil || om == nil || !apiequality.Semantic.DeepEqual(withoutTimes(lm.GetManagedFields()), withoutTimes(om.GetManagedFields())) {
		return
	}
	written := om.GetManagedFields()
	om.SetManagedFields(lm.GetManagedFields())
	if !apiequality.Semantic.DeepEqual(live, obj) {
		om.SetManagedFields(written)
	}
}

func withoutTimes(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	out := make([]metav1.ManagedFieldsEntry, len(entries))
	for i, e := range entries {
		e.Time = nil
		out[i] = e
	}
	return out
}

// fieldManagerOf is who a request writes for: its ?fieldManager, else
// the product of its User-Agent ("kubectl" of "kubectl/v1.35.0 (linux/amd64)"),
// its printable characters within the length a field manager may have, as
// Kubernetes names the managers of clients that name none.
func fieldManagerOf(r *http.Request) string {
	if m := r.URL.Query().Get("fieldManager"); m != "" {
		return m
	}
	product, _, _ := strings.Cut(r.UserAgent(), "/")
	var b strings.Builder
	for _, c := range product {
		if !unicode.IsPrint(c) {
			continue
		}
		if b.Len()+utf8.RuneLen(c) > metav1validation.FieldManagerMaxLength {
			break
		}
		b.WriteRune(c)
	}
	return b.String()
}
