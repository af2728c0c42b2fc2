package kinds

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

func validWorkflowRun() *minik8sv1.WorkflowRun {
	return defaulted(&minik8sv1.WorkflowRun{ObjectMeta: nsMeta("hello-1"),
		Spec: minik8sv1.WorkflowRunSpec{Workflow: "hello", Input: minik8sv1.NewJSON([]byte(`{"name":"world","n":[1,2]}`))}})
}

func TestValidateWorkflowRun(t *testing.T) {
	inline := func(def string) func(*minik8sv1.WorkflowRun) {
		return func(r *minik8sv1.WorkflowRun) {
			r.Spec.Workflow, r.Spec.Definition = "", minik8sv1.NewJSON([]byte(def))
		}
	}
	input := func(in string) func(*minik8sv1.WorkflowRun) {
		return func(r *minik8sv1.WorkflowRun) { r.Spec.Input = minik8sv1.NewJSON([]byte(in)) }
	}
	for _, tc := range []struct {
		name   string
		mutate func(*minik8sv1.WorkflowRun)
		want   []string // "field: type"; empty when valid
	}{
		{name: "valid", mutate: func(*minik8sv1.WorkflowRun) {}},
		{name: "inline definition", mutate: inline(helloDefinition)},
		{name: "string input", mutate: input(`"hello"`)},
		{name: "list input", mutate: input(`[1,"two",{"three":3}]`)},
		{name: "number input", mutate: input(`42`)},
		{name: "no input", mutate: func(r *minik8sv1.WorkflowRun) { r.Spec.Input = nil }},
		{name: "dotted name", mutate: func(r *minik8sv1.WorkflowRun) { r.Name = "hello.run-1" }},
		{name: "bad name", mutate: func(r *minik8sv1.WorkflowRun) { r.Name = "Hello" }, want: []string{"metadata.name: Invalid value"}},
		{name: "neither workflow nor definition", mutate: func(r *minik8sv1.WorkflowRun) { r.Spec.Workflow = "" },
			want: []string{"spec: Required value"}},
		{name: "both workflow and definition", mutate: func(r *minik8sv1.WorkflowRun) { r.Spec.Definition = minik8sv1.NewJSON([]byte(helloDefinition)) },
			want: []string{"spec.definition: Forbidden"}},
		{name: "bad workflow name", mutate: func(r *minik8sv1.WorkflowRun) { r.Spec.Workflow = "hello.world" },
			want: []string{"spec.workflow: Invalid value"}},
		{name: "bad inline definition", mutate: inline(`{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B"}}}`),
			want: []string{"spec.definition.States[A].Next: Invalid value"}},
		{name: "phase", mutate: func(r *minik8sv1.WorkflowRun) { r.Status.Phase = minik8sv1.WorkflowRunTimedOut }},
		{name: "unknown phase", mutate: func(r *minik8sv1.WorkflowRun) { r.Status.Phase = "Done" },
			want: []string{"status.phase: Unsupported value"}},
		{name: "negative transitions", mutate: func(r *minik8sv1.WorkflowRun) { r.Status.Transitions = -1 },
			want: []string{"status.transitions: Invalid value"}},
		{name: "completed before start", mutate: func(r *minik8sv1.WorkflowRun) {
			r.Status.StartTime, r.Status.CompletionTime = &created, &metav1.Time{Time: created.Add(-time.Second)}
		}, want: []string{"status.completionTime: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mutate(validWorkflowRun(), tc.mutate)
			checkExactErrors(t, validate(r, true), tc.want)
		})
	}
}

// TestValidateWorkflowRunUpdate: the spec never changes; status, labels
// and the same input with its keys in another order may.
func TestValidateWorkflowRunUpdate(t *testing.T) {
	old := stored(validWorkflowRun())
	immutable := []string{"spec: Forbidden"}
	for _, tc := range []struct {
		name   string
		mutate func(*minik8sv1.WorkflowRun)
		want   []string
	}{
		{name: "no change", mutate: func(*minik8sv1.WorkflowRun) {}},
		{name: "status", mutate: func(r *minik8sv1.WorkflowRun) {
			r.Status = minik8sv1.WorkflowRunStatus{Phase: minik8sv1.WorkflowRunRunning, StartTime: &created, CurrentState: "Greet"}
		}},
		{name: "labels", mutate: func(r *minik8sv1.WorkflowRun) { r.Labels = map[string]string{"minik8s.io/workflow": "hello"} }},
		{name: "input keys reordered", mutate: func(r *minik8sv1.WorkflowRun) {
			r.Spec.Input = minik8sv1.NewJSON([]byte(`{"n":[1,2],"name":"world"}`))
		}},
		{name: "workflow", mutate: func(r *minik8sv1.WorkflowRun) { r.Spec.Workflow = "other" }, want: immutable},
		{name: "input", mutate: func(r *minik8sv1.WorkflowRun) { r.Spec.Input = minik8sv1.NewJSON([]byte(`{"name":"you"}`)) }, want: immutable},
		{name: "input removed", mutate: func(r *minik8sv1.WorkflowRun) { r.Spec.Input = nil }, want: immutable},
		{name: "definition instead of workflow", mutate: func(r *minik8sv1.WorkflowRun) {
			r.Spec.Workflow, r.Spec.Definition = "", minik8sv1.NewJSON([]byte(helloDefinition))
		}, want: immutable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkExactErrors(t, validateUpdate(mutate(old, tc.mutate), old, true), tc.want)
		})
	}
}

func TestWorkflowRunCells(t *testing.T) {
	gk := schema.GroupKind{Group: "minik8s.io", Kind: "WorkflowRun"}
	start := metav1.NewTime(now.Add(-5 * time.Minute))
	end := metav1.NewTime(now.Add(-3*time.Minute - 30*time.Second))
	run := func(workflow string, st minik8sv1.WorkflowRunStatus) *minik8sv1.WorkflowRun {
		r := &minik8sv1.WorkflowRun{ObjectMeta: objMeta("hello-1"), Spec: minik8sv1.WorkflowRunSpec{Workflow: workflow}, Status: st}
		if workflow == "" {
			r.Spec.Definition = minik8sv1.NewJSON([]byte(helloDefinition))
		}
		return r
	}
	runCellCases(t, []cellCase{
		{name: "pending", gk: gk, obj: run("hello", minik8sv1.WorkflowRunStatus{}),
			want: map[string]interface{}{"Name": "hello-1", "Workflow": "hello", "Status": "", "State": "", "Duration": "", "Age": "10m", "Error": ""}},
		{name: "running", gk: gk, obj: run("hello", minik8sv1.WorkflowRunStatus{Phase: "Running", StartTime: &start, CurrentState: "Greet"}),
			want: map[string]interface{}{"Status": "Running", "State": "Greet", "Duration": "5m"}},
		{name: "failed inline", gk: gk, obj: run("", minik8sv1.WorkflowRunStatus{Phase: "Failed", StartTime: &start, CompletionTime: &end,
			CurrentState: "Greet", Error: "States.TaskFailed"}),
			want: map[string]interface{}{"Workflow": "<inline>", "Status": "Failed", "Duration": "90s", "Error": "States.TaskFailed"}},
	})
}

func TestWorkflowRunFieldLabels(t *testing.T) {
	r := validWorkflowRun()
	r.Status.Phase = minik8sv1.WorkflowRunRunning
	f := resourceFor(r).Fields(r, r.Name, r.Namespace)
	if f["spec.workflow"] != "hello" || f["status.phase"] != "Running" {
		t.Errorf("fields %v", f)
	}
}
