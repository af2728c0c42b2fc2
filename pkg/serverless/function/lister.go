package function

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

// Lister reads Functions from a (dynamic) informer's cache as typed
// objects; the router and the autoscaler share it.
type Lister struct {
	Indexer cache.Indexer
}

// Get is the function namespace/name, when the cache has it.
func (l Lister) Get(namespace, name string) (*minik8sv1.Function, bool) {
	obj, ok, err := l.Indexer.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	fn, err := toFunction(obj)
	return fn, err == nil
}

// List is every function in the cache.
func (l Lister) List() []*minik8sv1.Function {
	var out []*minik8sv1.Function
	for _, obj := range l.Indexer.List() {
		if fn, err := toFunction(obj); err == nil {
			out = append(out, fn)
		}
	}
	return out
}

func toFunction(obj any) (*minik8sv1.Function, error) {
	switch o := obj.(type) {
	case *minik8sv1.Function:
		return o, nil
	case *unstructured.Unstructured:
		fn := &minik8sv1.Function{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, fn); err != nil {
			return nil, fmt.Errorf("function %s/%s: %w", o.GetNamespace(), o.GetName(), err)
		}
		return fn, nil
	}
	return nil, fmt.Errorf("not a function: %T", obj)
}
