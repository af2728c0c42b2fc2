// Package policy is what Kubernetes' admission policies (the
// ValidatingAdmissionPolicy and MutatingAdmissionPolicy plugins,
// admissionregistration.k8s.io/v1) share: a write as their CEL
// expressions see it (the object, old object and params in their
// unstructured form, the namespace, the request, the authorizer), the
// matching of a policy's matchConstraints and a binding's
// matchResources, the params a binding's paramRef names, Kubernetes' CEL
// environment, and a cache of compiled policies by resourceVersion. It
// decides nothing: each plugin evaluates its policies and answers.
package policy

import (
	"context"
	"fmt"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	admissionauthorizer "k8s.io/apiserver/pkg/admission/plugin/authorizer"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/minik8s/minik8s/pkg/admission"
)

var namespacesGVR = corev1.SchemeGroupVersion.WithResource("namespaces")

// BaseEnv is Kubernetes' CEL environment (its libraries and cost
// limits), built once: building it takes a while.
var BaseEnv = sync.OnceValue(func() *environment.EnvSet {
	return environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
})

// Request is one write as policies see it.
type Request struct {
	*admission.Attributes
	// NamespaceObject is the namespace of a namespaced object (nil for
	// cluster-scoped objects and Namespaces themselves).
	NamespaceObject *corev1.Namespace
	// Versioned is what CEL reads of the write: the object and old
	// object in their unstructured form, with apiVersion and kind.
	Versioned *k8sadmission.VersionedAttributes

	ctx     context.Context
	objects admission.Objects
	// namespaceLabels are the labels of the namespace (nil for
	// cluster-scoped objects; for a Namespace, its own).
	namespaceLabels map[string]string
	authz           authorizer.UnconditionalAuthorizer
}

// NewRequest reads the write's namespace and builds the CEL inputs.
func NewRequest(ctx context.Context, a *admission.Attributes, objects admission.Objects) (*Request, error) {
	r := &Request{Attributes: a, ctx: ctx, objects: objects}
	if r.isNamespace() {
		r.namespaceLabels = LabelsOf(a.Object)
	} else if a.Namespace != "" {
		obj, err := objects.Get(ctx, namespacesGVR, "", a.Namespace)
		if err != nil {
			return nil, err
		}
		ns, ok := obj.(*corev1.Namespace)
		if !ok {
			return nil, apierrors.NewInternalError(fmt.Errorf("namespace %s is a %T", a.Namespace, obj))
		}
		r.NamespaceObject = ns
		r.namespaceLabels = ns.Labels
		if r.namespaceLabels == nil {
			r.namespaceLabels = map[string]string{}
		}
	}
	object, err := ToUnstructured(a.Object, a.Kind)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	oldObject, err := ToUnstructured(a.OldObject, a.Kind)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	record := k8sadmission.NewAttributesRecord(object, oldObject, a.Kind, a.Namespace, a.Name, a.Resource, a.Subresource,
		k8sadmission.Operation(a.Operation), nil, a.DryRun, &user.DefaultInfo{Name: a.UserName, UID: a.UserUID, Groups: a.UserGroups})
	r.Versioned = &k8sadmission.VersionedAttributes{Attributes: record, VersionedKind: a.Kind,
		VersionedObject: k8sadmission.NewLazyObject(object), VersionedOldObject: k8sadmission.NewLazyObject(oldObject)}
	return r, nil
}

// Authorizer is what a policy's authorizer variable asks: the server's
// authorizer when the store offers it, each answer asked once per write.
func (r *Request) Authorizer() authorizer.UnconditionalAuthorizer {
	if r.authz == nil {
		az, ok := r.objects.(authorizer.UnconditionalAuthorizer)
		if !ok {
			return nil
		}
		r.authz = admissionauthorizer.NewCachingAuthorizer(az)
	}
	return r.authz
}

// Context is the request's context.
func (r *Request) Context() context.Context { return r.ctx }

// ToUnstructured is obj as CEL sees it, a copy; nil stays nil.
func ToUnstructured(obj runtime.Object, gvk schema.GroupVersionKind) (runtime.Object, error) {
	if obj == nil {
		return nil, nil
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u = u.DeepCopy()
		u.SetGroupVersionKind(gvk)
		return u, nil
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// LabelsOf is obj's labels, never nil.
func LabelsOf(obj runtime.Object) map[string]string {
	m, err := meta.Accessor(obj)
	if err != nil || m.GetLabels() == nil {
		return map[string]string{}
	}
	return m.GetLabels()
}

// List lists the objects of gvr, by name.
func List[T interface {
	runtime.Object
	GetName() string
}](ctx context.Context, objects admission.Objects, gvr schema.GroupVersionResource) ([]T, error) {
	list, err := objects.List(ctx, gvr, "")
	if err != nil {
		return nil, err
	}
	var out []T
	for _, o := range list {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}

// Cache keeps each policy's compiled evaluator by name, with the
// resourceVersion it was compiled from.
type Cache[E any] struct {
	mu       sync.Mutex
	compiled map[string]cached[E]
}

type cached[E any] struct {
	resourceVersion string
	evaluator       E
}

// Get returns the evaluator of the policy name at resourceVersion,
// compiling it when the policy changed (or has no resourceVersion).
func (c *Cache[E]) Get(name, resourceVersion string, compile func() E) E {
	c.mu.Lock()
	e, ok := c.compiled[name]
	c.mu.Unlock()
	if ok && e.resourceVersion == resourceVersion && resourceVersion != "" {
		return e.evaluator
	}
	v := compile()
	c.mu.Lock()
	if c.compiled == nil {
		c.compiled = map[string]cached[E]{}
	}
	c.compiled[name] = cached[E]{resourceVersion, v}
	c.mu.Unlock()
	return v
}

// Forget drops the evaluators of the policies not in live.
func (c *Cache[E]) Forget(live map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name := range c.compiled {
		if !live[name] {
			delete(c.compiled, name)
		}
	}
}

// Len is the number of evaluators kept.
func (c *Cache[E]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.compiled)
}
