package apiserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/storage"
)

func keyPrefix(res *registry.Resource) string {
	if res.StoragePrefix != "" {
		return res.StoragePrefix
	}
	return "/registry/" + res.Resource + "/"
}

func objectKey(res *registry.Resource, ns, name string) string {
	if res.Namespaced {
		return keyPrefix(res) + ns + "/" + name
	}
	return keyPrefix(res) + name
}

func listPrefix(res *registry.Resource, ns string) string {
	if res.Namespaced && ns != "" {
		return keyPrefix(res) + ns + "/"
	}
	return keyPrefix(res)
}

// get reads one object.
func (s *Server) get(ctx context.Context, res *registry.Resource, ns, name string) (runtime.Object, *storage.KV, error) {
	kv, err := s.store.Get(ctx, objectKey(res, ns, name))
	if err != nil {
		return nil, nil, storageError(err, res.GroupResource(), name)
	}
	obj, err := decodeStored(res, *kv)
	return obj, kv, err
}

// writeOptions carry the query parameters every write honours.
type writeOptions struct {
	dryRun bool
	// fieldManager is who the write is made for in managedFields; only
	// writes that trackFields (those of requests) record their ownership.
	fieldManager string
	trackFields  bool
	// applied marks a server-side apply, whose merge recorded its
	// ownership already.
	applied bool
}

// create stores a new object: metadata set by the server, defaults,
// validation, then a create-if-absent write.
func (s *Server) create(ctx context.Context, res *registry.Resource, ns string, obj runtime.Object, opts writeOptions) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if res.Namespaced {
		if m.GetNamespace() == "" {
			m.SetNamespace(ns)
		} else if m.GetNamespace() != ns {
			return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
		if err := s.namespaceAcceptsContent(ctx, ns); err != nil {
			return nil, err
		}
	} else {
		m.SetNamespace("")
	}
	if m.GetResourceVersion() != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(m.GetGenerateName() + randomSuffix())
	}
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(metav1.NewTime(s.now()))
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetSelfLink("")
	if res.NoGeneration {
		m.SetGeneration(0)
	} else {
		m.SetGeneration(1)
	}
	if res.Status && !res.KeepStatusOnCreate {
		// Status is the controllers' to write; a new object starts without one.
		resetField(obj, "Status")
	}
	// Priority admission reads what the pod asked for, before defaults
	// fill in priority 0.
	if err := s.admitPriority(ctx, res, obj); err != nil {
		return nil, err
	}
	res.ApplyDefaults(obj)
	if res.PrepareForCreate != nil {
		res.PrepareForCreate(obj)
	}
	if res.CreatedBy != nil {
		res.CreatedBy(obj, requesterFrom(ctx))
	}
	if err := s.admitServiceAccount(ctx, res, obj); err != nil {
		return nil, err
	}
	if _, err := s.mutateAdmission(ctx, res, obj, nil, opts); err != nil {
		return nil, err
	}
	if errs := res.ValidateCreate(obj); len(errs) > 0 {
		return nil, apierrors.NewInvalid(res.GroupVersionKind().GroupKind(), m.GetName(), errs)
	}
	if obj, err = s.recordFieldOwners(res, mainResource, res.New(), obj, obj, opts); err != nil {
		return nil, err
	}
	m, _ = meta.Accessor(obj)
	if err := s.admit(ctx, obj); err != nil {
		return nil, err
	}
	if err := s.validateAdmission(ctx, res, mainResource, obj, nil, opts); err != nil {
		return nil, err
	}
	data, err := encodeStored(res, obj)
	if err != nil {
		return nil, err
	}
	if opts.dryRun {
		return obj, nil
	}
	undo, err := s.hookBefore(ctx, res, obj, nil)
	if err != nil {
		return nil, err
	}
	if data, err = encodeStored(res, obj); err != nil {
		undo()
		return nil, err
	}
	rev, err := s.store.Create(ctx, objectKey(res, m.GetNamespace(), m.GetName()), data)
	if err != nil {
		undo()
		return nil, storageError(err, res.GroupResource(), m.GetName())
	}
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	s.namespaceCreated(ctx, res, obj)
	return obj, nil
}

// namespaceAcceptsContent is Kubernetes' namespace lifecycle admission:
// no objects in a namespace that does not exist or is being deleted.
func (s *Server) namespaceAcceptsContent(ctx context.Context, ns string) error {
	nsRes, ok := s.table.Lookup(corev1.SchemeGroupVersion.WithResource("namespaces"))
	if !ok {
		return nil
	}
	obj, _, err := s.get(ctx, nsRes, "", ns)
	if err != nil {
		return err
	}
	if n := obj.(*corev1.Namespace); n.Status.Phase == corev1.NamespaceTerminating {
		return apierrors.NewForbidden(corev1.Resource("namespaces"), ns,
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", ns))
	}
	return nil
}

// mutateFunc turns the current object into the desired one. A
// resourceVersion on the result is a precondition; none means "whatever is
// current", and the mutation is retried on conflict.
type mutateFunc func(current runtime.Object) (runtime.Object, error)

// subresource names the part of an object a write may change.
type subresource string

const (
	mainResource   subresource = ""
	statusResource subresource = "status"
	// finalizeResource is the namespace's spec.finalizers.
	finalizeResource subresource = "finalize"
	// actionResource is a registry.Action, such as the scheduler setting a
	// pod's node: the one spec change that a pod update may not make.
	actionResource subresource = "action"
	// approvalResource is a CSR's Approved and Denied conditions.
	approvalResource subresource = "approval"
	// scaleResource is /scale: the replicas, changed as the main
	// resource's, but a subresource to admission.
	scaleResource subresource = "scale"
)

// update is the read-mutate-write loop shared by PUT, PATCH and the
// subresources. It writes nothing when the result equals the current object.
// As Kubernetes' GuaranteedUpdate, a write without a resourceVersion
// precondition that races another writer is applied again to what that
// writer stored, for as long as the request lives: it never answers 409.
func (s *Server) update(ctx context.Context, res *registry.Resource, ns, name string, sub subresource, mutate mutateFunc, opts writeOptions) (runtime.Object, error) {
	key := objectKey(res, ns, name)
	for {
		current, kv, err := s.get(ctx, res, ns, name)
		if err != nil {
			return nil, err
		}
		desired, err := mutate(current.DeepCopyObject())
		if err != nil {
			return nil, err
		}
		dm, err := meta.Accessor(desired)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if dm.GetName() != name {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", dm.GetName(), name))
		}
		if res.Namespaced && dm.GetNamespace() != "" && dm.GetNamespace() != ns {
			return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
		precondition := dm.GetResourceVersion()
		if precondition != "" && precondition != strconv.FormatInt(kv.ModRevision, 10) {
			return nil, apierrors.NewConflict(res.GroupResource(), name, errors.New(conflictMessage))
		}
		obj, err := s.prepareUpdate(res, desired, current, sub)
		if err != nil {
			return nil, err
		}
		if sub == statusResource && res.StatusSigner != nil {
			if err := s.checkSigner(ctx, res, "sign", res.StatusSigner(obj, current), name); err != nil {
				return nil, err
			}
		}
		if obj, err = s.recordFieldOwners(res, sub, current, desired, obj, opts); err != nil {
			return nil, err
		}
		if sub == mainResource {
			mutated, err := s.mutateAdmission(ctx, res, obj, current, opts)
			if err != nil {
				return nil, err
			}
			if mutated {
				if errs := res.ValidateChange(obj, current); len(errs) > 0 {
					return nil, apierrors.NewInvalid(res.GroupVersionKind().GroupKind(), name, errs)
				}
			}
			if err := s.admit(ctx, obj); err != nil {
				return nil, err
			}
		}
		if err := s.validateAdmission(ctx, res, sub, obj, current, opts); err != nil {
			return nil, err
		}
		om, _ := meta.Accessor(obj)
		data, err := encodeStored(res, obj)
		if err != nil {
			return nil, err
		}
		if bytes.Equal(data, kv.Value) {
			return current, nil
		}
		if opts.dryRun {
			return obj, nil
		}
		// The last finalizer gone ends a deletion, unless a grace period
		// still runs: a terminating pod goes when its kubelet deletes it
		// with grace 0, as in Kubernetes.
		if om.GetDeletionTimestamp() != nil && !s.mustWaitForDeletion(res, obj) && ptr.Deref(om.GetDeletionGracePeriodSeconds(), 0) == 0 {
			_, err := s.store.Delete(ctx, key, kv.ModRevision)
			if err == nil {
				s.hookAfter(ctx, res, nil, current)
				return obj, nil
			}
			if errors.Is(err, storage.ErrConflict) && precondition == "" {
				continue
			}
			return nil, storageError(err, res.GroupResource(), name)
		}
		undo, err := s.hookBefore(ctx, res, obj, current)
		if err != nil {
			return nil, err
		}
		if data, err = encodeStored(res, obj); err != nil {
			undo()
			return nil, err
		}
		rev, err := s.store.Update(ctx, key, data, kv.ModRevision)
		if err != nil {
			undo()
		}
		if errors.Is(err, storage.ErrConflict) && precondition == "" {
			continue
		}
		if err != nil {
			return nil, storageError(err, res.GroupResource(), name)
		}
		s.hookAfter(ctx, res, obj, current)
		om.SetResourceVersion(strconv.FormatInt(rev, 10))
		return obj, nil
	}
}

// prepareUpdate keeps what a client may not change, applies the
// subresource's rules, defaults and validates.
func (s *Server) prepareUpdate(res *registry.Resource, desired, current runtime.Object, sub subresource) (runtime.Object, error) {
	var obj runtime.Object
	part, isPart := res.SpecParts[string(sub)]
	switch {
	case isPart:
		// A part of the spec (a pod's /resize, /ephemeralcontainers):
		// the rest stays as stored.
		obj = current.DeepCopyObject()
		part.Take(obj, desired)
	case sub == statusResource:
		// Status moves, and labels and annotations as Kubernetes' status
		// strategies let them; the spec and the rest of metadata stay as
		// stored.
		obj = current.DeepCopyObject()
		copyField(obj, desired, "Status")
		if om, dm := metaOf(obj), metaOf(desired); om != nil && dm != nil {
			om.SetLabels(dm.GetLabels())
			om.SetAnnotations(dm.GetAnnotations())
		}
		if res.PrepareForStatusUpdate != nil {
			res.PrepareForStatusUpdate(obj, current)
		}
	case sub == approvalResource:
		// As /status: the approval's conditions, labels and annotations.
		obj = current.DeepCopyObject()
		copyField(obj, desired, "Status")
		if om, dm := metaOf(obj), metaOf(desired); om != nil && dm != nil {
			om.SetLabels(dm.GetLabels())
			om.SetAnnotations(dm.GetAnnotations())
		}
		res.Approval(obj, current)
	case sub == finalizeResource:
		obj = current.DeepCopyObject()
		copyField(obj, desired, "Spec")
	default:
		obj = desired
		if res.Status && sub != actionResource {
			copyField(obj, current, "Status")
		}
		if res.PrepareForUpdate != nil {
			res.PrepareForUpdate(obj, current)
		}
	}
	om, _ := meta.Accessor(obj)
	cm, _ := meta.Accessor(current)
	om.SetNamespace(cm.GetNamespace())
	om.SetUID(cm.GetUID())
	om.SetCreationTimestamp(cm.GetCreationTimestamp())
	om.SetDeletionTimestamp(cm.GetDeletionTimestamp())
	om.SetDeletionGracePeriodSeconds(cm.GetDeletionGracePeriodSeconds())
	om.SetGenerateName(orDefault(om.GetGenerateName(), cm.GetGenerateName()))
	om.SetSelfLink("")
	om.SetResourceVersion(cm.GetResourceVersion())
	obj.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind())
	res.ApplyDefaults(obj)
	// metadata.generation is the server's, set before validation as
	// Kubernetes' strategies do: a client sending none (a kubectl apply
	// patch removing what a replace saved) or a stale one is not refused.
	// An action (a pod's binding) is written to storage directly in
	// Kubernetes, past the strategy that moves the generation.
	om.SetGeneration(cm.GetGeneration())
	if !res.NoGeneration && sub != actionResource && !apiequality.Semantic.DeepEqual(specOf(res, obj), specOf(res, current)) {
		om.SetGeneration(cm.GetGeneration() + 1)
	}
	var errs field.ErrorList
	switch {
	case sub == actionResource:
		errs = res.ValidateObject(obj)
	case isPart:
		errs = res.ValidateSpecPartChange(part, obj, current)
	default:
		errs = res.ValidateChange(obj, current)
	}
	if sub == statusResource && res.ValidateStatusUpdate != nil {
		errs = append(errs, res.ValidateStatusUpdate(obj, current)...)
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(res.GroupVersionKind().GroupKind(), om.GetName(), errs)
	}
	if cm.GetDeletionTimestamp() != nil && len(om.GetFinalizers()) > len(cm.GetFinalizers()) && !subset(om.GetFinalizers(), cm.GetFinalizers()) {
		return nil, apierrors.NewInvalid(res.GroupVersionKind().GroupKind(), om.GetName(), field.ErrorList{
			field.Forbidden(field.NewPath("metadata", "finalizers"), "no new finalizers can be added if the object is being deleted"),
		})
	}
	return obj, nil
}

// mustWaitForDeletion says whether something other than metadata.finalizers
// still holds an object that is being deleted.
func (s *Server) mustWaitForDeletion(res *registry.Resource, obj runtime.Object) bool {
	m, _ := meta.Accessor(obj)
	if len(m.GetFinalizers()) > 0 {
		return true
	}
	return res.HoldsDeletion != nil && res.HoldsDeletion(obj)
}

// deleteOptions are the parts of metav1.DeleteOptions the server acts on.
type deleteOptions struct {
	writeOptions
	grace         *int64
	propagation   metav1.DeletionPropagation
	preconditions *metav1.Preconditions
	// admit runs admission on the deletion: a client's delete, not the
	// apiserver's own (an eviction, a CRD's objects going with it), as
	// in Kubernetes.
	admit bool
}

// deleteObject deletes at once, or marks the object for deletion when
// finalizers, graceful termination or a namespace's content hold it. A
// write that races another writer is tried again on what that one stored
// (its preconditions checked again), for as long as the request lives.
func (s *Server) deleteObject(ctx context.Context, res *registry.Resource, ns, name string, opts deleteOptions) (runtime.Object, error) {
	key := objectKey(res, ns, name)
	for {
		obj, kv, err := s.get(ctx, res, ns, name)
		if err != nil {
			return nil, err
		}
		m, _ := meta.Accessor(obj)
		if p := opts.preconditions; p != nil {
			if p.UID != nil && *p.UID != m.GetUID() {
				return nil, apierrors.NewConflict(res.GroupResource(), name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.GetUID()))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
				return nil, apierrors.NewConflict(res.GroupResource(), name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, m.GetResourceVersion()))
			}
		}
		if opts.admit {
			// Once, on the object as first read; a retry after a
			// conflict does not ask again.
			if err := s.deleteAdmission(ctx, res, obj, opts.dryRun); err != nil {
				return nil, err
			}
			opts.admit = false
		}
		changed := setGCFinalizers(m, propagationFor(res, m, opts.propagation))
		grace, graceful := int64(0), false
		if res.GracefulDelete != nil {
			grace, graceful = res.GracefulDelete(obj, opts.grace)
		}
		if res.MarkDeleting != nil && res.MarkDeleting(obj) {
			changed = true
		}
		if graceful || s.mustWaitForDeletion(res, obj) {
			if m.GetDeletionTimestamp() == nil {
				now := metav1.NewTime(s.now().Add(secondsDuration(grace)))
				m.SetDeletionTimestamp(&now)
				m.SetDeletionGracePeriodSeconds(&grace)
				if !res.NoGeneration {
					m.SetGeneration(m.GetGeneration() + 1)
				}
				changed = true
			} else if cur := m.GetDeletionGracePeriodSeconds(); cur != nil && grace < *cur {
				// A shorter grace period may be requested while terminating
				// (the kubelet's final delete is grace 0).
				shorter := metav1.NewTime(s.now().Add(secondsDuration(grace)))
				m.SetDeletionTimestamp(&shorter)
				m.SetDeletionGracePeriodSeconds(&grace)
				changed = true
			}
			if !changed || opts.dryRun {
				return obj, nil
			}
			data, err := encodeStored(res, obj)
			if err != nil {
				return nil, err
			}
			rev, err := s.store.Update(ctx, key, data, kv.ModRevision)
			if errors.Is(err, storage.ErrConflict) {
				continue
			}
			if err != nil {
				return nil, storageError(err, res.GroupResource(), name)
			}
			m.SetResourceVersion(strconv.FormatInt(rev, 10))
			return obj, nil
		}
		if opts.dryRun {
			return obj, nil
		}
		if _, err := s.store.Delete(ctx, key, kv.ModRevision); err != nil {
			if errors.Is(err, storage.ErrConflict) {
				continue
			}
			return nil, storageError(err, res.GroupResource(), name)
		}
		s.hookAfter(ctx, res, nil, obj)
		return obj, nil
	}
}

// setGCFinalizers makes metadata.finalizers say what an explicit
// propagationPolicy asks of the garbage collector, as Kubernetes does:
// Orphan and Foreground each put their finalizer in place of the other's,
// Background removes both. No policy leaves the finalizers as they are.
func setGCFinalizers(m metav1.Object, p metav1.DeletionPropagation) bool {
	if p == "" {
		return false
	}
	want := ""
	switch p {
	case metav1.DeletePropagationOrphan:
		want = metav1.FinalizerOrphanDependents
	case metav1.DeletePropagationForeground:
		want = metav1.FinalizerDeleteDependents
	}
	var kept []string
	changed, has := false, false
	for _, f := range m.GetFinalizers() {
		switch {
		case f == want:
			has = true
		case f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents:
			changed = true
			continue
		}
		kept = append(kept, f)
	}
	if want != "" && !has {
		kept, changed = append(kept, want), true
	}
	if changed {
		m.SetFinalizers(kept)
	}
	return changed
}

// propagationFor is the policy a delete asked for; without one, Orphan for
// a resource that orphans by default unless a GC finalizer already says
// otherwise, as Kubernetes' DefaultGarbageCollectionPolicy.
func propagationFor(res *registry.Resource, m metav1.Object, asked metav1.DeletionPropagation) metav1.DeletionPropagation {
	if asked != "" || !res.OrphanByDefault {
		return asked
	}
	for _, f := range m.GetFinalizers() {
		if f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents {
			return asked
		}
	}
	return metav1.DeletePropagationOrphan
}

func subset(a, b []string) bool {
	have := map[string]bool{}
	for _, x := range b {
		have[x] = true
	}
	for _, x := range a {
		if !have[x] {
			return false
		}
	}
	return true
}

// copyField copies the named top-level struct field (Spec, Status) from
// src to dst; of a custom resource, its lower-case key.
func copyField(dst, src runtime.Object, name string) {
	if du, ok := dst.(*unstructured.Unstructured); ok {
		key := strings.ToLower(name)
		if v, found := src.(*unstructured.Unstructured).Object[key]; found {
			du.Object[key] = runtime.DeepCopyJSONValue(v)
		} else {
			delete(du.Object, key)
		}
		return
	}
	d := reflect.ValueOf(dst).Elem().FieldByName(name)
	s := reflect.ValueOf(src).Elem().FieldByName(name)
	if d.IsValid() && s.IsValid() && d.CanSet() {
		d.Set(s)
	}
}

func resetField(obj runtime.Object, name string) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		delete(u.Object, strings.ToLower(name))
		return
	}
	f := reflect.ValueOf(obj).Elem().FieldByName(name)
	if f.IsValid() && f.CanSet() {
		f.Set(reflect.Zero(f.Type()))
	}
}

// specOf is what metadata.generation tracks: the Spec field, or for kinds
// without one (ConfigMap-like), everything but metadata and status.
func specOf(res *registry.Resource, obj runtime.Object) any {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		// A custom resource's generation moves with everything but its
		// metadata, and its status when that is a subresource.
		rest := map[string]any{}
		for k, v := range u.Object {
			if k != "metadata" && k != "apiVersion" && k != "kind" && (k != "status" || !res.Status) {
				rest[k] = v
			}
		}
		return rest
	}
	v := reflect.ValueOf(obj).Elem()
	if f := v.FieldByName("Spec"); f.IsValid() {
		return f.Interface()
	}
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	for _, name := range []string{"TypeMeta", "ObjectMeta", "Status"} {
		if f := c.FieldByName(name); f.IsValid() {
			f.Set(reflect.Zero(f.Type()))
		}
	}
	return c.Interface()
}

// requesterFrom is the authenticated user of the request behind ctx; zero
// for in-process calls.
func requesterFrom(ctx context.Context) registry.Requester {
	u, ok := authn.UserFrom(ctx)
	if !ok {
		return registry.Requester{}
	}
	return registry.Requester{Name: u.Name, UID: u.UID, Groups: slices.Clone(u.Groups)}
}

func orDefault(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// randomSuffix is generateName's five characters, from Kubernetes' alphabet
// that avoids vowels (no accidental words) and look-alike characters.
func randomSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for i := range b {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		b[i] = alphabet[n.Int64()]
	}
	return string(b)
}

func (s *Server) hookBefore(ctx context.Context, res *registry.Resource, obj, old runtime.Object) (func(), error) {
	if h, ok := s.hooks[res]; ok {
		return h.Before(ctx, obj, old)
	}
	return func() {}, nil
}

func (s *Server) hookAfter(ctx context.Context, res *registry.Resource, obj, old runtime.Object) {
	if h, ok := s.hooks[res]; ok {
		h.After(ctx, obj, old)
	}
}

// metaOf is obj's metadata, or nil for an object without.
func metaOf(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return m
}
