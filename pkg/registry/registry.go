package registry

import (
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource describes one REST resource.
type Resource struct {
	schema.GroupVersionResource
	Kind       string
	Singular   string
	Namespaced bool
	ShortNames []string
	Categories []string
	// Status is true when the resource has a /status subresource: the main
	// resource then ignores status changes and /status ignores everything else.
	Status bool
	// Scale, when set, serves /scale as autoscaling/v1 Scale.
	Scale *ScaleAccessor
	// Binding is true for pods: POST .../pods/{name}/binding sets spec.nodeName.
	Binding bool
	// FieldLabels returns the selectable fields beyond metadata.name and metadata.namespace.
	FieldLabels func(obj runtime.Object) fields.Set
	// PrepareForCreate adjusts a new object after defaulting (e.g. initial status).
	PrepareForCreate func(obj runtime.Object)
	// PrepareForUpdate carries over what an update may leave out (e.g. a
	// service's allocated clusterIP) before validation.
	PrepareForUpdate func(obj, old runtime.Object)
	// CreatedBy records who creates an object, from the authenticated
	// request (a CSR's spec.username, uid and groups); it runs on every
	// create, with a zero Requester when the request carries no user.
	CreatedBy func(obj runtime.Object, by Requester)
	// PrepareForStatusUpdate keeps what /status may not change: obj is the
	// stored object with the request's status, old the stored object.
	PrepareForStatusUpdate func(obj, old runtime.Object)
	// Approval, when set, serves /approval (CertificateSigningRequests): obj
	// is the stored object with the request's status, and Approval keeps
	// from old everything the approval may not change.
	Approval func(obj, old runtime.Object)
	// GracefulDelete says whether deleting obj must wait for someone (the
	// kubelet) to finish it, and the grace period to record.
	GracefulDelete func(obj runtime.Object, requested *int64) (grace int64, graceful bool)
	// Encrypted values are stored AES-GCM encrypted.
	Encrypted bool
	// ClusterScopedName validates nothing here; see validation.
	// NoGeneration resources do not carry metadata.generation.
	NoGeneration bool

	objType, listType reflect.Type
}

// Requester is the authenticated user behind a request.
type Requester struct {
	Name   string
	UID    string
	Groups []string
}

// ScaleAccessor reads and writes the replica count behind /scale.
type ScaleAccessor struct {
	Get func(obj runtime.Object) (spec, status int32, selector *metav1.LabelSelector)
	Set func(obj runtime.Object, replicas int32)
}

// GroupVersionKind of the resource's objects.
func (r *Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion().WithKind(r.Kind)
}

// New returns an empty object of the resource's kind with its TypeMeta set.
func (r *Resource) New() runtime.Object {
	obj := reflect.New(r.objType).Interface().(runtime.Object)
	obj.GetObjectKind().SetGroupVersionKind(r.GroupVersionKind())
	return obj
}

// NewList returns an empty list of the resource's kind with its TypeMeta set.
func (r *Resource) NewList() runtime.Object {
	obj := reflect.New(r.listType).Interface().(runtime.Object)
	obj.GetObjectKind().SetGroupVersionKind(r.GroupVersion().WithKind(r.Kind + "List"))
	return obj
}

// Fields returns every selectable field of obj.
func (r *Resource) Fields(obj runtime.Object, name, namespace string) fields.Set {
	set := fields.Set{"metadata.name": name}
	if r.Namespaced {
		set["metadata.namespace"] = namespace
	}
	if r.FieldLabels != nil {
		for k, v := range r.FieldLabels(obj) {
			set[k] = v
		}
	}
	return set
}

// Table is the set of served resources, indexed for the request router.
type Table struct {
	All    []*Resource
	byGVR  map[schema.GroupVersionResource]*Resource
	byKind map[schema.GroupVersionKind]*Resource
}

// NewTable indexes resources, resolving their Go types from the scheme.
func NewTable(scheme *runtime.Scheme, resources []*Resource) (*Table, error) {
	t := &Table{byGVR: map[schema.GroupVersionResource]*Resource{}, byKind: map[schema.GroupVersionKind]*Resource{}}
	for _, r := range resources {
		obj, err := scheme.New(r.GroupVersionKind())
		if err != nil {
			return nil, fmt.Errorf("resource %s: %w", r.GroupVersionResource, err)
		}
		list, err := scheme.New(r.GroupVersion().WithKind(r.Kind + "List"))
		if err != nil {
			return nil, fmt.Errorf("resource %s list: %w", r.GroupVersionResource, err)
		}
		r.objType = reflect.TypeOf(obj).Elem()
		r.listType = reflect.TypeOf(list).Elem()
		if r.Singular == "" {
			r.Singular = strings.ToLower(r.Kind)
		}
		if _, dup := t.byGVR[r.GroupVersionResource]; dup {
			return nil, fmt.Errorf("resource %s registered twice", r.GroupVersionResource)
		}
		t.byGVR[r.GroupVersionResource] = r
		t.byKind[r.GroupVersionKind()] = r
		t.All = append(t.All, r)
	}
	return t, nil
}

// Lookup finds a resource by group, version and plural name.
func (t *Table) Lookup(gvr schema.GroupVersionResource) (*Resource, bool) {
	r, ok := t.byGVR[gvr]
	return r, ok
}

// ForKind finds the resource serving a kind.
func (t *Table) ForKind(gvk schema.GroupVersionKind) (*Resource, bool) {
	r, ok := t.byKind[gvk]
	return r, ok
}

// GroupVersions lists the served group versions in registration order.
func (t *Table) GroupVersions() []schema.GroupVersion {
	seen := map[schema.GroupVersion]bool{}
	var out []schema.GroupVersion
	for _, r := range t.All {
		if gv := r.GroupVersion(); !seen[gv] {
			seen[gv] = true
			out = append(out, gv)
		}
	}
	return out
}
