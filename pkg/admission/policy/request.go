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
	"sort"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	admissionauthorizer "k8s.io/apiserver/pkg/admission/plugin/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/minik8s/minik8s/pkg/admission"
	"github.com/minik8s/minik8s/pkg/admission/matching"
)

// BaseEnv is Kubernetes' CEL environment (its libraries and cost
// limits), built once: building it takes a while.
var BaseEnv = sync.OnceValue(func() *environment.EnvSet {
	return environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
})

// Request is one write as policies see it: what matching reads of it
// (its attributes and namespace) and what CEL reads.
type Request struct {
	matching.Request
	// Versioned is what CEL reads of the write: the object and old
	// object in their unstructured form, with apiVersion and kind.
	Versioned *k8sadmission.VersionedAttributes

	ctx     context.Context
	objects admission.Objects
	authz   authorizer.UnconditionalAuthorizer
}

// NewRequest reads the write's namespace and builds the CEL inputs.
func NewRequest(ctx context.Context, a *admission.Attributes, objects admission.Objects) (*Request, error) {
	m, err := matching.NewRequest(ctx, a, objects)
	if err != nil {
		return nil, err
	}
	r := &Request{Request: m, ctx: ctx, objects: objects}
	if r.Versioned, err = admission.Versioned(a); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
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

// Keep drops the evaluators of policies other than the ones listed, the
// policies that exist now.
func Keep[E any, P interface{ GetName() string }](c *Cache[E], policies []P) {
	live := make(map[string]bool, len(policies))
	for _, p := range policies {
		live[p.GetName()] = true
	}
	c.Forget(live)
}

// Len is the number of evaluators kept.
func (c *Cache[E]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.compiled)
}
