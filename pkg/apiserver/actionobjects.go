package apiserver

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/minik8s/minik8s/pkg/registry"
)

// actionObjects is the registry.Objects an Action's Do acts through: the
// server's own read, status-write and delete paths, with its authority.
type actionObjects struct{ s *Server }

var _ registry.Objects = actionObjects{}

func (o actionObjects) resource(gvr schema.GroupVersionResource) (*registry.Resource, error) {
	res, ok := o.s.table.Lookup(gvr)
	if !ok {
		return nil, apierrors.NewInternalError(errNoSuchResource())
	}
	return res, nil
}

func (o actionObjects) Get(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error) {
	res, err := o.resource(gvr)
	if err != nil {
		return nil, err
	}
	obj, _, err := o.s.get(ctx, res, ns, name)
	return obj, err
}

func (o actionObjects) List(ctx context.Context, gvr schema.GroupVersionResource, ns string) ([]runtime.Object, error) {
	res, err := o.resource(gvr)
	if err != nil {
		return nil, err
	}
	lr, err := o.s.list(ctx, res, ns, &metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return lr.items, nil
}

func (o actionObjects) UpdateStatus(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, mutate func(obj runtime.Object) error, dryRun bool) (runtime.Object, error) {
	res, err := o.resource(gvr)
	if err != nil {
		return nil, err
	}
	return o.s.update(ctx, res, ns, name, statusResource, func(current runtime.Object) (runtime.Object, error) {
		if m, err := meta.Accessor(current); err == nil {
			m.SetResourceVersion("")
		}
		if err := mutate(current); err != nil {
			return nil, err
		}
		return current, nil
	}, writeOptions{dryRun: dryRun})
}

func (o actionObjects) Delete(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, do *metav1.DeleteOptions) error {
	res, err := o.resource(gvr)
	if err != nil {
		return err
	}
	opts, err := deleteOptionsOf(*do, writeOptions{})
	if err != nil {
		return err
	}
	_, err = o.s.deleteObject(ctx, res, ns, name, opts)
	return err
}

func (o actionObjects) Now() time.Time { return o.s.now() }
