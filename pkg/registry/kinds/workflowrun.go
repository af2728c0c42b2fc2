package kinds

import (
	"bytes"
	"encoding/json"
	"reflect"
	"time"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// WorkflowRuns (minik8s.io/v1) are executions of a Workflow, or of a
// state machine given inline, with an input. The spec never changes; the
// workflow engine records the execution in the status, through /status.
// This file is the whole of the kind's server side.
func workflowRuns() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: wfmeta.WorkflowRunResource, Kind: "WorkflowRun",
		Namespaced: true, ShortNames: []string{"wfr"}, Status: true,
		NameRule:       apivalidation.NameIsDNSSubdomain,
		Validate:       validator(validateWorkflowRun),
		ValidateUpdate: updateValidator(validateWorkflowRunUpdate),
		Printer:        workflowRunPrinter,
		// The engine and kubectl find a workflow's runs, or the runs
		// still going, with --field-selector.
		FieldLabels: func(obj runtime.Object) fields.Set {
			r := obj.(*minik8sv1.WorkflowRun)
			return fields.Set{"spec.workflow": r.Spec.Workflow, "status.phase": r.Status.Phase}
		},
	}
}

var workflowRunPhases = []string{
	minik8sv1.WorkflowRunPending, minik8sv1.WorkflowRunRunning, minik8sv1.WorkflowRunSucceeded,
	minik8sv1.WorkflowRunFailed, minik8sv1.WorkflowRunTimedOut, minik8sv1.WorkflowRunAborted,
}

// validateWorkflowRun: exactly one of a Workflow's name and an inline
// definition, parsed as a Workflow's; the input is any JSON value.
func validateWorkflowRun(r *minik8sv1.WorkflowRun) field.ErrorList {
	spec := field.NewPath("spec")
	s := &r.Spec
	var allErrs field.ErrorList
	hasDef := s.Definition != nil && len(s.Definition.Raw) > 0
	switch {
	case s.Workflow == "" && !hasDef:
		allErrs = append(allErrs, field.Required(spec, "one of workflow and definition is required"))
	case s.Workflow != "" && hasDef:
		allErrs = append(allErrs, field.Forbidden(spec.Child("definition"), "may not be set together with workflow"))
	}
	if s.Workflow != "" {
		for _, msg := range utilvalidation.IsDNS1035Label(s.Workflow) {
			allErrs = append(allErrs, field.Invalid(spec.Child("workflow"), s.Workflow, msg))
		}
	}
	if hasDef {
		allErrs = append(allErrs, validateDefinition(s.Definition, spec.Child("definition"))...)
	}
	return append(allErrs, validateWorkflowRunStatus(&r.Status, field.NewPath("status"))...)
}

func validateWorkflowRunStatus(st *minik8sv1.WorkflowRunStatus, fldPath *field.Path) field.ErrorList {
	allErrs := validation.OptionalEnum(st.Phase, workflowRunPhases, fldPath.Child("phase"))
	allErrs = append(allErrs, validation.Nonnegative(int64(st.Attempt), fldPath.Child("attempt"))...)
	allErrs = append(allErrs, validation.Nonnegative(st.Transitions, fldPath.Child("transitions"))...)
	if st.StartTime != nil && st.CompletionTime != nil && st.CompletionTime.Before(st.StartTime) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("completionTime"), st.CompletionTime.String(), "must not be before startTime"))
	}
	return allErrs
}

// validateWorkflowRunUpdate: the spec is what the run was started with,
// and stays so; the engine writes the status through /status. JSON values
// are compared as values, so that a client re-sending the input with its
// keys in another order changes nothing.
func validateWorkflowRunUpdate(r, old *minik8sv1.WorkflowRun) field.ErrorList {
	s, o := &r.Spec, &old.Spec
	if s.Workflow != o.Workflow || !jsonEqual(s.Definition, o.Definition) || !jsonEqual(s.Input, o.Input) {
		return field.ErrorList{field.Forbidden(field.NewPath("spec"), validation.FieldImmutableMsg)}
	}
	return nil
}

// jsonEqual reports whether a and b hold the same JSON value (unset and
// null alike).
func jsonEqual(a, b *minik8sv1.JSON) bool {
	ab, bb := a.Bytes(), b.Bytes()
	if bytes.Equal(ab, bb) {
		return true
	}
	var av, bv any
	if json.Unmarshal(ab, &av) != nil || json.Unmarshal(bb, &bv) != nil {
		return false
	}
	return reflect.DeepEqual(av, bv)
}

// The table: NAME WORKFLOW STATUS STATE DURATION AGE, wide ERROR.
var workflowRunPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("Workflow", "string", "The Workflow run, or <inline> for a definition given in the run."),
		printers.Column("Status", "string", minik8sv1.WorkflowRunStatus{}.SwaggerDoc()["phase"]),
		printers.Column("State", "string", minik8sv1.WorkflowRunStatus{}.SwaggerDoc()["currentState"]),
		printers.Column("Duration", "string", "Time the execution took, or has taken so far."),
		printers.AgeColumn(),
		printers.Wide(printers.Column("Error", "string", minik8sv1.WorkflowRunStatus{}.SwaggerDoc()["error"])),
	},
	func(r *minik8sv1.WorkflowRun, now time.Time) []interface{} {
		return []interface{}{r.Name, printers.OrDefault(r.Spec.Workflow, "<inline>"), r.Status.Phase, r.Status.CurrentState,
			runDuration(r.Status.StartTime, r.Status.CompletionTime, now), printers.Age(r.CreationTimestamp, now), r.Status.Error}
	},
)

// runDuration is the run time so far, or start to completion; empty
// before start (as a Job's DURATION).
func runDuration(start, completion *metav1.Time, now time.Time) string {
	switch {
	case start == nil:
		return ""
	case completion == nil:
		return duration.HumanDuration(now.Sub(start.Time))
	default:
		return duration.HumanDuration(completion.Sub(start.Time))
	}
}
