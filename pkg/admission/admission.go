// Package admission is the apiserver's admission, as kube-apiserver's
// admission plugins: after an object to be created or updated has passed
// defaulting and validation, every plugin of the apiserver's table looks
// at the write, with read access to other stored objects, and may refuse
// it with an API error, add warnings to the response (the Warning header
// kubectl prints) and annotate the request's audit event. Validation does
// not change the object; a plugin that is also a Mutator changes it
// first, in a mutating phase that runs after defaulting and before
// validation, as kube-apiserver's mutating plugins (LimitRanger).
package admission

import (
	"context"
	"net/url"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Operation is the kind of write under admission.
type Operation string

// The operations admission sees, spelled as Kubernetes' admission API.
const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// Attributes describe one write.
type Attributes struct {
	// Resource and Kind of the object; Subresource is "" for the resource
	// itself, else the subresource written: "status", "scale",
	// "finalize", "approval", or "action" for a registry.Action (a pod's
	// binding).
	Resource    schema.GroupVersionResource
	Kind        schema.GroupVersionKind
	Subresource string
	Operation   Operation
	// Namespace and Name of the object ("" namespace for cluster-scoped
	// objects); a generateName has been resolved.
	Namespace, Name string
	// Object is the object about to be stored, OldObject the stored one
	// (nil on create). On a delete Object is nil and OldObject the object
	// deleted; on a connect Object is the request's options (a
	// PodExecOptions). Only a Mutator's Admit may change Object; nothing
	// changes OldObject.
	Object, OldObject runtime.Object
	// DryRun is true for a ?dryRun=All request, which admission checks as
	// any other.
	DryRun bool
	// UserName is the authenticated user; "" for in-process writes.
	// UserUID and UserGroups are the rest of what authentication said.
	UserName   string
	UserUID    string
	UserGroups []string
	// Default fills the kind's defaults in an object of Kind, as the
	// apiserver did before admission: a Mutator that rewrites Object
	// calls it on what it made, as kube-apiserver defaults what a
	// mutating admission policy returns. Nil when there are none.
	Default func(runtime.Object)
}

// Objects reads stored objects for a plugin.
type Objects interface {
	// Get returns one object, or an API error (NotFound).
	Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error)
	// List returns every object of gvr in namespace (all namespaces
	// when "").
	List(ctx context.Context, gvr schema.GroupVersionResource, namespace string) ([]runtime.Object, error)
}

// StatusWriter is what Objects also offers where a plugin must record
// what it admits before the write (the ResourceQuota admission charging
// a quota's status.used).
type StatusWriter interface {
	// UpdateStatus writes obj's status (of gvr), on the condition that
	// the stored object still has obj's resourceVersion (a Conflict
	// error otherwise), and returns what was stored.
	UpdateStatus(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error)
}

// Result is a plugin's decision on one write.
type Result struct {
	// Err, when set, refuses the write: an API status error
	// (k8s.io/apimachinery/pkg/api/errors) that the client gets as is.
	Err error
	// Warnings go to the client in Warning headers, even when the write
	// is refused.
	Warnings []string
	// AuditAnnotations are added, keys as given, to the request's audit
	// event, even when the write is refused.
	AuditAnnotations map[string]string
}

// Plugin is one validating admission plugin. It sees creates and
// updates; one that is also an OperationFilter sees the operations it
// handles.
type Plugin interface {
	// Name is the plugin's name, as kube-apiserver's --enable-admission-plugins
	// spells it.
	Name() string
	// Validate decides on the write a describes. It is called for every
	// create and update of every resource and answers quickly, with a
	// zero Result, for those it does not look at.
	Validate(ctx context.Context, a *Attributes, objects Objects) Result
}

// Mutator is a plugin that also changes the objects it admits, as
// kube-apiserver's mutating admission plugins: the apiserver calls Admit
// on a write of the resource itself (no subresource) after defaulting
// and before validation, then validates what it made, then calls
// Validate with the rest.
type Mutator interface {
	Plugin
	// Admit may change a.Object, or refuse the write. Like Validate, it
	// answers quickly, with a zero Result, for what it does not look at.
	Admit(ctx context.Context, a *Attributes, objects Objects) Result
}

// OperationFilter is a Plugin that sees more than creates and updates
// (deletes and connects), as kube-apiserver's admission.Handler.
type OperationFilter interface {
	Handles(op Operation) bool
}

// Handles says whether p is called for op.
func Handles(p Plugin, op Operation) bool {
	if f, ok := p.(OperationFilter); ok {
		return f.Handles(op)
	}
	return op == Create || op == Update
}

// Defaulter is what Objects also offers where a plugin changes an
// object and wants the defaults of its kind applied to what it made (a
// mutating webhook's patch), as the apiserver does after decoding.
type Defaulter interface {
	Default(gvr schema.GroupVersionResource, obj runtime.Object)
}

// ServiceResolver finds where a Service in the cluster is reached from
// the apiserver: a URL with the host:port of one of its ready endpoints.
type ServiceResolver interface {
	ResolveEndpoint(namespace, name string, port int32) (*url.URL, error)
}

// WantsServiceResolver is a Plugin that calls Services (admission
// webhooks); the apiserver gives it its resolver once, when it starts.
type WantsServiceResolver interface {
	SetServiceResolver(ServiceResolver)
}

// KindResolver is what Objects also offers where a plugin names stored
// objects by kind (a ValidatingAdmissionPolicy's paramKind).
type KindResolver interface {
	// ResourceFor returns the served resource of gvk and whether its
	// objects live in namespaces; ok is false when none serves gvk.
	ResourceFor(gvk schema.GroupVersionKind) (gvr schema.GroupVersionResource, namespaced, ok bool)
	// KindFor returns the kind of a served resource.
	KindFor(gvr schema.GroupVersionResource) (gvk schema.GroupVersionKind, ok bool)
}

// FieldTypesResolver is what Objects also offers where a plugin merges
// into objects with server-side apply's semantics (a
// MutatingAdmissionPolicy's ApplyConfiguration).
type FieldTypesResolver interface {
	// FieldTypes returns the structured-merge-diff schema of gvk's
	// objects, as server-side apply uses it.
	FieldTypes(gvk schema.GroupVersionKind) (managedfields.TypeConverter, error)
}

// SchemaResolver is what Objects also offers where a plugin reads the
// OpenAPI schemas of served kinds (type checking a policy's CEL). A
// resolved schema has its references inlined.
type SchemaResolver interface {
	ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error)
}
