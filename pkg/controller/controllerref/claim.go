package controllerref

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Claimer claims the dependents of one owner, as Kubernetes'
// ControllerRefManager does: it keeps those it controls and its selector
// matches, adopts the orphans the selector matches (after a fresh read
// shows the owner is still there and not being deleted), and releases
// those it controls that the selector no longer matches.
type Claimer[T metav1.Object] struct {
	// Owner and its kind, which adoption writes into the ownerReference.
	Owner metav1.Object
	Kind  schema.GroupVersionKind
	// Selector picks the dependents the owner should control.
	Selector labels.Selector
	// Get reads the owner fresh from the API (AdoptionCheck), once,
	// before the first adoption.
	Get func(ctx context.Context) (metav1.Object, error)
	// Patch applies a strategic merge patch to the dependent called name
	// in the owner's namespace.
	Patch func(ctx context.Context, name string, patch []byte) error
	// Dependent names the dependents' kind in errors and logs ("pod").
	Dependent string
	Logger    *slog.Logger
}

// Claim returns the dependents among objs the owner controls once the
// orphans are adopted and the mismatches released. Failures do not stop
// it: it returns what it claimed and all the errors together.
func (m *Claimer[T]) Claim(ctx context.Context, objs []T) ([]T, error) {
	owner := m.Owner
	ownerKind := strings.ToLower(m.Kind.Kind)
	canAdopt := AdoptionCheck(ownerKind, owner, func() (metav1.Object, error) { return m.Get(ctx) })
	var claimed []T
	var errs []error
	for _, obj := range objs {
		matches := m.Selector.Matches(labels.Set(obj.GetLabels()))
		if ref := metav1.GetControllerOf(obj); ref != nil {
			switch {
			case ref.UID != owner.GetUID():
				// Someone else's.
			case matches:
				claimed = append(claimed, obj)
			case owner.GetDeletionTimestamp() == nil:
				if err := m.release(ctx, obj); err != nil {
					errs = append(errs, err)
				}
			}
			continue
		}
		if !matches || owner.GetDeletionTimestamp() != nil || obj.GetDeletionTimestamp() != nil {
			continue
		}
		if err := canAdopt(); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := m.adopt(ctx, obj); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		m.Logger.Info("adopted "+m.Dependent, ownerKind, owner.GetNamespace()+"/"+owner.GetName(), m.Dependent, obj.GetName())
		claimed = append(claimed, obj)
	}
	return claimed, errors.Join(errs...)
}

func (m *Claimer[T]) adopt(ctx context.Context, obj T) error {
	ref := metav1.NewControllerRef(m.Owner, m.Kind)
	err := m.patchOwner(ctx, obj, map[string]any{
		"apiVersion": ref.APIVersion, "kind": ref.Kind, "name": ref.Name, "uid": ref.UID,
		"controller": true, "blockOwnerDeletion": true,
	})
	if err != nil {
		return fmt.Errorf("adopt %s %s/%s: %w", m.Dependent, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

func (m *Claimer[T]) release(ctx context.Context, obj T) error {
	err := m.patchOwner(ctx, obj, map[string]any{"$patch": "delete", "uid": m.Owner.GetUID()})
	if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
		// Gone, or already without our reference, or replaced by a new
		// object of the same name: nothing to release.
		return nil
	}
	if err != nil {
		return fmt.Errorf("release %s %s/%s: %w", m.Dependent, obj.GetNamespace(), obj.GetName(), err)
	}
	m.Logger.Info("released "+m.Dependent, strings.ToLower(m.Kind.Kind), m.Owner.GetNamespace()+"/"+m.Owner.GetName(), m.Dependent, obj.GetName())
	return nil
}

// patchOwner applies a strategic merge patch of one ownerReference to
// obj; obj's UID in the patch makes it fail on an object recreated under
// the same name.
func (m *Claimer[T]) patchOwner(ctx context.Context, obj T, ref map[string]any) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": []any{ref}, "uid": obj.GetUID()}})
	if err != nil {
		return err
	}
	return m.Patch(ctx, obj.GetName(), patch)
}

// GetWith is a Claimer's Get made of a typed client's Get method and the
// owner's name.
func GetWith[R metav1.Object](get func(ctx context.Context, name string, opts metav1.GetOptions) (R, error), name string) func(context.Context) (metav1.Object, error) {
	return func(ctx context.Context) (metav1.Object, error) { return get(ctx, name, metav1.GetOptions{}) }
}

// PatchWith is a Claimer's Patch made of a typed client's Patch method.
func PatchWith[R any](patch func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (R, error)) func(context.Context, string, []byte) error {
	return func(ctx context.Context, name string, data []byte) error {
		_, err := patch(ctx, name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
		return err
	}
}
