package loop

import (
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Enqueue adds obj's namespace/name key to q; obj may be the tombstone
// of a deletion the informer missed.
func Enqueue(q workqueue.TypedInterface[string], obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		q.Add(key)
	}
}

// KeyHandler is the event handler that enqueues the key of every object
// added, updated (its new version) or deleted.
func KeyHandler(q workqueue.TypedInterface[string]) cache.ResourceEventHandlerFuncs {
	enqueue := func(obj any) { Enqueue(q, obj) }
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, cur any) { enqueue(cur) },
		DeleteFunc: enqueue,
	}
}

// As is obj as a T, looking inside the tombstone a delete handler gets
// when the informer missed the deletion.
func As[T any](obj any) (T, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	t, ok := obj.(T)
	return t, ok
}
