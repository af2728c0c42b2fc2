package validatingadmissionpolicy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"

	admissionpolicy "github.com/minik8s/minik8s/pkg/admission/policy"
)

// declarations are the optional variables a policy's expressions see:
// params when it has a paramKind; authorizer for all but the
// messageExpressions, as in Kubernetes.
func declarations(p *admissionregistrationv1.ValidatingAdmissionPolicy, authorizer bool) plugincel.OptionalVariableDeclarations {
	return plugincel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: authorizer}
}

// expressions are a policy's CEL expressions by kind, as the evaluator
// reads them.
type expressions struct {
	validations, messages, audit, match []plugincel.ExpressionAccessor
}

func expressionsOf(p *admissionregistrationv1.ValidatingAdmissionPolicy) expressions {
	var e expressions
	for _, v := range p.Spec.Validations {
		e.validations = append(e.validations, &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason})
		// An empty messageExpression compiles to nothing and is skipped.
		e.messages = append(e.messages, &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression})
	}
	for _, a := range p.Spec.AuditAnnotations {
		e.audit = append(e.audit, &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression})
	}
	for i := range p.Spec.MatchConditions {
		e.match = append(e.match, (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i]))
	}
	return e
}

// compiler returns a compiler that knows p's variables, and the
// compilation result of each variable.
func compiler(p *admissionregistrationv1.ValidatingAdmissionPolicy, mode environment.Type) (*plugincel.CompositedCompiler, []plugincel.CompilationResult, error) {
	c, err := plugincel.NewCompositedCompiler(admissionpolicy.BaseEnv())
	if err != nil {
		return nil, nil, err
	}
	results := make([]plugincel.CompilationResult, len(p.Spec.Variables))
	for i, v := range p.Spec.Variables {
		results[i] = c.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, declarations(p, true), mode)
	}
	return c, results, nil
}

// compile turns a stored policy into its evaluator. Expressions that do
// not compile (only possible for policies stored by another version)
// make the evaluator fail by the policy's failurePolicy.
func compile(p *admissionregistrationv1.ValidatingAdmissionPolicy) validating.Validator {
	c, _, err := compiler(p, environment.StoredExpressions)
	if err != nil {
		return validating.NewValidator(nil, nil, nil, nil, p.Spec.FailurePolicy, err)
	}
	e := expressionsOf(p)
	mode := environment.StoredExpressions
	var matcher matchconditions.Matcher
	if len(e.match) > 0 {
		matcher = matchconditions.NewMatcher(c.CompileCondition(e.match, declarations(p, true), mode), p.Spec.FailurePolicy, "policy", "validate", p.Name)
	}
	return validating.NewValidator(
		c.CompileCondition(e.validations, declarations(p, true), mode),
		matcher,
		c.CompileCondition(e.audit, declarations(p, true), mode),
		c.CompileCondition(e.messages, declarations(p, false), mode),
		p.Spec.FailurePolicy, nil)
}

// CompileErrors compiles every expression of p as a new policy's and
// returns those that do not compile, at their fields, with CEL's error:
// what Kubernetes refuses a policy for (422).
func CompileErrors(p *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
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
	compileOne := func(a plugincel.ExpressionAccessor, authorizer bool) plugincel.CompilationResult {
		return c.CompileCELExpression(a, declarations(p, authorizer), environment.NewExpressions)
	}
	e := expressionsOf(p)
	for i, v := range p.Spec.Validations {
		path := spec.Child("validations").Index(i)
		if v.Expression != "" {
			check(path.Child("expression"), v.Expression, compileOne(e.validations[i], true))
		}
		if v.MessageExpression != "" {
			check(path.Child("messageExpression"), v.MessageExpression, compileOne(e.messages[i], false))
		}
	}
	for i, a := range p.Spec.AuditAnnotations {
		if a.ValueExpression != "" {
			check(spec.Child("auditAnnotations").Index(i).Child("valueExpression"), a.ValueExpression, compileOne(e.audit[i], true))
		}
	}
	for i, m := range p.Spec.MatchConditions {
		if m.Expression != "" {
			check(spec.Child("matchConditions").Index(i).Child("expression"), m.Expression, compileOne(e.match[i], true))
		}
	}
	return errs
}
