package controllerref

import (
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Resolve is the owner of kind that ref names, read with get (a lister's
// Get in the dependent's namespace), if it is the very object ref names
// (the same UID); otherwise the zero T. A nil ref resolves to nothing.
func Resolve[T metav1.Object](ref *metav1.OwnerReference, kind string, get func(name string) (T, error)) T {
	var none T
	if ref == nil || ref.Kind != kind {
		return none
	}
	owner, err := get(ref.Name)
	if err != nil || owner.GetUID() != ref.UID {
		return none
	}
	return owner
}

// AdoptionCheck returns a check that owner may adopt: read fresh with get
// (from the API, not a cache that may be behind), it must be the same
// object (UID) and not being deleted, so that an owner deleted, or
// replaced by another of the same name, a moment ago adopts nothing. The
// read is made once, on the first call; kind names the owner in errors.
func AdoptionCheck(kind string, owner metav1.Object, get func() (metav1.Object, error)) func() error {
	return sync.OnceValue(func() error {
		ns, name := owner.GetNamespace(), owner.GetName()
		fresh, err := get()
		switch {
		case err != nil:
			return fmt.Errorf("recheck %s %s/%s before adoption: %w", kind, ns, name, err)
		case fresh.GetUID() != owner.GetUID():
			return fmt.Errorf("%s %s/%s is gone: got uid %s, want %s", kind, ns, name, fresh.GetUID(), owner.GetUID())
		case fresh.GetDeletionTimestamp() != nil:
			return fmt.Errorf("%s %s/%s is being deleted", kind, ns, name)
		}
		return nil
	})
}
