package apiserver

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Get reads one object straight from storage, decrypted and decoded as the
// handlers read it, for in-process parts that must not go through HTTP
// (the bootstrap token authenticator reading Secrets). It bypasses
// authentication: callers are the server's own.
func (s *Server) Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	res, ok := s.table.Lookup(gvr)
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	obj, _, err := s.get(ctx, res, namespace, name)
	return obj, err
}
