// Package validatingadmissionpolicy is Kubernetes' ValidatingAdmissionPolicy
// admission: every create and update is checked against the
// ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1) whose
// matchConstraints select it, once for each of their
// ValidatingAdmissionPolicyBindings whose matchResources select it too,
// with the params the binding's paramRef names. A policy's CEL
// expressions (matchConditions, variables, validations with their
// messageExpressions, auditAnnotations) are compiled by Kubernetes' own
// CEL libraries (k8s.io/apiserver/pkg/admission/plugin/cel and
// policy/validating), once per resourceVersion of the policy, and
// evaluated over the unstructured form of the object, the old object,
// the request, the params and the namespace. A failed validation does
// what the binding's validationActions say: Deny refuses the write with
// the validation's reason (Invalid, 422, when it names none) and
// "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: ...";
// Warn adds a Warning header; Audit adds the
// validation.policy.admission.k8s.io/validation_failure audit
// annotation. The authorizer variable asks the apiserver's authorizer.
// Errors (evaluation, missing params) follow the policy's
// failurePolicy. Writes of admissionregistration.k8s.io objects are not
// checked, as in Kubernetes.
package validatingadmissionpolicy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	admissionauthorizer "k8s.io/apiserver/pkg/admission/plugin/authorizer"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/minik8s/minik8s/pkg/admission"
	"github.com/minik8s/minik8s/pkg/admission/matching"
)

var (
	policiesGVR = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies")
	bindingsGVR = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings")
)

// ValidationFailureAnnotation is the audit annotation of failed
// validations whose binding says Audit.
const ValidationFailureAnnotation = "validation.policy.admission.k8s.io/validation_failure"

// Plugin is the ValidatingAdmissionPolicy admission plugin.
type Plugin struct {
	mu sync.Mutex
	// compiled holds each policy's evaluator by name, with the
	// resourceVersion it was compiled from.
	compiled map[string]compiledPolicy
}

type compiledPolicy struct {
	resourceVersion string
	validator       validating.Validator
}

// New returns the plugin.
func New() *Plugin { return &Plugin{compiled: map[string]compiledPolicy{}} }

// Name is the plugin's name in kube-apiserver.
func (*Plugin) Name() string { return "ValidatingAdmissionPolicy" }

// validatorFor returns p's evaluator, compiling it when p changed, and
// forgets the policies not in live.
func (pl *Plugin) validatorFor(p *admissionregistrationv1.ValidatingAdmissionPolicy) validating.Validator {
	pl.mu.Lock()
	c, ok := pl.compiled[p.Name]
	pl.mu.Unlock()
	if ok && c.resourceVersion == p.ResourceVersion && p.ResourceVersion != "" {
		return c.validator
	}
	v := compile(p)
	pl.mu.Lock()
	pl.compiled[p.Name] = compiledPolicy{p.ResourceVersion, v}
	pl.mu.Unlock()
	return v
}

// forget drops the evaluators of policies that are gone.
func (pl *Plugin) forget(live map[string]bool) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	for name := range pl.compiled {
		if !live[name] {
			delete(pl.compiled, name)
		}
	}
}

// Validate checks the write against the policies bound to it.
func (pl *Plugin) Validate(ctx context.Context, a *admission.Attributes, objects admission.Objects) admission.Result {
	if a.Resource.Group == admissionregistrationv1.GroupName {
		return admission.Result{}
	}
	policies, err := listPolicies(ctx, objects)
	if err != nil {
		return admission.Result{Err: apierrors.NewInternalError(fmt.Errorf("ValidatingAdmissionPolicy: %w", err))}
	}
	live := map[string]bool{}
	for _, p := range policies {
		live[p.Name] = true
	}
	pl.forget(live)
	if len(policies) == 0 {
		return admission.Result{}
	}
	req, err := matching.NewRequest(ctx, a, objects)
	if err != nil {
		return admission.Result{Err: err}
	}
	e := &evaluation{plugin: pl, ctx: ctx, objects: objects, req: req, namespace: req.NamespaceObject, result: admission.Result{AuditAnnotations: map[string]string{}}}
	if err := e.prepare(); err != nil {
		return admission.Result{Err: err}
	}
	var matched []*admissionregistrationv1.ValidatingAdmissionPolicy
	for _, p := range policies {
		if e.req.Matches(p.Spec.MatchConstraints, false) {
			matched = append(matched, p)
		}
	}
	if len(matched) == 0 {
		return admission.Result{}
	}
	bindings, err := listBindings(ctx, objects)
	if err != nil {
		return admission.Result{Err: apierrors.NewInternalError(fmt.Errorf("ValidatingAdmissionPolicy: %w", err))}
	}
	for _, p := range matched {
		for _, b := range bindings {
			if b.Spec.PolicyName == p.Name && e.req.Matches(b.Spec.MatchResources, true) {
				e.evaluate(p, b)
			}
		}
	}
	return e.finish()
}

// evaluation is the check of one write.
type evaluation struct {
	plugin    *Plugin
	ctx       context.Context
	objects   admission.Objects
	req       matching.Request
	namespace *corev1.Namespace
	attrs     *k8sadmission.VersionedAttributes
	authz     authorizer.UnconditionalAuthorizer
	result    admission.Result
	denied    []denial
	failures  []validationFailure
}

// denial is a refusal of a policy through a binding.
type denial struct {
	policy, binding string
	validating.PolicyDecision
}

// validationFailure is one entry of ValidationFailureAnnotation.
type validationFailure struct {
	Message           string                                     `json:"message"`
	Policy            string                                     `json:"policy"`
	Binding           string                                     `json:"binding"`
	ExpressionIndex   int                                        `json:"expressionIndex"`
	ValidationActions []admissionregistrationv1.ValidationAction `json:"validationActions"`
}

// prepare builds the CEL inputs.
func (e *evaluation) prepare() error {
	attrs, err := admission.Versioned(e.req.Attributes)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	e.attrs = attrs
	return nil
}

// authorizer is what a policy's authorizer variable asks: the server's
// authorizer when objects offers it, each answer asked once per write.
func (e *evaluation) authorizer() authorizer.UnconditionalAuthorizer {
	if e.authz == nil {
		az, ok := e.objects.(authorizer.UnconditionalAuthorizer)
		if !ok {
			return nil
		}
		e.authz = admissionauthorizer.NewCachingAuthorizer(az)
	}
	return e.authz
}

// evaluate runs policy p as binding b puts it in force, once per param.
func (e *evaluation) evaluate(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	params, err := e.params(p, b)
	if err != nil {
		e.configError(p, b, err)
		return
	}
	v := e.plugin.validatorFor(p)
	for _, param := range params {
		var versionedParams runtime.Object
		if param != nil {
			versionedParams = param
		}
		r := v.Validate(e.ctx, e.req.Resource, e.attrs, versionedParams, e.namespace, celconfig.RuntimeCELCostBudget, e.authorizer())
		for i, d := range r.Decisions {
			if d.Action != validating.ActionDeny {
				continue
			}
			for _, action := range b.Spec.ValidationActions {
				switch action {
				case admissionregistrationv1.Deny:
					e.denied = append(e.denied, denial{p.Name, b.Name, d})
				case admissionregistrationv1.Warn:
					e.result.Warnings = append(e.result.Warnings,
						fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", p.Name, b.Name, d.Message))
				case admissionregistrationv1.Audit:
					e.failures = append(e.failures, validationFailure{Message: d.Message, Policy: p.Name, Binding: b.Name,
						ExpressionIndex: i, ValidationActions: b.Spec.ValidationActions})
				}
			}
		}
		for _, an := range r.AuditAnnotations {
			switch an.Action {
			case validating.AuditAnnotationActionPublish:
				e.result.AuditAnnotations[p.Name+"/"+an.Key] = an.Value
			case validating.AuditAnnotationActionError:
				e.denied = append(e.denied, denial{p.Name, b.Name, validating.PolicyDecision{Action: validating.ActionDeny, Message: an.Error}})
			}
		}
	}
}

// configError applies p's failurePolicy to what kept it from being
// evaluated (a missing param).
func (e *evaluation) configError(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, err error) {
	if p.Spec.FailurePolicy != nil && *p.Spec.FailurePolicy == admissionregistrationv1.Ignore {
		return
	}
	e.denied = append(e.denied, denial{p.Name, b.Name, validating.PolicyDecision{Action: validating.ActionDeny,
		Message: "failed to configure binding: " + err.Error()}})
}

// finish turns the first denial into the refusal and records the
// audited failures.
func (e *evaluation) finish() admission.Result {
	if len(e.failures) > 0 {
		if data, err := json.Marshal(e.failures); err == nil {
			e.result.AuditAnnotations[ValidationFailureAnnotation] = string(data)
		}
	}
	if len(e.denied) == 0 {
		return e.result
	}
	d := e.denied[0]
	message := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", d.policy, d.binding, d.Message)
	err := apierrors.NewForbidden(e.req.Resource.GroupResource(), e.req.Name, errors.New(message))
	reason := d.Reason
	if reason == "" {
		reason = metav1.StatusReasonInvalid
	}
	err.ErrStatus.Reason = reason
	err.ErrStatus.Code = reasonCode(reason)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Message: message})
	e.result.Err = err
	return e.result
}

// reasonCode is the HTTP code of a validation's reason.
func reasonCode(r metav1.StatusReason) int32 {
	switch r {
	case metav1.StatusReasonUnauthorized:
		return 401
	case metav1.StatusReasonForbidden:
		return 403
	case metav1.StatusReasonRequestEntityTooLarge:
		return 413
	default:
		return 422
	}
}

func listPolicies(ctx context.Context, objects admission.Objects) ([]*admissionregistrationv1.ValidatingAdmissionPolicy, error) {
	return listSorted[*admissionregistrationv1.ValidatingAdmissionPolicy](ctx, objects, policiesGVR)
}

func listBindings(ctx context.Context, objects admission.Objects) ([]*admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	return listSorted[*admissionregistrationv1.ValidatingAdmissionPolicyBinding](ctx, objects, bindingsGVR)
}

// listSorted lists the objects of gvr, by name.
func listSorted[T interface {
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
