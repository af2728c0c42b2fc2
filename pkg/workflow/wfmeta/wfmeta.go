// Package wfmeta holds the names, labels and paths the workflow parts
// agree on: the engine (pkg/workflow/engine), the trigger controller
// (pkg/workflow/trigger), the gateway's HTTP entry points and the kubectl
// wf plugin. It owns no behaviour.
package wfmeta

import (
	"strings"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

// The resources of minik8s.io/v1 the workflow parts use.
var (
	WorkflowResource    = minik8sv1.SchemeGroupVersion.WithResource("workflows")
	WorkflowRunResource = minik8sv1.SchemeGroupVersion.WithResource("workflowruns")
	TriggerResource     = minik8sv1.SchemeGroupVersion.WithResource("triggers")
)

// Labels on WorkflowRuns.
const (
	// WorkflowLabel is the Workflow a run executes (absent for an inline definition).
	WorkflowLabel = "minik8s.io/workflow"
	// ParentLabel is the run whose Parallel, Map or workflow Task started this one.
	ParentLabel = "minik8s.io/parent-run"
	// TriggerLabel is the Trigger that started the run.
	TriggerLabel = "minik8s.io/trigger"
)

// Annotations on WorkflowRuns.
const (
	// ParentStateAnnotation is "<state>/<transition>/<index>": which state entry of the parent, and which branch or item.
	ParentStateAnnotation = "minik8s.io/parent-state"
	// EventTypeAnnotation is the event type (ADDED, MODIFIED, DELETED) that fired an event trigger.
	EventTypeAnnotation = "minik8s.io/trigger-event"
)

// Resource prefixes a Task's Resource may carry.
const (
	FunctionPrefix = "function:"
	WorkflowPrefix = "workflow:"
)

// SplitResource splits a Task's Resource into its kind ("function" or
// "workflow") and name; a bare name is a function.
func SplitResource(r string) (kind, name string) {
	if n, ok := strings.CutPrefix(r, WorkflowPrefix); ok {
		return "workflow", n
	}
	if n, ok := strings.CutPrefix(r, FunctionPrefix); ok {
		return "function", n
	}
	return "function", r
}

// Paths on the gateway (and the router, which serves them).
const (
	WorkflowPathPrefix = "/workflow/"
	TriggerPathPrefix  = "/trigger/"
)

// WorkflowPath is where a synchronous run of a workflow is started over HTTP.
func WorkflowPath(namespace, name string) string { return WorkflowPathPrefix + namespace + "/" + name }

// TriggerPath is where an HTTP trigger is posted to.
func TriggerPath(namespace, name string) string { return TriggerPathPrefix + namespace + "/" + name }

// Finished reports whether a run's phase is final.
func Finished(phase string) bool {
	switch phase {
	case minik8sv1.WorkflowRunSucceeded, minik8sv1.WorkflowRunFailed, minik8sv1.WorkflowRunTimedOut, minik8sv1.WorkflowRunAborted:
		return true
	}
	return false
}
