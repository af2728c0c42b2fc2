package apiserver

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/minik8s/minik8s/pkg/registry"
)

// tableOptions carry ?includeObject= for table rows.
type tableOptions struct {
	includeObject metav1.IncludeObjectPolicy
}

// toTable renders objects as a metav1.Table with the kind's columns.
func (s *Server) toTable(res *registry.Resource, objs []runtime.Object, listMeta metav1.ListMeta, opts tableOptions) (*metav1.Table, error) {
	p := res.TablePrinter()
	now := s.now()
	t := &metav1.Table{
		TypeMeta:          metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"},
		ListMeta:          listMeta,
		ColumnDefinitions: p.Columns,
		Rows:              make([]metav1.TableRow, 0, len(objs)),
	}
	for _, obj := range objs {
		row := metav1.TableRow{Cells: p.Cells(obj, now)}
		switch opts.includeObject {
		case metav1.IncludeNone:
		case metav1.IncludeObject:
			row.Object.Object = obj
		default:
			pm, err := partialMetadata(obj)
			if err != nil {
				return nil, err
			}
			row.Object.Object = pm
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

func partialMetadata(obj runtime.Object) (*metav1.PartialObjectMetadata, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		pm := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}}
		m, _ := u.Object["metadata"].(map[string]any)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &pm.ObjectMeta); err != nil {
			return nil, err
		}
		return pm, nil
	}
	oma, ok := obj.(metav1.ObjectMetaAccessor)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	om, ok := oma.GetObjectMeta().(*metav1.ObjectMeta)
	if !ok {
		return nil, fmt.Errorf("unexpected metadata type %T", oma.GetObjectMeta())
	}
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: *om.DeepCopy(),
	}, nil
}

// render converts one object or a list page into the negotiated form.
func (s *Server) render(res *registry.Resource, out output, obj runtime.Object, r *listResult, opts tableOptions) (runtime.Object, error) {
	var items []runtime.Object
	var lm metav1.ListMeta
	if r != nil {
		items = r.items
		lm = metav1.ListMeta{ResourceVersion: fmt.Sprint(r.revision), Continue: r.cont, RemainingItemCount: r.remaining}
	} else {
		items = []runtime.Object{obj}
	}
	switch out.kind {
	case outputTable:
		return s.toTable(res, items, lm, opts)
	case outputMetadata:
		if r == nil {
			return partialMetadata(obj)
		}
		list := &metav1.PartialObjectMetadataList{
			TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
			ListMeta: lm,
		}
		for _, it := range items {
			pm, err := partialMetadata(it)
			if err != nil {
				return nil, err
			}
			list.Items = append(list.Items, *pm)
		}
		return list, nil
	}
	if r != nil {
		return listObject(res, r)
	}
	return obj, nil
}
