// Package mutatingadmissionpolicy is Kubernetes' MutatingAdmissionPolicy
// admission: every create and update is changed by the
// MutatingAdmissionPolicies (admissionregistration.k8s.io/v1) whose
// matchConstraints select it, once for each of their
// MutatingAdmissionPolicyBindings whose matchResources select it too,
// with each param the binding's paramRef names. Matching, params and the
// CEL inputs are those of the ValidatingAdmissionPolicy
// (pkg/admission/policy). A policy's matchConditions and variables are
// compiled by Kubernetes' CEL libraries, once per resourceVersion, and
// its mutations run in order by k8s.io/apiserver's patchers: an
// ApplyConfiguration's Object{...} is merged into the object with
// server-side apply's structured merge (the kind's schema as the
// apiserver's field manager has it), a JSONPatch's list of
// JSONPatch{op, path, value} is applied as RFC 6902. What a mutation
// returns is defaulted again, as the apiserver defaults a new object. When
// the policies changed the object, those whose reinvocationPolicy is
// IfNeeded run once more, as kube-apiserver reinvokes them. Errors
// (evaluation, a patch that does not apply, missing params) follow the
// policy's failurePolicy: Fail refuses the write with
// "policy 'p' with binding 'b' denied request: ...". Writes of
// admissionregistration.k8s.io objects are not mutated, as in Kubernetes.
package mutatingadmissionpolicy

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/minik8s/minik8s/pkg/admission"
	admissionpolicy "github.com/minik8s/minik8s/pkg/admission/policy"
)

var (
	policiesGVR = admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicies")
	bindingsGVR = admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicybindings")
)

// objectInterfaces are what the JSONPatch patcher encodes and decodes
// with: the objects it sees are unstructured, which need no scheme.
var objectInterfaces = k8sadmission.NewObjectInterfacesFromScheme(runtime.NewScheme())

// Plugin is the MutatingAdmissionPolicy admission plugin.
type Plugin struct {
	compiled admissionpolicy.Cache[*evaluator]
}

// New returns the plugin.
func New() *Plugin { return &Plugin{} }

// Name is the plugin's name in kube-apiserver.
func (*Plugin) Name() string { return "MutatingAdmissionPolicy" }

// Validate does nothing: the plugin only mutates.
func (*Plugin) Validate(context.Context, *admission.Attributes, admission.Objects) admission.Result {
	return admission.Result{}
}

func (pl *Plugin) evaluatorFor(p *admissionregistrationv1.MutatingAdmissionPolicy) *evaluator {
	return pl.compiled.Get(p.Name, p.ResourceVersion, func() *evaluator { return compile(p) })
}

// invocation is one policy applied through one binding with one param.
type invocation struct {
	policy  *admissionregistrationv1.MutatingAdmissionPolicy
	binding *admissionregistrationv1.MutatingAdmissionPolicyBinding
	param   runtime.Object
}

// Admit mutates the write by the policies bound to it.
func (pl *Plugin) Admit(ctx context.Context, a *admission.Attributes, objects admission.Objects) admission.Result {
	if a.Resource.Group == admissionregistrationv1.GroupName || a.Subresource != "" || a.Object == nil {
		return admission.Result{}
	}
	policies, err := admissionpolicy.List[*admissionregistrationv1.MutatingAdmissionPolicy](ctx, objects, policiesGVR)
	if err != nil {
		return admission.Result{Err: apierrors.NewInternalError(fmt.Errorf("MutatingAdmissionPolicy: %w", err))}
	}
	admissionpolicy.Keep(&pl.compiled, policies)
	if len(policies) == 0 {
		return admission.Result{}
	}
	req, err := admissionpolicy.NewRequest(ctx, a, objects)
	if err != nil {
		return admission.Result{Err: err}
	}
	var matched []*admissionregistrationv1.MutatingAdmissionPolicy
	for _, p := range policies {
		if req.Matches(p.Spec.MatchConstraints, false) {
			matched = append(matched, p)
		}
	}
	if len(matched) == 0 {
		return admission.Result{}
	}
	bindings, err := admissionpolicy.List[*admissionregistrationv1.MutatingAdmissionPolicyBinding](ctx, objects, bindingsGVR)
	if err != nil {
		return admission.Result{Err: apierrors.NewInternalError(fmt.Errorf("MutatingAdmissionPolicy: %w", err))}
	}
	m := &mutation{plugin: pl, req: req, objects: objects}
	var invocations []invocation
	for _, p := range matched {
		for _, b := range bindings {
			if b.Spec.PolicyName != p.Name || !req.Matches(b.Spec.MatchResources, true) {
				continue
			}
			params, err := req.Params(p.Spec.ParamKind, b.Spec.ParamRef)
			if err != nil {
				m.fail(p, b, fmt.Errorf("failed to configure binding: %w", err))
				continue
			}
			for _, param := range params {
				invocations = append(invocations, invocation{p, b, param})
			}
		}
	}
	if m.err != nil {
		return admission.Result{Err: m.err}
	}
	// The first round runs every invocation; when it changed the
	// object, the IfNeeded ones run once more, in order.
	var reinvoke []invocation
	for _, inv := range invocations {
		if m.invoke(inv); m.err != nil {
			return admission.Result{Err: m.err}
		}
		if inv.policy.Spec.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy {
			reinvoke = append(reinvoke, inv)
		}
	}
	if !m.changed {
		return admission.Result{}
	}
	for _, inv := range reinvoke {
		if m.invoke(inv); m.err != nil {
			return admission.Result{Err: m.err}
		}
	}
	if err := m.store(); err != nil {
		return admission.Result{Err: apierrors.NewInternalError(fmt.Errorf("MutatingAdmissionPolicy: %w", err))}
	}
	return admission.Result{}
}

// mutation is the mutating of one write.
type mutation struct {
	plugin  *Plugin
	req     *admissionpolicy.Request
	objects admission.Objects
	// changed says whether a policy changed the object; err is the
	// write's refusal.
	changed bool
	err     error
}

// invoke runs one invocation's matchConditions and mutations, in order,
// over the object as the previous ones left it.
func (m *mutation) invoke(inv invocation) {
	e := m.plugin.evaluatorFor(inv.policy)
	if e.err != nil {
		m.fail(inv.policy, inv.binding, e.err)
		return
	}
	ctx := m.req.Context()
	if e.compiler != nil {
		ctx = e.compiler.CreateContext(ctx)
	}
	versioned := m.req.Versioned
	authz := m.req.Authorizer()
	if e.matcher != nil {
		r := e.matcher.Match(ctx, versioned, inv.param, authz)
		if r.Error != nil {
			m.fail(inv.policy, inv.binding, r.Error)
			return
		}
		if !r.Matches {
			return
		}
	}
	for i, patcher := range e.patchers {
		if patcher == nil {
			m.fail(inv.policy, inv.binding, fmt.Errorf("mutation %d has an unsupported patchType %q", i, inv.policy.Spec.Mutations[i].PatchType))
			continue
		}
		var types managedfields.TypeConverter
		if r, ok := m.objects.(admission.FieldTypesResolver); ok {
			var err error
			if types, err = r.FieldTypes(m.req.Kind); err != nil {
				m.fail(inv.policy, inv.binding, err)
				continue
			}
		}
		before := versioned.VersionedObject.Object()
		out, err := patcher.Patch(ctx, patch.Request{
			MatchedResource:     m.req.Resource,
			VersionedAttributes: versioned,
			ObjectInterfaces:    objectInterfaces,
			OptionalVariables:   plugincel.OptionalVariableBindings{VersionedParams: inv.param, Authorizer: authz},
			Namespace:           m.req.NamespaceObject,
			TypeConverter:       types,
		}, celconfig.RuntimeCELCostBudget)
		if err == nil {
			out, err = m.defaulted(out)
		}
		if err != nil {
			var status *apierrors.StatusError
			if errors.As(err, &status) {
				m.err = status
				return
			}
			m.fail(inv.policy, inv.binding, err)
			continue
		}
		if !apiequality.Semantic.DeepEqual(before, out) {
			m.changed = true
		}
		versioned.UpdateObject(out)
	}
}

// defaulted is what a patcher returned with the kind's defaults filled
// in, unstructured, as the next mutation sees it.
func (m *mutation) defaulted(out runtime.Object) (runtime.Object, error) {
	u, ok := out.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("a patch made a %T", out)
	}
	u.SetGroupVersionKind(m.req.Kind)
	if m.req.Default == nil {
		return u, nil
	}
	obj, err := m.typed(u)
	if err != nil {
		return nil, err
	}
	m.req.Default(obj)
	return admission.ToUnstructured(obj, m.req.Kind)
}

// typed is u as an object of the write's Go type.
func (m *mutation) typed(u *unstructured.Unstructured) (runtime.Object, error) {
	if _, ok := m.req.Object.(*unstructured.Unstructured); ok {
		return u.DeepCopy(), nil
	}
	obj := reflect.New(reflect.TypeOf(m.req.Object).Elem()).Interface().(runtime.Object)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the mutated object is not a valid %s: %v", m.req.Kind.Kind, err))
	}
	return obj, nil
}

// store puts the mutated object in the write's place.
func (m *mutation) store() error {
	u, ok := m.req.Versioned.VersionedObject.Object().(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("the mutated object is a %T", m.req.Versioned.VersionedObject.Object())
	}
	obj, err := m.typed(u)
	if err != nil {
		return err
	}
	gvk := m.req.Object.GetObjectKind().GroupVersionKind()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	if target, ok := m.req.Object.(*unstructured.Unstructured); ok {
		target.Object = obj.(*unstructured.Unstructured).Object
		return nil
	}
	reflect.ValueOf(m.req.Object).Elem().Set(reflect.ValueOf(obj).Elem())
	return nil
}

// fail applies p's failurePolicy to an error of its evaluation: Fail
// refuses the write (the first such error), Ignore goes on.
func (m *mutation) fail(p *admissionregistrationv1.MutatingAdmissionPolicy, b *admissionregistrationv1.MutatingAdmissionPolicyBinding, cause error) {
	if p.Spec.FailurePolicy != nil && *p.Spec.FailurePolicy == admissionregistrationv1.Ignore || m.err != nil {
		return
	}
	message := fmt.Sprintf("policy '%s' with binding '%s' denied request: %s", p.Name, b.Name, cause.Error())
	err := apierrors.NewForbidden(m.req.Resource.GroupResource(), m.req.Name, errors.New(message))
	err.ErrStatus.Message = message
	err.ErrStatus.Reason = metav1.StatusReasonInvalid
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Message: message})
	m.err = err
}

var _ admission.Mutator = (*Plugin)(nil)
