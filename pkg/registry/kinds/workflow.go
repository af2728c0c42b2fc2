package kinds

import (
	"encoding/json"
	"time"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/registry/printers"
	"github.com/minik8s/minik8s/pkg/registry/validation"
	"github.com/minik8s/minik8s/pkg/workflow/asl"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// Workflows (minik8s.io/v1) are state machines in the Amazon States
// Language, run by the workflow engine (pkg/workflow/engine) as
// WorkflowRuns. The definition is parsed with pkg/workflow/asl when
// written, as the engine parses it, so that a stored Workflow always runs.
// This file is the whole of the kind's server side.
func workflows() *registry.Resource {
	return &registry.Resource{
		GroupVersionResource: wfmeta.WorkflowResource, Kind: "Workflow",
		Namespaced: true, ShortNames: []string{"wf"}, Categories: []string{"all"}, Status: true,
		NameRule: apivalidation.NameIsDNS1035Label,
		Validate: validator(validateWorkflow),
		Printer:  workflowPrinter,
	}
}

func validateWorkflow(wf *minik8sv1.Workflow) field.ErrorList {
	allErrs := validateDefinition(&wf.Spec.Definition, field.NewPath("spec", "definition"))
	st, stPath := &wf.Status, field.NewPath("status")
	allErrs = append(allErrs, validation.Nonnegative(st.ObservedGeneration, stPath.Child("observedGeneration"))...)
	return append(allErrs, metav1validation.ValidateConditions(st.Conditions, stPath.Child("conditions"))...)
}

// validateDefinition parses a state machine as the engine does; its
// errors name the field of the definition at fault
// (spec.definition.States[Name].Next).
func validateDefinition(def *minik8sv1.JSON, fldPath *field.Path) field.ErrorList {
	if def == nil || len(def.Raw) == 0 {
		return field.ErrorList{field.Required(fldPath, "a state machine (StartAt, States) is required")}
	}
	_, errs := asl.Parse(def.Raw, fldPath)
	return errs
}

// definitionOutline is what the table shows of a definition, read
// leniently: a printer never fails on what it cannot parse.
type definitionOutline struct {
	StartAt string                     `json:"StartAt"`
	States  map[string]json.RawMessage `json:"States"`
}

func outline(def *minik8sv1.JSON) definitionOutline {
	var o definitionOutline
	if def != nil && len(def.Raw) > 0 {
		_ = json.Unmarshal(def.Raw, &o)
	}
	return o
}

// readyCell is the Ready condition's status, with its reason when not
// True; Unknown without one.
func readyCell(conds []metav1.Condition) string {
	for _, c := range conds {
		if c.Type == "Ready" {
			ready := string(c.Status)
			if c.Status != metav1.ConditionTrue && c.Reason != "" {
				ready += " (" + c.Reason + ")"
			}
			return ready
		}
	}
	return "Unknown"
}

// maxWorkflowResources is how many resources the wide Resources cell spells out.
const maxWorkflowResources = 5

// The table: NAME STATES READY AGE, wide START-AT RESOURCES.
var workflowPrinter = printers.Typed(
	[]metav1.TableColumnDefinition{
		printers.NameColumn(),
		printers.Column("States", "integer", "The number of top-level states of the definition."),
		printers.Column("Ready", "string", "The Ready condition's status (and its reason when not True)."),
		printers.AgeColumn(),
		printers.Wide(printers.Column("Start-At", "string", "The definition's StartAt: the first state.")),
		printers.Wide(printers.Column("Resources", "string", minik8sv1.WorkflowStatus{}.SwaggerDoc()["resources"])),
	},
	func(wf *minik8sv1.Workflow, now time.Time) []interface{} {
		o := outline(&wf.Spec.Definition)
		return []interface{}{wf.Name, int64(len(o.States)), readyCell(wf.Status.Conditions), printers.Age(wf.CreationTimestamp, now),
			o.StartAt, printers.TruncatedList(wf.Status.Resources, maxWorkflowResources, ",")}
	},
)
