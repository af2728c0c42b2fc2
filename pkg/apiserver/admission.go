package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"

	"github.com/minik8s/minik8s/pkg/admission"
	"github.com/minik8s/minik8s/pkg/admission/limitranger"
	"github.com/minik8s/minik8s/pkg/admission/mutatingadmissionpolicy"
	"github.com/minik8s/minik8s/pkg/admission/noderestriction"
	"github.com/minik8s/minik8s/pkg/admission/podsecurity"
	"github.com/minik8s/minik8s/pkg/admission/resourcequota"
	"github.com/minik8s/minik8s/pkg/admission/runtimeclass"
	"github.com/minik8s/minik8s/pkg/admission/validatingadmissionpolicy"
	"github.com/minik8s/minik8s/pkg/admission/webhook"
	"github.com/minik8s/minik8s/pkg/apiserver/audit"
	"github.com/minik8s/minik8s/pkg/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/registry"
)

// DefaultAdmission is the admission an apiserver runs unless its Config
// says otherwise: kube-apiserver's default-enabled plugins that minik8s
// has, in order (NodeRestriction, LimitRanger mutates and validates, then
// PodSecurity, RuntimeClass, MutatingAdmissionWebhook,
// MutatingAdmissionPolicy, ValidatingAdmissionPolicy,
// ValidatingAdmissionWebhook, and ResourceQuota, last as in
// kube-apiserver, charges what the others let through).
func DefaultAdmission() []admission.Plugin {
	return []admission.Plugin{noderestriction.New(), limitranger.New(), podsecurity.New(), runtimeclass.New(), webhook.NewMutating(),
		mutatingadmissionpolicy.New(), validatingadmissionpolicy.New(), webhook.NewValidating(), resourcequota.New()}
}

// validateAdmission runs the validating admission plugins on a create
// (old nil) or update that passed validation, before anything is
// written (dry runs included). Every plugin's audit annotations and
// warnings are recorded; the first refusal ends the write.
func (s *Server) validateAdmission(ctx context.Context, res *registry.Resource, sub subresource, obj, old runtime.Object, opts writeOptions) error {
	a, err := s.writeAttributes(ctx, res, sub, obj, old, opts)
	if err != nil {
		return err
	}
	return s.runAdmission(ctx, a, admission.Plugin.Validate)
}

// mutateAdmission runs the Admit of the plugins that are Mutators on a
// create or update of the resource itself, after defaulting and before
// validation, and prunes a custom resource they changed; mutated says whether any ran, so that an update validates
// again what they made.
func (s *Server) mutateAdmission(ctx context.Context, res *registry.Resource, obj, old runtime.Object, opts writeOptions) (mutated bool, err error) {
	a, err := s.writeAttributes(ctx, res, mainResource, obj, old, opts)
	if err != nil {
		return false, err
	}
	err = s.runAdmission(ctx, a, func(p admission.Plugin, ctx context.Context, a *admission.Attributes, o admission.Objects) admission.Result {
		m, ok := p.(admission.Mutator)
		if !ok {
			return admission.Result{}
		}
		mutated = true
		return m.Admit(ctx, a, o)
	})
	if err == nil && mutated && res.Prune != nil {
		// What a webhook or policy added that the custom resource's
		// schema does not know is dropped, as kube-apiserver prunes the
		// object it decodes back from the mutating phase.
		res.Prune(obj)
	}
	return mutated, err
}

// deleteAdmission runs the validating admission of the plugins that see
// deletes on the deletion of obj, as stored, before it is marked or
// removed.
func (s *Server) deleteAdmission(ctx context.Context, res *registry.Resource, obj runtime.Object, dryRun bool) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	a := s.attributes(ctx, res, mainResource, admission.Delete, m.GetNamespace(), m.GetName())
	a.OldObject, a.DryRun = obj, dryRun
	return s.runAdmission(ctx, a, admission.Plugin.Validate)
}

// connectAdmission runs the validating admission of the plugins that
// see connects on a connect to sub of ns/name (a pod's exec or attach)
// with its options.
func (s *Server) connectAdmission(ctx context.Context, res *registry.Resource, sub subresource, ns, name string, options runtime.Object, kind schema.GroupVersionKind) error {
	a := s.attributes(ctx, res, sub, admission.Connect, ns, name)
	a.Object, a.Kind = options, kind
	return s.runAdmission(ctx, a, admission.Plugin.Validate)
}

// writeAttributes describe a create (old nil) or an update.
func (s *Server) writeAttributes(ctx context.Context, res *registry.Resource, sub subresource, obj, old runtime.Object, opts writeOptions) (*admission.Attributes, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	op := admission.Update
	if old == nil {
		op = admission.Create
	}
	a := s.attributes(ctx, res, sub, op, m.GetNamespace(), m.GetName())
	a.Object, a.OldObject, a.DryRun = obj, old, opts.dryRun
	return a, nil
}

// attributes are what every operation's attributes say: the resource,
// the object's name and the user.
func (s *Server) attributes(ctx context.Context, res *registry.Resource, sub subresource, op admission.Operation, ns, name string) *admission.Attributes {
	a := &admission.Attributes{
		Resource: res.GroupVersionResource, Kind: res.GroupVersionKind(), Subresource: string(sub),
		Operation: op, Namespace: ns, Name: name, Default: res.ApplyDefaults,
	}
	if u, ok := authn.UserFrom(ctx); ok {
		a.UserName, a.UserUID, a.UserGroups = u.Name, u.UID, u.Groups
	}
	return a
}

// runAdmission calls phase for every plugin that sees the operation,
// recording their audit annotations and warnings, until one refuses it.
func (s *Server) runAdmission(ctx context.Context, a *admission.Attributes,
	phase func(admission.Plugin, context.Context, *admission.Attributes, admission.Objects) admission.Result) error {
	for _, p := range s.cfg.Admission {
		if !admission.Handles(p, a.Operation) {
			continue
		}
		r := phase(p, ctx, a, storedObjects{s})
		for k, v := range r.AuditAnnotations {
			audit.Annotate(ctx, k, v)
		}
		for _, w := range r.Warnings {
			addWarning(ctx, w)
		}
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

// giveServiceResolver hands the plugins that call Services the
// server's way of reaching them (webhooks).
func (s *Server) giveServiceResolver() {
	for _, p := range s.cfg.Admission {
		if w, ok := p.(admission.WantsServiceResolver); ok {
			w.SetServiceResolver(serviceResolver{s})
		}
	}
}

// serviceResolver reaches a Service as the services/proxy subresource
// does: at one of its ready endpoints, over https.
type serviceResolver struct{ s *Server }

func (r serviceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	res, ok := r.s.table.Lookup(corev1.SchemeGroupVersion.WithResource("services"))
	if !ok {
		return nil, fmt.Errorf("services are not served")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	loc, err := r.s.serviceLocation(ctx, res, namespace, name, strconv.Itoa(int(port)))
	if err != nil {
		return nil, err
	}
	loc.Scheme = "https"
	return loc, nil
}

// Default applies the defaults of gvr's kind to obj (admission.Defaulter).
func (o storedObjects) Default(gvr schema.GroupVersionResource, obj runtime.Object) {
	if res, ok := o.s.table.Lookup(gvr); ok {
		res.ApplyDefaults(obj)
	}
}

// storedObjects reads objects for admission plugins.
type storedObjects struct{ s *Server }

func (o storedObjects) Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	res, ok := o.s.table.Lookup(gvr)
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	obj, _, err := o.s.get(ctx, res, namespace, name)
	return obj, err
}

func (o storedObjects) List(ctx context.Context, gvr schema.GroupVersionResource, namespace string) ([]runtime.Object, error) {
	res, ok := o.s.table.Lookup(gvr)
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), "")
	}
	lr, err := o.s.list(ctx, res, namespace, &metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return lr.items, nil
}

// ResourceFor resolves a kind to its served resource (admission.KindResolver).
func (o storedObjects) ResourceFor(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, bool) {
	res, ok := o.s.table.ForKind(gvk)
	if !ok {
		return schema.GroupVersionResource{}, false, false
	}
	return res.GroupVersionResource, res.Namespaced, true
}

// FieldTypes is the schema server-side apply merges gvk's objects with
// (admission.FieldTypesResolver).
func (o storedObjects) FieldTypes(gvk schema.GroupVersionKind) (managedfields.TypeConverter, error) {
	res, ok := o.s.table.ForKind(gvk)
	if !ok {
		return nil, fmt.Errorf("no resource serves %v", gvk)
	}
	fieldTypes := o.s.fieldTypes
	if res.FieldTypes != nil {
		fieldTypes = res.FieldTypes
	}
	return fieldTypes()
}

// UpdateStatus writes obj's status on the condition of its
// resourceVersion (admission.StatusWriter).
func (o storedObjects) UpdateStatus(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	res, ok := o.s.table.Lookup(gvr)
	m, err := meta.Accessor(obj)
	if !ok || err != nil || !res.Status {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("no status to write for %s", gvr))
	}
	if m.GetResourceVersion() == "" {
		return nil, apierrors.NewBadRequest("a status written by admission needs a resourceVersion")
	}
	return o.s.update(ctx, res, m.GetNamespace(), m.GetName(), statusResource,
		func(runtime.Object) (runtime.Object, error) { return obj.DeepCopyObject(), nil }, writeOptions{})
}

// Warnings of a request that are not the decoder's: the handlers put a
// recorder in the request's context, and whatever runs for the request
// (admission) adds Warning headers to its response through it, each
// message once, as Kubernetes' warning recorder. Warnings added after
// the response's headers went out are lost.

type warningsKey struct{}

type warningRecorder struct {
	mu     sync.Mutex
	header http.Header
	seen   map[string]bool
}

// withWarnings returns ctx with a recorder that adds warnings to w's headers.
func withWarnings(ctx context.Context, w http.ResponseWriter) context.Context {
	return context.WithValue(ctx, warningsKey{}, &warningRecorder{header: w.Header(), seen: map[string]bool{}})
}

// addWarning adds a Warning header to the response of ctx's request;
// nothing for in-process calls.
func addWarning(ctx context.Context, msg string) {
	rec, ok := ctx.Value(warningsKey{}).(*warningRecorder)
	if !ok || msg == "" {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.seen[msg] {
		return
	}
	rec.seen[msg] = true
	rec.header.Add("Warning", warningHeader(msg))
}

// warningHeader is the value of a Warning header: code 299, no agent, the
// quoted message, as kube-apiserver writes it and client-go parses it.
func warningHeader(msg string) string { return "299 - " + strconv.Quote(msg) }
