package webhook

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
)

// MatchConditionErrors compiles a webhook's matchConditions as new
// expressions and returns those that do not compile, at their
// expression, with CEL's error: what Kubernetes refuses a webhook
// configuration for (422, "compilation failed").
func MatchConditionErrors(conds []admissionregistrationv1.MatchCondition, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	var compiler plugincel.Compiler
	for i := range conds {
		if conds[i].Expression == "" {
			continue
		}
		if compiler == nil {
			compiler = plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
		}
		r := compiler.CompileCELExpression((*matchconditions.MatchCondition)(&conds[i]),
			plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.NewExpressions)
		if r.Error != nil {
			errs = append(errs, field.Invalid(path.Index(i).Child("expression"), conds[i].Expression, "compilation failed: "+r.Error.Error()))
		}
	}
	return errs
}
