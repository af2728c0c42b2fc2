package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/minik8s/minik8s/pkg/apiserver/openapi"
	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/customresource"
	"github.com/minik8s/minik8s/pkg/storage"
)

// The custom resources: the apiserver serves what the stored
// CustomResourceDefinitions define, as kube-apiserver's apiextensions
// controllers do. One loop watches the definitions; on every change it
// rebuilds the table's dynamic resources and discovery, then writes each
// definition's status (accepted names, NamesAccepted, Established), so a
// client that waits for Established finds the resource served. A deleted
// definition stops taking new objects, its objects are deleted, and then
// its cleanup finalizer goes.

var crdGVR = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// StartCustomResources serves the resources of the stored definitions
// before it returns, then follows their changes until ctx ends.
func (s *Server) StartCustomResources(ctx context.Context) error {
	crdRes, ok := s.table.Lookup(crdGVR)
	if !ok {
		return nil
	}
	rev, err := s.syncCustomResources(ctx, crdRes)
	if err != nil {
		return err
	}
	go func() {
		for ctx.Err() == nil {
			rev = s.followDefinitions(ctx, crdRes, rev)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			if r, err := s.syncCustomResources(ctx, crdRes); err == nil {
				rev = r
			} else if ctx.Err() == nil {
				s.log.Error("custom resources: sync", "err", err)
			}
		}
	}()
	return nil
}

// followDefinitions syncs on every change of a definition after rev,
// until the watch ends; it returns the last revision synced.
func (s *Server) followDefinitions(ctx context.Context, crdRes *registry.Resource, rev int64) int64 {
	for res := range s.store.Watch(ctx, keyPrefix(crdRes), rev) {
		if res.Err != nil {
			return rev
		}
		if res.Event == nil {
			continue
		}
		r, err := s.syncCustomResources(ctx, crdRes)
		if err != nil {
			s.log.Error("custom resources: sync", "err", err)
			return rev
		}
		rev = max(r, res.Event.Revision)
	}
	return rev
}

// syncCustomResources serves what the stored definitions define and
// brings their status and deletion along; it returns the revision the
// definitions were read at.
func (s *Server) syncCustomResources(ctx context.Context, crdRes *registry.Resource) (int64, error) {
	s.crdSync.Lock()
	defer s.crdSync.Unlock()
	lr, err := s.list(ctx, crdRes, "", &metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, obj := range lr.items {
		crds = append(crds, obj.(*apiextensionsv1.CustomResourceDefinition))
	}
	// The oldest definition keeps a name two of them claim.
	slices.SortStableFunc(crds, func(a, b *apiextensionsv1.CustomResourceDefinition) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	var served []*registry.Resource
	claimed := map[string]string{} // group/plural and group/Kind -> definition
	statuses := map[string]apiextensionsv1.CustomResourceDefinitionStatus{}
	for _, crd := range crds {
		status := *crd.Status.DeepCopy()
		conflict := namesConflict(crd, claimed)
		if conflict != "" {
			setCRDCondition(&status, apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionFalse, "NameConflict", conflict)
			if !established(crd) {
				setCRDCondition(&status, apiextensionsv1.Established, apiextensionsv1.ConditionFalse, "NotAccepted", "not all names are accepted")
			}
		} else {
			status.AcceptedNames = crd.Spec.Names
			setCRDCondition(&status, apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found")
			setCRDCondition(&status, apiextensionsv1.Established, apiextensionsv1.ConditionTrue, "InitialNamesAccepted", "the initial names have been accepted")
		}
		if status.AcceptedNames.Plural != "" {
			withNames := crd.DeepCopy()
			withNames.Status.AcceptedNames = status.AcceptedNames
			rs, err := customresource.Resources(withNames, s.crConverter(withNames))
			if err != nil {
				s.log.Error("custom resources: cannot serve", "crd", crd.Name, "err", err)
			} else {
				served = append(served, rs...)
			}
		}
		statuses[crd.Name] = status
	}
	if err := s.table.SetDynamic(served); err != nil {
		return 0, err
	}
	s.refreshDiscovery()
	gone := map[string]bool{} // storage prefixes of definitions just deleted
	for _, crd := range crds {
		if crd.DeletionTimestamp != nil {
			status := statuses[crd.Name]
			deleted, err := s.cleanUpDefinition(ctx, crdRes, crd, &status)
			if err != nil {
				s.log.Error("custom resources: clean up", "crd", crd.Name, "err", err)
			}
			if deleted {
				gone[customresource.StoragePrefix(crd)] = true
				delete(statuses, crd.Name)
			}
			continue
		}
		if err := s.writeCRDStatus(ctx, crdRes, crd, statuses[crd.Name]); err != nil {
			return 0, err
		}
	}
	if len(gone) > 0 {
		// Their resources go as they do, not at the next event.
		served = slices.DeleteFunc(served, func(r *registry.Resource) bool { return gone[r.StoragePrefix] })
		if err := s.table.SetDynamic(served); err != nil {
			return 0, err
		}
		s.refreshDiscovery()
	}
	// After the statuses: building the documents takes a while, and
	// clients wait for Established, not for the OpenAPI (as in
	// Kubernetes, where it is published after the resource is served).
	s.refreshOpenAPI(crds, statuses)
	return lr.revision, nil
}

// crConverter converts crd's objects between its versions as its
// spec.conversion says: None, or a ConversionReview POSTed to its
// webhook, by apiextensions-apiserver's converter, reaching a Service as
// admission webhooks do. A definition whose webhook cannot be set up is
// still served; what needs converting fails with why.
func (s *Server) crConverter(crd *apiextensionsv1.CustomResourceDefinition) runtime.ObjectConvertor {
	_, conv, err := s.crConverters.NewConverter(crd)
	if err != nil {
		s.log.Error("custom resources: conversion", "crd", crd.Name, "err", err)
		return failingConverter{fmt.Errorf("conversion for %s: %w", crd.Name, err)}
	}
	return conv
}

// failingConverter refuses every conversion with err.
type failingConverter struct{ err error }

func (c failingConverter) Convert(_, _, _ any) error { return c.err }
func (c failingConverter) ConvertToVersion(runtime.Object, runtime.GroupVersioner) (runtime.Object, error) {
	return nil, c.err
}
func (c failingConverter) ConvertFieldLabel(_ schema.GroupVersionKind, _, _ string) (string, string, error) {
	return "", "", c.err
}

// namesConflict says which name of crd an older definition claims, and
// claims crd's names when none.
func namesConflict(crd *apiextensionsv1.CustomResourceDefinition, claimed map[string]string) string {
	n := crd.Spec.Names
	keys := map[string]string{
		"plural " + crd.Spec.Group + "/" + n.Plural: fmt.Sprintf("%q is already in use", n.Plural),
		"kind " + crd.Spec.Group + "/" + n.Kind:     fmt.Sprintf("%q is already in use", n.Kind),
	}
	for key, msg := range keys {
		if owner, ok := claimed[key]; ok && owner != crd.Name {
			return msg
		}
	}
	for key := range keys {
		claimed[key] = crd.Name
	}
	return ""
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// setCRDCondition sets a condition, keeping its transition time while
// its status stays.
func setCRDCondition(status *apiextensionsv1.CustomResourceDefinitionStatus, t apiextensionsv1.CustomResourceDefinitionConditionType, st apiextensionsv1.ConditionStatus, reason, msg string) {
	c := apiextensionsv1.CustomResourceDefinitionCondition{Type: t, Status: st, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second))}
	for i := range status.Conditions {
		if status.Conditions[i].Type != t {
			continue
		}
		if status.Conditions[i].Status == st {
			c.LastTransitionTime = status.Conditions[i].LastTransitionTime
		}
		status.Conditions[i] = c
		return
	}
	status.Conditions = append(status.Conditions, c)
}

// writeCRDStatus stores status as crd's when it differs.
func (s *Server) writeCRDStatus(ctx context.Context, crdRes *registry.Resource, crd *apiextensionsv1.CustomResourceDefinition, status apiextensionsv1.CustomResourceDefinitionStatus) error {
	_, err := s.update(ctx, crdRes, "", crd.Name, statusResource, func(current runtime.Object) (runtime.Object, error) {
		cur := current.(*apiextensionsv1.CustomResourceDefinition)
		if cur.UID != crd.UID {
			return nil, apierrors.NewConflict(crdRes.GroupResource(), crd.Name, errors.New("the definition was replaced"))
		}
		cur.Status.AcceptedNames = status.AcceptedNames
		cur.Status.Conditions = status.Conditions
		return cur, nil
	}, writeOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone or replaced: the next event syncs it
	}
	return err
}

// cleanUpDefinition deletes a deleted definition's objects, then lets it
// go by removing the cleanup finalizer; it says whether the definition
// is gone.
func (s *Server) cleanUpDefinition(ctx context.Context, crdRes *registry.Resource, crd *apiextensionsv1.CustomResourceDefinition, status *apiextensionsv1.CustomResourceDefinitionStatus) (bool, error) {
	if !slices.Contains(crd.Finalizers, customresource.Finalizer) {
		return false, nil // other finalizers hold it
	}
	setCRDCondition(status, apiextensionsv1.Terminating, apiextensionsv1.ConditionTrue, "InstanceDeletionInProgress", "CustomResource deletion is in progress")
	if err := s.writeCRDStatus(ctx, crdRes, crd, *status); err != nil {
		return false, err
	}
	remaining, err := s.deleteCustomObjects(ctx, crd)
	if err != nil {
		return false, err
	}
	if remaining > 0 {
		// Finalizers of the objects hold them; their removal is an event
		// of theirs, not of the definition: look again shortly.
		time.AfterFunc(time.Second, func() { _, _ = s.syncCustomResources(ctx, crdRes) })
		return false, nil
	}
	left, err := s.update(ctx, crdRes, "", crd.Name, mainResource, func(current runtime.Object) (runtime.Object, error) {
		cur := current.(*apiextensionsv1.CustomResourceDefinition)
		cur.Finalizers = slices.DeleteFunc(cur.Finalizers, func(f string) bool { return f == customresource.Finalizer })
		return cur, nil
	}, writeOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return len(left.(*apiextensionsv1.CustomResourceDefinition).Finalizers) == 0, nil
}

// deleteCustomObjects deletes every object of crd and says how many
// are still there (held by finalizers).
func (s *Server) deleteCustomObjects(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (int, error) {
	// Through the storage version where it is served: what is stored in
	// it needs no conversion.
	var res *registry.Resource
	for _, r := range s.table.Resources() {
		if r.StoragePrefix != customresource.StoragePrefix(crd) {
			continue
		}
		if res == nil || slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
			return v.Storage && v.Name == r.Version
		}) {
			res = r
		}
	}
	if res == nil {
		// Never served: whatever is stored under its prefix is unreadable.
		lr, err := s.store.List(ctx, customresource.StoragePrefix(crd), storage.ListOptions{})
		if err != nil {
			return 0, err
		}
		for _, kv := range lr.KVs {
			if _, err := s.store.Delete(ctx, kv.Key, 0); err != nil && !errors.Is(err, storage.ErrNotFound) {
				return 0, err
			}
		}
		return 0, nil
	}
	lr, err := s.list(ctx, res, "", &metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	remaining := 0
	for _, obj := range lr.items {
		m, _ := meta.Accessor(obj)
		left, err := s.deleteObject(ctx, res, m.GetNamespace(), m.GetName(), deleteOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if lm, _ := meta.Accessor(left); lm != nil && lm.GetDeletionTimestamp() != nil {
			remaining++
		}
	}
	return remaining, nil
}

// refreshOpenAPI publishes the schemas of the served custom resources in
// /openapi/v2 and /openapi/v3, built by apiextensions-apiserver's own
// builder, when the definitions changed since the last time.
func (s *Server) refreshOpenAPI(crds []*apiextensionsv1.CustomResourceDefinition, statuses map[string]apiextensionsv1.CustomResourceDefinitionStatus) {
	var exts []openapi.Extension
	var fingerprint strings.Builder
	for _, crd := range crds {
		accepted := statuses[crd.Name].AcceptedNames
		if accepted.Plural == "" {
			continue
		}
		withNames := crd.DeepCopy()
		withNames.Status.AcceptedNames = accepted
		fmt.Fprintf(&fingerprint, "%s/%s/%d/%s;", crd.Name, crd.UID, crd.Generation, accepted.Kind)
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			v2, err := builder.BuildOpenAPIV2(withNames, v.Name, builder.Options{V2: true, IncludeSelectableFields: true})
			if err != nil {
				s.log.Error("custom resources: openapi v2", "crd", crd.Name, "version", v.Name, "err", err)
				continue
			}
			v3, err := builder.BuildOpenAPIV3(withNames, v.Name, builder.Options{IncludeSelectableFields: true})
			if err != nil {
				s.log.Error("custom resources: openapi v3", "crd", crd.Name, "version", v.Name, "err", err)
				continue
			}
			exts = append(exts, openapi.Extension{GroupVersion: schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}, V2: v2, V3: v3})
		}
	}
	if fingerprint.String() == s.oapiFingerprint {
		return
	}
	h, err := openapi.NewHandler(s.oapiResources, exts...)
	if err != nil {
		s.log.Error("custom resources: openapi", "err", err)
		return
	}
	s.openapi.Store(&h)
	s.oapiFingerprint = fingerprint.String()
}
