package mutatingadmissionpolicy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"

	admissionpolicy "github.com/minik8s/minik8s/pkg/admission/policy"
)

// evaluator is a compiled policy: its matchConditions, and one patcher
// per mutation, in order. err, when set, is why it could not be built,
// which its failurePolicy decides on.
type evaluator struct {
	matcher  matchconditions.Matcher
	patchers []patch.Patcher
	compiler *plugincel.CompositedCompiler
	err      error
}

// declarations are the optional variables a policy's expressions see:
// params when it has a paramKind, the authorizer, and for mutations the
// Object and JSONPatch types, as in Kubernetes.
func declarations(p *admissionregistrationv1.MutatingAdmissionPolicy, patchTypes bool) plugincel.OptionalVariableDeclarations {
	return plugincel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: true, HasPatchTypes: patchTypes}
}

// compiler returns a compiler that knows p's variables, and the
// compilation result of each variable.
func compiler(p *admissionregistrationv1.MutatingAdmissionPolicy, mode environment.Type) (*plugincel.CompositedCompiler, []plugincel.CompilationResult, error) {
	c, err := plugincel.NewCompositedCompiler(admissionpolicy.BaseEnv())
	if err != nil {
		return nil, nil, err
	}
	results := make([]plugincel.CompilationResult, len(p.Spec.Variables))
	for i, v := range p.Spec.Variables {
		results[i] = c.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, declarations(p, false), mode)
	}
	return c, results, nil
}

// mutationAccessor is a mutation's expression as the compiler reads it;
// nil for a patchType it does not know.
func mutationAccessor(m admissionregistrationv1.Mutation) plugincel.ExpressionAccessor {
	switch {
	case m.PatchType == admissionregistrationv1.PatchTypeJSONPatch && m.JSONPatch != nil:
		return &patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}
	case m.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil:
		return &patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}
	}
	return nil
}

func matchAccessors(p *admissionregistrationv1.MutatingAdmissionPolicy) []plugincel.ExpressionAccessor {
	var out []plugincel.ExpressionAccessor
	for i := range p.Spec.MatchConditions {
		out = append(out, (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i]))
	}
	return out
}

// compile turns a stored policy into its evaluator. Expressions that do
// not compile (only possible for policies stored by another version)
// fail at evaluation, by the policy's failurePolicy.
func compile(p *admissionregistrationv1.MutatingAdmissionPolicy) *evaluator {
	mode := environment.StoredExpressions
	c, _, err := compiler(p, mode)
	if err != nil {
		return &evaluator{err: err}
	}
	e := &evaluator{compiler: c}
	if match := matchAccessors(p); len(match) > 0 {
		e.matcher = matchconditions.NewMatcher(c.CompileCondition(match, declarations(p, false), mode), p.Spec.FailurePolicy, "policy", "validate", p.Name)
	}
	for _, m := range p.Spec.Mutations {
		switch a := mutationAccessor(m).(type) {
		case *patch.JSONPatchCondition:
			e.patchers = append(e.patchers, patch.NewJSONPatcher(c.CompileMutatingEvaluator(a, declarations(p, true), mode)))
		case *patch.ApplyConfigurationCondition:
			e.patchers = append(e.patchers, patch.NewApplyConfigurationPatcher(c.CompileMutatingEvaluator(a, declarations(p, true), mode)))
		default:
			e.patchers = append(e.patchers, nil)
		}
	}
	return e
}

// CompileErrors compiles every expression of p as a new policy's and
// returns those that do not compile, at their fields, with CEL's error:
// what Kubernetes refuses a policy for (422).
func CompileErrors(p *admissionregistrationv1.MutatingAdmissionPolicy) field.ErrorList {
	c, vars, err := compiler(p, environment.NewExpressions)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	var errs field.ErrorList
	check := func(path *field.Path, expr string, r plugincel.CompilationResult) {
		if r.Error != nil {
			errs = append(errs, field.Invalid(path, expr, r.Error.Detail))
		}
	}
	spec := field.NewPath("spec")
	for i, v := range p.Spec.Variables {
		check(spec.Child("variables").Index(i).Child("expression"), v.Expression, vars[i])
	}
	for i, m := range p.Spec.Mutations {
		a := mutationAccessor(m)
		if a == nil || a.GetExpression() == "" {
			continue
		}
		path := spec.Child("mutations").Index(i).Child("applyConfiguration", "expression")
		if m.PatchType == admissionregistrationv1.PatchTypeJSONPatch {
			path = spec.Child("mutations").Index(i).Child("jsonPatch", "expression")
		}
		check(path, a.GetExpression(), c.CompileCELExpression(a, declarations(p, true), environment.NewExpressions))
	}
	match := matchAccessors(p)
	for i, m := range p.Spec.MatchConditions {
		if m.Expression != "" {
			check(spec.Child("matchConditions").Index(i).Child("expression"), m.Expression,
				c.CompileCELExpression(match[i], declarations(p, false), environment.NewExpressions))
		}
	}
	return errs
}
