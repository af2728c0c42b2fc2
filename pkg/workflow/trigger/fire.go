package trigger

import (
	"context"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/invoke"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// Annotations the trigger parts put on the WorkflowRuns they start.
const (
	// CountedAnnotation marks a finished run whose outcome is in its
	// Trigger's counters.
	CountedAnnotation = "minik8s.io/trigger-counted"
	// ScheduledAnnotation is the schedule time (RFC 3339) a run was started for.
	ScheduledAnnotation = "minik8s.io/trigger-scheduled-at"
)

// Headers of a function call a trigger makes.
const (
	// EventTypeHeader is the event type that fired an event trigger.
	EventTypeHeader = "X-Minik8s-Event-Type"
	// TriggerHeader is the trigger that made the call, <namespace>/<name>.
	TriggerHeader = "X-Minik8s-Trigger"
	// RunHeader names the WorkflowRun of a synchronous /workflow call.
	RunHeader = "X-Minik8s-Workflow-Run"
)

var triggerKind = minik8sv1.SchemeGroupVersion.WithKind("Trigger")

// newRun is the WorkflowRun a firing of tr starts with payload; a
// non-empty eventType or scheduled time is recorded in its annotations.
func newRun(tr *minik8sv1.Trigger, payload []byte, eventType string, scheduled *time.Time) *minik8sv1.WorkflowRun {
	run := &minik8sv1.WorkflowRun{
		TypeMeta: metav1.TypeMeta{APIVersion: minik8sv1.SchemeGroupVersion.String(), Kind: "WorkflowRun"},
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: tr.Spec.Target.Workflow + "-",
			Namespace:    tr.Namespace,
			Labels: map[string]string{
				wfmeta.WorkflowLabel: tr.Spec.Target.Workflow,
				wfmeta.TriggerLabel:  tr.Name,
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(tr, triggerKind)},
		},
		Spec: minik8sv1.WorkflowRunSpec{Workflow: tr.Spec.Target.Workflow, Input: minik8sv1.NewJSON(payload)},
	}
	if eventType != "" || scheduled != nil {
		run.Annotations = map[string]string{}
	}
	if eventType != "" {
		run.Annotations[wfmeta.EventTypeAnnotation] = eventType
	}
	if scheduled != nil {
		run.Annotations[ScheduledAnnotation] = scheduled.UTC().Format(time.RFC3339)
	}
	return run
}

// createRun creates run and returns it as created.
func createRun(ctx context.Context, dyn dynamic.Interface, run *minik8sv1.WorkflowRun) (*minik8sv1.WorkflowRun, error) {
	u, err := toUnstructured(run)
	if err != nil {
		return nil, err
	}
	created, err := dyn.Resource(wfmeta.WorkflowRunResource).Namespace(run.Namespace).Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create workflowrun of workflow %s/%s: %w", run.Namespace, run.Spec.Workflow, err)
	}
	return fromUnstructured[minik8sv1.WorkflowRun](created)
}

// runRef is the status.active entry of run.
func runRef(run *minik8sv1.WorkflowRun) corev1.ObjectReference {
	return corev1.ObjectReference{
		APIVersion: minik8sv1.SchemeGroupVersion.String(), Kind: "WorkflowRun",
		Namespace: run.Namespace, Name: run.Name, UID: run.UID, ResourceVersion: run.ResourceVersion,
	}
}

// runFired is the status change of a firing that started run.
func runFired(run *minik8sv1.WorkflowRun, now time.Time) *change {
	return &change{fired: &firing{at: now, run: run.Name, result: ResultRunning}, addActive: []corev1.ObjectReference{runRef(run)}}
}

// functionHeader is the header of a call tr makes for an event of eventType.
func functionHeader(tr *minik8sv1.Trigger, eventType string) http.Header {
	h := http.Header{}
	h.Set(TriggerHeader, tr.Namespace+"/"+tr.Name)
	if eventType != "" {
		h.Set(EventTypeHeader, eventType)
	}
	return h
}

// callResult says how a function call ended, as lastResult says it:
// Succeeded, or Failed (HTTP 500: ...), or Failed (<why no answer>).
func callResult(resp *invoke.Response, err error) (string, bool) {
	if err != nil {
		return "Failed (" + truncate(err.Error(), 200) + ")", false
	}
	if _, f := invoke.Outcome(resp); f != nil {
		return "Failed (" + truncate(f.Cause, 200) + ")", false
	}
	return ResultSucceeded, true
}

// callDone is the status change of a finished call of function name.
func callDone(name, result string, ok bool) *change {
	ch := &change{}
	ch.result(functionRun(name), result)
	if ok {
		ch.succeeded = 1
	} else {
		ch.failed = 1
	}
	return ch
}

// runResult is a finished run's lastResult.
func runResult(run *minik8sv1.WorkflowRun) string {
	if run.Status.Phase == minik8sv1.WorkflowRunSucceeded || run.Status.Error == "" {
		return run.Status.Phase
	}
	return run.Status.Phase + " (" + truncate(run.Status.Error, 200) + ")"
}
