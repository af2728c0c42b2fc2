package customresource

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/minik8s/minik8s/pkg/registry"
)

// stored is the version a definition's objects are stored in, with the
// schema that prunes what is converted to it.
type stored struct {
	gv    schema.GroupVersion
	prune func(obj runtime.Object) []string
}

func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) (*stored, error) {
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if !v.Storage {
			continue
		}
		ver, err := newVersion(v)
		if err != nil {
			return nil, fmt.Errorf("%s storage version %s: %w", crd.Name, v.Name, err)
		}
		return &stored{gv: schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}, prune: ver.prune}, nil
	}
	return nil, fmt.Errorf("%s has no storage version", crd.Name)
}

// storedAs converts the objects of r to the storage version on their
// way to the store and back to r's version on their way out, with conv.
// An object already in the wanted version is not converted (a webhook
// is called only for the others, as in Kubernetes).
func storedAs(r *registry.Resource, storage *stored, conv runtime.ObjectConvertor) (*registry.StorageConversion, error) {
	if conv == nil {
		return nil, fmt.Errorf("no converter")
	}
	gv := r.GroupVersion()
	return &registry.StorageConversion{
		New: func() runtime.Object { return &unstructured.Unstructured{} },
		ToStored: func(obj runtime.Object) (runtime.Object, error) {
			return convert(conv, obj, storage.gv, storage.prune)
		},
		FromStored: func(obj runtime.Object) (runtime.Object, error) {
			return convert(conv, obj, gv, r.Prune)
		},
		FromStoredList: func(objs []runtime.Object) ([]runtime.Object, error) {
			return convertList(conv, objs, gv.WithKind(r.Kind+"List"), r.Prune)
		},
	}, nil
}

// convertList returns objs in the version of listKind, converted in one
// call (one review for a webhook, of the items in another version), each
// converted one pruned by that version's schema.
func convertList(conv runtime.ObjectConvertor, objs []runtime.Object, listKind schema.GroupVersionKind, prune func(runtime.Object) []string) ([]runtime.Object, error) {
	gv := listKind.GroupVersion().String()
	list := &unstructured.UnstructuredList{Object: map[string]any{}}
	list.SetGroupVersionKind(listKind)
	mixed := false
	for _, obj := range objs {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil, fmt.Errorf("custom resource conversion: unexpected %T", obj)
		}
		list.Items = append(list.Items, *u)
		mixed = mixed || u.GetAPIVersion() != gv
	}
	if !mixed {
		return objs, nil
	}
	out, err := conv.ConvertToVersion(list, listKind.GroupVersion())
	if err != nil {
		return nil, err
	}
	converted, ok := out.(*unstructured.UnstructuredList)
	if !ok || len(converted.Items) != len(objs) {
		return nil, fmt.Errorf("custom resource conversion: %d objects converted to %T, want a list of %d", len(objs), out, len(objs))
	}
	result := make([]runtime.Object, len(objs))
	for i := range converted.Items {
		item := &converted.Items[i]
		if list.Items[i].GetAPIVersion() != gv && prune != nil {
			prune(item)
		}
		result[i] = item
	}
	return result, nil
}

// convert returns obj in version gv, pruned by that version's schema
// when it was converted.
func convert(conv runtime.ObjectConvertor, obj runtime.Object, gv schema.GroupVersion, prune func(runtime.Object) []string) (runtime.Object, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("custom resource conversion: unexpected %T", obj)
	}
	if u.GetAPIVersion() == gv.String() {
		return u, nil
	}
	out, err := conv.ConvertToVersion(u, gv)
	if err != nil {
		return nil, err
	}
	if prune != nil {
		prune(out)
	}
	return out, nil
}
