package registry

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
	"github.com/minik8s/minik8s/pkg/storage"
)

// Resource describes one REST resource: where it lives, and the strategy
// the generic handlers in pkg/apiserver follow for its objects. Each kind
// fills its entry in one file of pkg/registry/kinds.
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
	// KeepStatusOnCreate keeps the status a new object is created with (a
	// node registers with its own); otherwise a resource with Status starts
	// without one, status being the controllers' to write.
	KeepStatusOnCreate bool
	// Scale, when set, serves /scale as autoscaling/v1 Scale.
	Scale *ScaleAccessor
	// Actions are the POST subresources that change the object in one step
	// (a pod's binding).
	Actions []Action
	// Finalize serves PUT .../{name}/finalize, which changes the spec alone
	// (a namespace's spec.finalizers).
	Finalize bool

	// Default fills in the server-side defaults of obj in place, on create
	// and update, before validation. It must be idempotent.
	Default func(obj runtime.Object)
	// NameRule checks metadata.name; nil is validation.PathSegmentName.
	NameRule apimachineryvalidation.ValidateNameFunc
	// Validate checks the kind's own fields of an object about to be
	// stored, on create and update (metadata is checked for every kind).
	Validate validation.KindFunc
	// ValidateUpdate checks what an update may not change.
	ValidateUpdate validation.KindUpdateFunc
	// ValidateCreateOnly, when set, adds what only a create must satisfy
	// (a pod names no ephemeral containers yet).
	ValidateCreateOnly validation.KindFunc
	// Printer renders the kind's table rows; unset is printers.Default.
	Printer printers.Printer

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
	// ValidateStatusUpdate, when set, adds the checks of a /status write
	// to those of every update (a PodCertificateRequest's issuance).
	ValidateStatusUpdate validation.KindUpdateFunc
	// StatusSigner, when set, names the certificates.k8s.io signer whose
	// "sign" verb a /status write from old to obj takes, or "" when that
	// write needs none (a PodCertificateRequest whose status stays).
	StatusSigner func(obj, old runtime.Object) string
	// Approval, when set, serves /approval (CertificateSigningRequests): obj
	// is the stored object with the request's status, and Approval keeps
	// from old everything the approval may not change.
	Approval func(obj, old runtime.Object)
	// SpecParts are the subresources that write one part of the spec, by
	// name: a pod's /resize (its containers' resources) and
	// /ephemeralcontainers. GET returns the object; PUT and PATCH start
	// from the stored object and take from the request that part alone.
	SpecParts map[string]SpecPart
	// GracefulDelete says whether deleting obj must wait for someone (the
	// kubelet) to finish it, and the grace period to record.
	GracefulDelete func(obj runtime.Object, requested *int64) (grace int64, graceful bool)
	// MarkDeleting records in obj that its deletion has begun (a
	// namespace's phase Terminating) and says whether obj changed.
	MarkDeleting func(obj runtime.Object) bool
	// HoldsDeletion says whether something in obj other than
	// metadata.finalizers still holds its deletion (a namespace's
	// spec.finalizers).
	HoldsDeletion func(obj runtime.Object) bool
	// NewWriteHook, when set, builds the hook that keeps state outside
	// the objects in step with their writes (a service's cluster IP and
	// node ports).
	NewWriteHook func(cfg HookConfig) (WriteHook, error)
	// Encrypted values are stored AES-GCM encrypted.
	Encrypted bool
	// OrphanByDefault resources orphan their dependents when a delete
	// names no propagationPolicy (Kubernetes' DefaultGarbageCollectionPolicy
	// of core/v1 ReplicationControllers, kept for compatibility); others
	// leave them to the garbage collector in the background.
	OrphanByDefault bool
	// NoGeneration resources do not carry metadata.generation.
	NoGeneration bool

	// Dynamic resources (custom resources) have no Go type: NewObject and
	// NewListObject make their objects (unstructured), Prune drops what
	// their schema does not know from a decoded object and names what it
	// dropped, and StoragePrefix is where they live in the store, shared
	// by every version of one resource.
	NewObject, NewListObject func() runtime.Object
	Prune                    func(obj runtime.Object) []string
	StoragePrefix            string
	// StoredAs, when set, is how objects of a resource that shares
	// another's storage (StoragePrefix) are written and read: as that
	// resource's objects, converted each way (events.k8s.io Events are
	// stored as core Events).
	StoredAs *StorageConversion
	// RefuseCreate, when set, is why no object may be created now (the
	// definition of a custom resource is being deleted).
	RefuseCreate string
	// FieldTypes, when set, is the schema server-side apply merges and
	// tracks field ownership with (a custom resource's, from its
	// definition); unset, the built-in kinds' schema from the server's
	// OpenAPI is used.
	FieldTypes func() (managedfields.TypeConverter, error)

	objType, listType reflect.Type
}

// StorageConversion converts a resource's objects to and from the kind
// they are stored as.
type StorageConversion struct {
	// New makes an empty stored object.
	New        func() runtime.Object
	ToStored   func(obj runtime.Object) (runtime.Object, error)
	FromStored func(stored runtime.Object) (runtime.Object, error)
	// FromStoredList, when set, converts the stored objects of one read
	// of a list at once (a custom resource's: one conversion review),
	// returning them in their order.
	FromStoredList func(stored []runtime.Object) ([]runtime.Object, error)
}

// Action is a POST subresource that acts on one stored object. Most
// change it in one step, as a pod's binding sets its node: the request
// body is decoded into New(), then Apply changes a copy of the stored
// object, which is validated as on create (Apply may change spec and
// status) and written with the usual retries. An action with Do instead
// acts through Objects, and may write other objects and delete this one
// (a pod's eviction). Either way the answer is a Status Success, 201.
type Action struct {
	// Name is the subresource, Kind the kind of its body, in the
	// resource's group and version unless Body names another.
	Name, Kind string
	// Body is the group and version of the body's kind when they are not
	// the resource's (a pod's Eviction is policy/v1), as discovery lists
	// it; Accepts are further group versions of the same kind a body may
	// come in, with the same fields (policy/v1beta1).
	Body    schema.GroupVersion
	Accepts []schema.GroupVersion
	New     func() runtime.Object
	// Check refuses a body before the object is read; nil accepts any.
	Check func(body runtime.Object) error
	// Apply changes obj as body asks, or refuses with an API error. A
	// resourceVersion it sets on obj is a precondition.
	Apply func(obj, body runtime.Object, now time.Time) error
	// Do, set instead of Apply, carries out the action on the object
	// ns/name through objs, or refuses with an API error. dryRun is the
	// request's ?dryRun=All.
	Do func(ctx context.Context, objs Objects, ns, name string, body runtime.Object, dryRun bool) error
}

// BodyKind is the group, version and kind the action's body is served
// as, in discovery and by default.
func (a *Action) BodyKind(res *Resource) schema.GroupVersionKind {
	if a.Body.Empty() {
		return res.GroupVersion().WithKind(a.Kind)
	}
	return a.Body.WithKind(a.Kind)
}

// Objects is what an Action's Do may do, with the apiserver's authority:
// each call goes through the resource's strategy (defaults, validation,
// graceful deletion) as a client's request would, without admission of
// the caller.
type Objects interface {
	// Get reads the stored object.
	Get(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error)
	// List reads every object of gvr in ns.
	List(ctx context.Context, gvr schema.GroupVersionResource, ns string) ([]runtime.Object, error)
	// UpdateStatus writes the status that mutate sets on a copy of the
	// stored object; a resourceVersion mutate leaves on it is a
	// precondition, and without one mutate runs again on a conflict.
	// It returns the object written (the stored one when nothing changed).
	UpdateStatus(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, mutate func(obj runtime.Object) error, dryRun bool) (runtime.Object, error)
	// Delete deletes the object as DELETE with opts does.
	Delete(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, opts *metav1.DeleteOptions) error
	// Now is the apiserver's time.
	Now() time.Time
}

// Action returns the resource's action named name.
func (r *Resource) Action(name string) (*Action, bool) {
	for i := range r.Actions {
		if r.Actions[i].Name == name {
			return &r.Actions[i], true
		}
	}
	return nil, false
}

// WriteHook keeps state outside an object in step with the object's
// writes: Before reserves (and can refuse), After releases what the
// written object no longer holds. obj is nil for a delete, old for a create.
type WriteHook interface {
	Before(ctx context.Context, obj, old runtime.Object) (undo func(), err error)
	After(ctx context.Context, obj, old runtime.Object)
}

// HookConfig is what the apiserver gives a resource's NewWriteHook.
type HookConfig struct {
	// Store is the apiserver's store; hooks keep their state under
	// /registry/ranges/.
	Store storage.Store
	// ServiceCIDR is where Service cluster IPs come from.
	ServiceCIDR string
	// NodePortMin and NodePortMax bound the Service node ports.
	NodePortMin, NodePortMax int
}

// ApplyDefaults fills in obj's server-side defaults; a nil obj is left alone.
func (r *Resource) ApplyDefaults(obj runtime.Object) {
	if r.Default == nil || obj == nil {
		return
	}
	if v := reflect.ValueOf(obj); v.Kind() == reflect.Pointer && v.IsNil() {
		return
	}
	r.Default(obj)
}

// ValidateCreate checks an object about to be created: its metadata and
// the kind's fields, and what only a create must satisfy.
func (r *Resource) ValidateCreate(obj runtime.Object) field.ErrorList {
	errs := r.ValidateObject(obj)
	if r.ValidateCreateOnly != nil && obj != nil && !reflect.ValueOf(obj).IsNil() {
		errs = append(errs, r.ValidateCreateOnly(obj)...)
	}
	return errs
}

// ValidateObject checks an object about to be stored, new or not: its
// metadata and the kind's fields.
func (r *Resource) ValidateObject(obj runtime.Object) field.ErrorList {
	return validation.Object(obj, r.Namespaced, r.NameRule, r.Validate)
}

// ValidateChange checks an update of old to obj: what ValidateCreate
// checks, the metadata update rules and the kind's immutability rules.
func (r *Resource) ValidateChange(obj, old runtime.Object) field.ErrorList {
	return validation.ObjectUpdate(obj, old, r.Namespaced, r.NameRule, r.Validate, r.ValidateUpdate)
}

// SpecPart is a subresource that writes one part of a kind's spec.
type SpecPart struct {
	// Take copies into obj, the stored object, from desired, the
	// request's, what the subresource may change.
	Take func(obj, desired runtime.Object)
	// Validate takes the place of ValidateUpdate.
	Validate validation.KindUpdateFunc
}

// SpecPartNames are the names of r's SpecParts, sorted.
func (r *Resource) SpecPartNames() []string {
	return slices.Sorted(maps.Keys(r.SpecParts))
}

// ValidateSpecPartChange checks a write of old to obj through part: what
// ValidateObject checks, the metadata update rules and the part's rules.
func (r *Resource) ValidateSpecPartChange(part SpecPart, obj, old runtime.Object) field.ErrorList {
	return validation.ObjectUpdate(obj, old, r.Namespaced, r.NameRule, r.Validate, part.Validate)
}

// TablePrinter returns the kind's printer, printers.Default when it has
// none, with a copy of the columns the caller may modify.
func (r *Resource) TablePrinter() printers.Printer {
	p := r.Printer
	if p.Cells == nil {
		p = printers.Default
	}
	p.Columns = slices.Clone(p.Columns)
	return p
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
	if r.NewObject != nil {
		obj := r.NewObject()
		obj.GetObjectKind().SetGroupVersionKind(r.GroupVersionKind())
		return obj
	}
	obj := reflect.New(r.objType).Interface().(runtime.Object)
	obj.GetObjectKind().SetGroupVersionKind(r.GroupVersionKind())
	return obj
}

// NewList returns an empty list of the resource's kind with its TypeMeta set.
func (r *Resource) NewList() runtime.Object {
	var obj runtime.Object
	if r.NewListObject != nil {
		obj = r.NewListObject()
	} else {
		obj = reflect.New(r.listType).Interface().(runtime.Object)
	}
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

// Table is the set of served resources, indexed for the request router:
// All, built in, and the dynamic ones (custom resources), which come and
// go while the server runs.
type Table struct {
	All    []*Resource
	byGVR  map[schema.GroupVersionResource]*Resource
	byKind map[schema.GroupVersionKind]*Resource

	mu            sync.RWMutex
	dynamic       []*Resource
	dynamicByGVR  map[schema.GroupVersionResource]*Resource
	dynamicByKind map[schema.GroupVersionKind]*Resource
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
		if r.Printer.Cells != nil {
			if err := r.Printer.Validate(); err != nil {
				return nil, fmt.Errorf("resource %s printer: %w", r.GroupVersionResource, err)
			}
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
	if r, ok := t.byGVR[gvr]; ok {
		return r, ok
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	r, ok := t.dynamicByGVR[gvr]
	return r, ok
}

// ForKind finds the resource serving a kind.
func (t *Table) ForKind(gvk schema.GroupVersionKind) (*Resource, bool) {
	if r, ok := t.byKind[gvk]; ok {
		return r, ok
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	r, ok := t.dynamicByKind[gvk]
	return r, ok
}

// Resources is every served resource: the built-in ones, then the
// dynamic ones.
func (t *Table) Resources() []*Resource {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return append(slices.Clone(t.All), t.dynamic...)
}

// SetDynamic replaces the dynamic resources. One of them that names a
// built-in resource or kind is an error, and nothing changes.
func (t *Table) SetDynamic(resources []*Resource) error {
	byGVR := map[schema.GroupVersionResource]*Resource{}
	byKind := map[schema.GroupVersionKind]*Resource{}
	for _, r := range resources {
		if r.NewObject == nil || r.NewListObject == nil {
			return fmt.Errorf("dynamic resource %s: NewObject and NewListObject are required", r.GroupVersionResource)
		}
		if _, dup := t.byGVR[r.GroupVersionResource]; dup {
			return fmt.Errorf("resource %s is built in", r.GroupVersionResource)
		}
		if _, dup := byGVR[r.GroupVersionResource]; dup {
			return fmt.Errorf("resource %s registered twice", r.GroupVersionResource)
		}
		if r.Singular == "" {
			r.Singular = strings.ToLower(r.Kind)
		}
		byGVR[r.GroupVersionResource] = r
		byKind[r.GroupVersionKind()] = r
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dynamic, t.dynamicByGVR, t.dynamicByKind = slices.Clone(resources), byGVR, byKind
	return nil
}

// GroupVersions lists the served group versions in registration order.
func (t *Table) GroupVersions() []schema.GroupVersion {
	seen := map[schema.GroupVersion]bool{}
	var out []schema.GroupVersion
	for _, r := range t.Resources() {
		if gv := r.GroupVersion(); !seen[gv] {
			seen[gv] = true
			out = append(out, gv)
		}
	}
	return out
}
