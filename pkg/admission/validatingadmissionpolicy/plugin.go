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

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/minik8s/minik8s/pkg/admission"
	admissionpolicy "github.com/minik8s/minik8s/pkg/admission/policy"
)

var (
	policiesGVR   = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies")
	bindingsGVR   = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings")
	namespacesGVR = corev1.SchemeGroupVersion.WithResource("namespaces")
)

// ValidationFailureAnnotation is the audit annotation of failed
// validations whose binding says Audit.
const ValidationFailureAnnotation = "validation.policy.admission.k8s.io/validation_failure"

// Plugin is the ValidatingAdmissionPolicy admission plugin.
type Plugin struct {
	// compiled holds each policy's evaluator.
	compiled admissionpolicy.Cache[validating.Validator]
}

// New returns the plugin.
func New() *Plugin { return &Plugin{} }

// Name is the plugin's name in kube-apiserver.
func (*Plugin) Name() string { return "ValidatingAdmissionPolicy" }

// validatorFor returns p's evaluator, compiling it when p changed.
func (pl *Plugin) validatorFor(p *admissionregistrationv1.ValidatingAdmissionPolicy) validating.Validator {
	return pl.compiled.Get(p.Name, p.ResourceVersion, func() validating.Validator { return compile(p) })
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
	admissionpolicy.Keep(&pl.compiled, policies)
	if len(policies) == 0 {
		return admission.Result{}
	}
	req, err := admissionpolicy.NewRequest(ctx, a, objects)
	if err != nil {
		return admission.Result{Err: err}
	}
	e := &evaluation{plugin: pl, ctx: ctx, req: req, result: admission.Result{AuditAnnotations: map[string]string{}}}
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
	plugin   *Plugin
	ctx      context.Context
	req      *admissionpolicy.Request
	result   admission.Result
	denied   []denial
	failures []validationFailure
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

// evaluate runs policy p as binding b puts it in force, once per param.
func (e *evaluation) evaluate(p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	params, err := e.req.Params(p.Spec.ParamKind, b.Spec.ParamRef)
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
		r := v.Validate(e.ctx, e.req.Resource, e.req.Versioned, versionedParams, e.req.NamespaceObject, celconfig.RuntimeCELCostBudget, e.req.Authorizer())
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
	return admissionpolicy.List[*admissionregistrationv1.ValidatingAdmissionPolicy](ctx, objects, policiesGVR)
}

func listBindings(ctx context.Context, objects admission.Objects) ([]*admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	return admissionpolicy.List[*admissionregistrationv1.ValidatingAdmissionPolicyBinding](ctx, objects, bindingsGVR)
}
