// Package webhook is Kubernetes' dynamic admission: the
// MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins call
// the webhooks of the stored MutatingWebhookConfigurations and
// ValidatingWebhookConfigurations (admissionregistration.k8s.io/v1)
// whose rules, namespaceSelector, objectSelector and matchConditions
// select a write, with an admission.k8s.io AdmissionReview POSTed over
// TLS to the webhook's url or Service, trusting its caBundle.
//
// What a webhook answers is read by k8s.io/apiserver's webhook
// libraries (the review's request and response, client config and TLS,
// matchConditions in CEL, rejection messages); this package decides
// which webhooks are called, in which order, and what their answers do
// to the write: a mutating webhook's JSONPatch is applied to the object
// in the mutating phase, before validation, with the kind's defaults
// applied again, and webhooks whose reinvocationPolicy is IfNeeded are
// called once more when a later webhook changed the object; a refusal
// ends the write with `admission webhook "name" denied the request:
// ...`; warnings go to the client; a webhook that cannot be called, or
// is too slow for its timeoutSeconds, refuses the write when its
// failurePolicy is Fail and is skipped when it is Ignore. Writes of the
// admission configuration objects themselves are never sent to
// webhooks, as in Kubernetes.
package webhook

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"sync"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	k8swebhook "k8s.io/apiserver/pkg/admission/plugin/webhook"
	webhookerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	webhookrequest "k8s.io/apiserver/pkg/admission/plugin/webhook/request"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"

	"github.com/minik8s/minik8s/pkg/admission"
	"github.com/minik8s/minik8s/pkg/admission/matching"
)

var (
	validatingGVR = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations")
	mutatingGVR   = admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations")
)

// conditionCompiler compiles matchConditions with Kubernetes' CEL
// environment, built once.
var conditionCompiler = sync.OnceValue(func() plugincel.ConditionCompiler {
	return plugincel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
})

// Plugin is one of the two webhook admission plugins.
type Plugin struct {
	mutating bool
	clients  *webhookutil.ClientManager
	log      *slog.Logger

	mu sync.Mutex
	// configs holds each configuration's webhooks by configuration
	// name, with the resourceVersion they were read from: their REST
	// clients and compiled matchConditions are kept until it changes.
	configs map[string]configHooks
}

type configHooks struct {
	resourceVersion string
	hooks           []k8swebhook.WebhookAccessor
}

var (
	_ admission.Mutator              = (*Plugin)(nil)
	_ admission.OperationFilter      = (*Plugin)(nil)
	_ admission.WantsServiceResolver = (*Plugin)(nil)
)

// NewValidating returns the ValidatingAdmissionWebhook plugin.
func NewValidating() *Plugin { return newPlugin(false) }

// NewMutating returns the MutatingAdmissionWebhook plugin.
func NewMutating() *Plugin { return newPlugin(true) }

func newPlugin(mutating bool) *Plugin {
	cm, err := webhookutil.NewClientManager(
		[]schema.GroupVersion{admissionv1beta1.SchemeGroupVersion, admissionv1.SchemeGroupVersion},
		admissionv1beta1.AddToScheme, admissionv1.AddToScheme)
	if err != nil {
		panic(fmt.Sprintf("webhook client manager: %v", err)) // only a broken scheme fails
	}
	auth, err := webhookutil.NewDefaultAuthenticationInfoResolver("")
	if err != nil {
		panic(fmt.Sprintf("webhook authentication: %v", err)) // no kubeconfig file: cannot fail
	}
	cm.SetAuthenticationInfoResolver(auth)
	cm.SetServiceResolver(webhookutil.NewDefaultServiceResolver())
	return &Plugin{mutating: mutating, clients: &cm, log: slog.Default(), configs: map[string]configHooks{}}
}

// Name is the plugin's name in kube-apiserver.
func (p *Plugin) Name() string {
	if p.mutating {
		return "MutatingAdmissionWebhook"
	}
	return "ValidatingAdmissionWebhook"
}

// Handles says the webhooks see every operation: CREATE, UPDATE,
// DELETE and CONNECT.
func (p *Plugin) Handles(admission.Operation) bool { return true }

// SetServiceResolver makes webhooks named by a Service reach it where r says.
func (p *Plugin) SetServiceResolver(r admission.ServiceResolver) { p.clients.SetServiceResolver(r) }

// Admit calls the mutating webhooks on a create or update of a
// resource, and applies their patches to a.Object.
func (p *Plugin) Admit(ctx context.Context, a *admission.Attributes, objects admission.Objects) admission.Result {
	if !p.mutating {
		return admission.Result{}
	}
	return p.dispatch(ctx, a, objects)
}

// Validate calls the validating webhooks; for the mutating plugin, the
// mutating webhooks on what has no mutating phase (deletes, connects),
// where a patch is an error, as in Kubernetes.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes, objects admission.Objects) admission.Result {
	if p.mutating && a.Operation != admission.Delete && a.Operation != admission.Connect {
		return admission.Result{}
	}
	return p.dispatch(ctx, a, objects)
}

// webhooks lists the webhooks of the stored configurations, sorted by
// configuration name and in their order within it, as Kubernetes calls
// them.
func (p *Plugin) webhooks(ctx context.Context, objects admission.Objects) ([]k8swebhook.WebhookAccessor, error) {
	gvr := validatingGVR
	if p.mutating {
		gvr = mutatingGVR
	}
	list, err := objects.List(ctx, gvr, "")
	if err != nil {
		return nil, err
	}
	type config struct {
		name, resourceVersion string
		build                 func() []k8swebhook.WebhookAccessor
	}
	var configs []config
	for _, o := range list {
		switch c := o.(type) {
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			configs = append(configs, config{c.Name, c.ResourceVersion, func() []k8swebhook.WebhookAccessor {
				var hooks []k8swebhook.WebhookAccessor
				for i := range c.Webhooks {
					hooks = append(hooks, k8swebhook.NewValidatingWebhookAccessor(hookUID(c.Name, c.Webhooks[i].Name, i), c.Name, &c.Webhooks[i]))
				}
				return hooks
			}})
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			configs = append(configs, config{c.Name, c.ResourceVersion, func() []k8swebhook.WebhookAccessor {
				var hooks []k8swebhook.WebhookAccessor
				for i := range c.Webhooks {
					hooks = append(hooks, k8swebhook.NewMutatingWebhookAccessor(hookUID(c.Name, c.Webhooks[i].Name, i), c.Name, &c.Webhooks[i]))
				}
				return hooks
			}})
		}
	}
	sort.Slice(configs, func(i, j int) bool { return configs[i].name < configs[j].name })
	p.mu.Lock()
	defer p.mu.Unlock()
	live := map[string]bool{}
	var hooks []k8swebhook.WebhookAccessor
	for _, c := range configs {
		live[c.name] = true
		cached, ok := p.configs[c.name]
		if !ok || cached.resourceVersion != c.resourceVersion || c.resourceVersion == "" {
			cached = configHooks{c.resourceVersion, c.build()}
			p.configs[c.name] = cached
		}
		hooks = append(hooks, cached.hooks...)
	}
	for name := range p.configs {
		if !live[name] {
			delete(p.configs, name)
		}
	}
	return hooks, nil
}

func hookUID(config, hook string, i int) string { return fmt.Sprintf("%s/%s/%d", config, hook, i) }

// dispatch calls the webhooks that select the write, in order.
func (p *Plugin) dispatch(ctx context.Context, a *admission.Attributes, objects admission.Objects) admission.Result {
	versioned, err := admission.Versioned(a)
	if err != nil {
		return admission.Result{Err: apierrors.NewInternalError(err)}
	}
	if rules.IsExemptAdmissionConfigurationResource(versioned) {
		return admission.Result{}
	}
	hooks, err := p.webhooks(ctx, objects)
	if err != nil {
		return admission.Result{Err: apierrors.NewInternalError(fmt.Errorf("%s: %w", p.Name(), err))}
	}
	if len(hooks) == 0 {
		return admission.Result{}
	}
	req, err := matching.NewRequest(ctx, a, objects)
	if err != nil {
		return admission.Result{Err: err}
	}
	d := &dispatch{plugin: p, ctx: ctx, objects: objects, req: req, attrs: versioned,
		result: admission.Result{AuditAnnotations: map[string]string{}}}
	if az, ok := objects.(authorizer.UnconditionalAuthorizer); ok {
		d.authz = az
	}
	if p.mutating {
		d.mutate(hooks)
	} else {
		d.validate(hooks)
	}
	return d.result
}

// dispatch is the calling of webhooks on one write.
type dispatch struct {
	plugin  *Plugin
	ctx     context.Context
	objects admission.Objects
	req     matching.Request
	attrs   *k8sadmission.VersionedAttributes
	authz   authorizer.UnconditionalAuthorizer
	result  admission.Result
}

// selects says whether h is to be called: its selectors and rules (the
// request's resource as served), then its matchConditions. An error is
// a matchCondition that failed to evaluate under failurePolicy Fail.
func (d *dispatch) selects(h k8swebhook.WebhookAccessor) (*generic.WebhookInvocation, error) {
	m := &admissionregistrationv1.MatchResources{NamespaceSelector: h.GetNamespaceSelector(), ObjectSelector: h.GetObjectSelector()}
	for _, r := range h.GetRules() {
		m.ResourceRules = append(m.ResourceRules, admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: r})
	}
	if !d.req.Matches(m, false) {
		return nil, nil
	}
	if len(h.GetMatchConditions()) > 0 {
		r := h.GetCompiledMatcher(conditionCompiler()).Match(d.ctx, d.attrs, nil, d.authz)
		if r.Error != nil {
			return nil, apierrors.NewForbidden(d.req.Resource.GroupResource(), d.req.Name, r.Error)
		}
		if !r.Matches {
			return nil, nil
		}
	}
	return &generic.WebhookInvocation{Webhook: h, Resource: d.req.Resource, Subresource: d.req.Subresource, Kind: d.req.Kind}, nil
}

// validate calls each validating webhook that selects the write; the
// first refusal ends it.
func (d *dispatch) validate(hooks []k8swebhook.WebhookAccessor) {
	for _, h := range hooks {
		inv, err := d.selects(h)
		if err != nil {
			d.result.Err = err
			return
		}
		if inv == nil {
			continue
		}
		if _, err := d.call(inv); err != nil {
			d.result.Err = err
			return
		}
	}
}

// mutate calls each mutating webhook that selects the write and applies
// its patch, then once more those whose reinvocationPolicy is IfNeeded
// and that a later webhook's change has made stale, as Kubernetes does.
func (d *dispatch) mutate(hooks []k8swebhook.WebhookAccessor) {
	previously, reinvoke := map[string]bool{}, map[string]bool{}
	for round := 0; round < 2; round++ {
		for _, h := range hooks {
			if round == 1 && !reinvoke[h.GetUID()] {
				continue
			}
			inv, err := d.selects(h)
			if err != nil {
				d.result.Err = err
				return
			}
			if inv == nil {
				continue
			}
			changed, err := d.call(inv)
			if err != nil {
				d.result.Err = err
				return
			}
			if round == 1 {
				continue
			}
			if changed {
				for uid := range previously {
					reinvoke[uid] = true
				}
				previously = map[string]bool{}
			}
			if mh, _ := h.GetMutatingWebhook(); mh.ReinvocationPolicy != nil && *mh.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy {
				previously[h.GetUID()] = true
			}
		}
		if len(reinvoke) == 0 {
			return
		}
	}
}

// call calls the webhook of inv and applies its answer: warnings and
// audit annotations, its refusal, its patch (changed says whether the
// object changed). A call that fails is an error under failurePolicy
// Fail and nothing under Ignore.
func (d *dispatch) call(inv *generic.WebhookInvocation) (changed bool, err error) {
	h := inv.Webhook
	resp, err := d.request(inv)
	if callErr, ok := err.(*webhookutil.ErrCallingWebhook); ok {
		if fp := h.GetFailurePolicy(); fp != nil && *fp == admissionregistrationv1.Ignore {
			d.plugin.log.Warn("failed calling webhook, failing open", "webhook", h.GetName(), "err", callErr)
			return false, nil
		}
		d.plugin.log.Warn("failed calling webhook, failing closed", "webhook", h.GetName(), "err", callErr)
		return false, apierrors.NewInternalError(callErr)
	}
	if err != nil {
		return false, err
	}
	for k, v := range resp.AuditAnnotations {
		d.result.AuditAnnotations[h.GetName()+"/"+k] = v
	}
	d.result.Warnings = append(d.result.Warnings, resp.Warnings...)
	if !resp.Allowed {
		return false, webhookerrors.ToStatusErr(h.GetName(), resp.Result)
	}
	if !d.plugin.mutating || len(resp.Patch) == 0 {
		return false, nil
	}
	return d.patch(h.GetName(), resp)
}

// request POSTs the AdmissionReview of the write to the webhook of inv,
// within its timeoutSeconds, and returns its verified response.
func (d *dispatch) request(inv *generic.WebhookInvocation) (*webhookrequest.AdmissionResponse, error) {
	h := inv.Webhook
	name := h.GetName()
	if d.req.DryRun {
		se := h.GetSideEffects()
		if se == nil {
			return nil, &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: fmt.Errorf("Webhook SideEffects is nil"), Status: apierrors.NewBadRequest("Webhook SideEffects is nil")}
		}
		if *se != admissionregistrationv1.SideEffectClassNone && *se != admissionregistrationv1.SideEffectClassNoneOnDryRun {
			return nil, webhookerrors.NewDryRunUnsupportedErr(name)
		}
	}
	uid, request, response, err := webhookrequest.CreateAdmissionObjects(d.attrs, inv)
	if err != nil {
		return nil, &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: fmt.Errorf("could not create admission objects: %w", err), Status: apierrors.NewBadRequest("error creating admission objects")}
	}
	client, err := h.GetRESTClient(d.plugin.clients)
	if err != nil {
		return nil, &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: fmt.Errorf("could not get REST client: %w", err), Status: apierrors.NewInternalError(err)}
	}
	ctx := d.ctx
	if t := h.GetTimeoutSeconds(); t != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*t)*time.Second)
		defer cancel()
	}
	r := client.Post().Body(request)
	if deadline, ok := ctx.Deadline(); ok {
		// The webhook is told its timeout in whole seconds, rounded up.
		if timeout := time.Until(deadline); timeout > 0 {
			if whole := timeout.Truncate(time.Second); whole != timeout {
				timeout = whole + time.Second
			}
			r.Timeout(timeout)
		}
	}
	if err := r.Do(ctx).Into(response); err != nil {
		status, ok := err.(*apierrors.StatusError)
		if !ok {
			status = apierrors.NewServiceUnavailable("error calling webhook")
		}
		return nil, &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: fmt.Errorf("failed to call webhook: %w", err), Status: status}
	}
	result, err := webhookrequest.VerifyAdmissionResponse(uid, d.plugin.mutating, response)
	if err != nil {
		return nil, &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: fmt.Errorf("received invalid webhook response: %w", err), Status: apierrors.NewServiceUnavailable("error validating webhook response")}
	}
	return result, nil
}

// patch applies a webhook's JSONPatch to the object, in the webhook's
// (unstructured) form and then to the write's own object, whose kind's
// defaults are applied again.
func (d *dispatch) patch(name string, resp *webhookrequest.AdmissionResponse) (bool, error) {
	ops, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		return false, &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: fmt.Errorf("received undecodable patch in webhook response: %w", err), Status: apierrors.NewServiceUnavailable("error decoding patch in webhook response")}
	}
	if len(ops) == 0 {
		return false, nil
	}
	current, ok := d.attrs.VersionedObject.Object().(*unstructured.Unstructured)
	if !ok || d.req.Object == nil || d.req.Operation != admission.Create && d.req.Operation != admission.Update {
		return false, apierrors.NewInternalError(fmt.Errorf("admission webhook %q attempted to modify the object, which is not supported for this operation", name))
	}
	if resp.PatchType != admissionv1.PatchTypeJSONPatch {
		return false, &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: fmt.Errorf("unsupported patch type %q", resp.PatchType), Status: webhookerrors.ToStatusErr(name, resp.Result)}
	}
	js, err := current.MarshalJSON()
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	if js, err = ops.Apply(js); err != nil {
		return false, apierrors.NewInternalError(err)
	}
	patched := &unstructured.Unstructured{}
	if err := patched.UnmarshalJSON(js); err != nil {
		return false, apierrors.NewInternalError(err)
	}
	if err := setObject(d.req.Object, patched); err != nil {
		return false, apierrors.NewInternalError(fmt.Errorf("admission webhook %q: %w", name, err))
	}
	if def, ok := d.objects.(admission.Defaulter); ok {
		def.Default(d.req.Resource, d.req.Object)
	}
	next, err := admission.ToUnstructured(d.req.Object, d.req.Kind)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	changed := !apiequality.Semantic.DeepEqual(current, next)
	d.attrs.UpdateObject(next)
	return changed, nil
}

// setObject makes obj, in place, what u says: a custom resource's
// content, or a built-in object decoded from it (its apiVersion and
// kind kept as they were).
func setObject(obj runtime.Object, u *unstructured.Unstructured) error {
	if dst, ok := obj.(*unstructured.Unstructured); ok {
		gvk := dst.GroupVersionKind()
		dst.Object = u.Object
		dst.SetGroupVersionKind(gvk)
		return nil
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("cannot patch a %T", obj)
	}
	fresh := reflect.New(v.Elem().Type())
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, fresh.Interface()); err != nil {
		return err
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	v.Elem().Set(fresh.Elem())
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}
