package integration

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// wfAPIWorkflowYAML is a Workflow as a user writes it: the state machine
// in YAML, inline.
const wfAPIWorkflowYAML = `apiVersion: minik8s.io/v1
kind: Workflow
metadata:
  name: hello
spec:
  definition:
    Comment: say hello
    StartAt: Greet
    States:
      Greet:
        Type: Task
        Resource: function:greet
        Parameters:
          who.$: $.name
          greeting: hello
        Next: Done
      Done:
        Type: Succeed
`

// wfAPIWorkflowModifiedYAML inserts a Pass state and changes nested fields.
const wfAPIWorkflowModifiedYAML = `apiVersion: minik8s.io/v1
kind: Workflow
metadata:
  name: hello
spec:
  definition:
    Comment: say hello twice
    StartAt: Prepare
    States:
      Prepare:
        Type: Pass
        Result:
          greeting: hi
        ResultPath: $.extra
        Next: Greet
      Greet:
        Type: Task
        Resource: function:greet
        Parameters:
          who.$: $.name
        Next: Done
      Done:
        Type: Succeed
`

const wfAPIBadWorkflowYAML = `apiVersion: minik8s.io/v1
kind: Workflow
metadata:
  name: lost
spec:
  definition:
    StartAt: Start
    States:
      Start:
        Type: Pass
        Next: Nowhere
`

// wfAPIRunYAML is a WorkflowRun of hello named name with the given input
// (YAML, indented under input:).
func wfAPIRunYAML(name, input string) string {
	return `apiVersion: minik8s.io/v1
kind: WorkflowRun
metadata:
  name: ` + name + `
spec:
  workflow: hello
  input:` + input + "\n"
}

const wfAPIBadTriggerYAML = `apiVersion: minik8s.io/v1
kind: Trigger
metadata:
  name: nightly
spec:
  target:
    workflow: hello
  schedule:
    schedule: "every night"
`

const wfAPITriggerYAML = `apiVersion: minik8s.io/v1
kind: Trigger
metadata:
  name: nightly
spec:
  target:
    workflow: hello
  payload:
    name: night
  schedule:
    schedule: "*/1 * * * *"
`

// TestWorkflowKindsKubectl is a user's session with the workflow kinds
// through kubectl: Workflows and WorkflowRuns whose definitions and
// inputs are any JSON written as YAML, the definition checked when
// written, a run's spec fixed, Triggers with their schedule checked.
func TestWorkflowKindsKubectl(t *testing.T) {
	c := startClusterWith(t, apiServerOnly)
	ctx := ctxT(t)
	k := newKubectl(t, c)
	dir := t.TempDir()
	dyn := dynamic.NewForConfigOrDie(c.config)
	runs := dyn.Resource(wfmeta.WorkflowRunResource).Namespace("default")

	// Discovery lists the three kinds with their short names.
	out := k.ok(t, "api-resources", "--api-group=minik8s.io")
	for _, want := range [][]string{
		{"workflows", "wf", "minik8s.io/v1", "true", "Workflow"},
		{"workflowruns", "wfr", "minik8s.io/v1", "true", "WorkflowRun"},
		{"triggers", "trg", "minik8s.io/v1", "true", "Trigger"},
	} {
		if !slices.ContainsFunc(outputLines(out), func(l string) bool { return slices.Equal(strings.Fields(l), want) }) {
			t.Fatalf("api-resources has no %v:\n%s", want, out)
		}
	}

	// A Workflow with its definition in YAML is created; the definition is
	// stored as the JSON object it is.
	file := writeTestFile(t, dir, "workflow.yaml", wfAPIWorkflowYAML)
	if out := k.ok(t, "apply", "-f", file); strings.TrimSpace(out) != "workflow.minik8s.io/hello created" {
		t.Fatalf("apply workflow: %q", out)
	}
	wf := wfAPIGetWorkflow(t, dyn, "hello")
	var def map[string]any
	if err := json.Unmarshal(wf.Spec.Definition.Raw, &def); err != nil || def["StartAt"] != "Greet" {
		t.Fatalf("stored definition %s: %v", wf.Spec.Definition.Raw, err)
	}
	if p := def["States"].(map[string]any)["Greet"].(map[string]any)["Parameters"]; !reflect.DeepEqual(p, map[string]any{"who.$": "$.name", "greeting": "hello"}) {
		t.Fatalf("stored Parameters %v", p)
	}
	out = k.ok(t, "get", "workflows")
	if h := tableHeader(out); !slices.Equal(h, []string{"NAME", "STATES", "READY", "AGE"}) {
		t.Fatalf("get workflows header %v:\n%s", h, out)
	}
	if row := strings.Fields(outputLines(out)[1]); row[0] != "hello" || row[1] != "2" || row[2] != "Unknown" {
		t.Fatalf("get workflows row %v:\n%s", row, out)
	}
	out = k.ok(t, "get", "wf", "-o", "wide")
	if h := tableHeader(out); !slices.Equal(h, []string{"NAME", "STATES", "READY", "AGE", "START-AT", "RESOURCES"}) {
		t.Fatalf("get wf -o wide header %v:\n%s", h, out)
	}
	if out := k.ok(t, "get", "all", "-o", "name"); !strings.Contains(out, "workflow.minik8s.io/hello") {
		t.Fatalf("get all has no workflow:\n%s", out)
	}
	// Re-applying the same file writes nothing; a changed definition
	// (nested fields added, changed and removed) is applied whole.
	k.ok(t, "apply", "-f", file)
	if again := wfAPIGetWorkflow(t, dyn, "hello"); again.ResourceVersion != wf.ResourceVersion {
		t.Fatalf("re-apply wrote: resourceVersion %s -> %s", wf.ResourceVersion, again.ResourceVersion)
	}
	// (kubectl warns that it cannot compute the patch from the OpenAPI v3
	// document, whose schema of a JSON value has no fields to look up, and
	// computes it from the v2 document.)
	stdout, stderr, err := k.run(t, "apply", "-f", writeTestFile(t, dir, "workflow.yaml", wfAPIWorkflowModifiedYAML))
	if err != nil || strings.TrimSpace(stdout) != "workflow.minik8s.io/hello configured" {
		t.Fatalf("apply modified workflow: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	wf = wfAPIGetWorkflow(t, dyn, "hello")
	def = nil
	if err := json.Unmarshal(wf.Spec.Definition.Raw, &def); err != nil {
		t.Fatal(err)
	}
	states := def["States"].(map[string]any)
	if def["StartAt"] != "Prepare" || def["Comment"] != "say hello twice" || len(states) != 3 || wf.Generation != 2 ||
		!reflect.DeepEqual(states["Greet"].(map[string]any)["Parameters"], map[string]any{"who.$": "$.name"}) {
		t.Fatalf("after apply of the modified workflow: generation %d, definition %s", wf.Generation, wf.Spec.Definition.Raw)
	}

	// A definition that does not parse is refused, 422, naming the field.
	out = k.fails(t, "apply", "-f", writeTestFile(t, dir, "lost.yaml", wfAPIBadWorkflowYAML))
	if !strings.Contains(out, `spec.definition.States[Start].Next: Invalid value: "Nowhere"`) {
		t.Fatalf("apply of a workflow with an unknown Next: %s", out)
	}
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "minik8s.io/v1", "kind": "Workflow", "metadata": map[string]any{"name": "lost"},
		"spec": map[string]any{"definition": map[string]any{"StartAt": "Start", "States": map[string]any{"Start": map[string]any{"Type": "Pass", "Next": "Nowhere"}}}},
	}}
	_, err = dyn.Resource(wfmeta.WorkflowResource).Namespace("default").Create(ctx, bad, metav1.CreateOptions{})
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Code != http.StatusUnprocessableEntity ||
		len(status.Status().Details.Causes) == 0 || status.Status().Details.Causes[0].Field != "spec.definition.States[Start].Next" {
		t.Fatalf("create of a workflow with an unknown Next: %v", err)
	}

	// explain reads the served schema: input is any JSON value.
	if out := k.ok(t, "explain", "workflowruns.spec.input"); !strings.Contains(out, "any JSON value") {
		t.Fatalf("explain workflowruns.spec.input:\n%s", out)
	}

	// Runs whose input is an object, a string, a list, a number: each is
	// stored and read back as that JSON value, not as a string.
	for _, tc := range []struct {
		name, yaml string
		want       any
	}{
		{"hello-object", "\n    name: world\n    tags: [a, b]\n    nested:\n      deep: {x: 1, ok: true}", map[string]any{
			"name": "world", "tags": []any{"a", "b"}, "nested": map[string]any{"deep": map[string]any{"x": int64(1), "ok": true}}}},
		{"hello-string", " just a string", "just a string"},
		{"hello-list", "\n  - 1\n  - two\n  - three: 3", []any{int64(1), "two", map[string]any{"three": int64(3)}}},
		{"hello-number", " 42", int64(42)},
	} {
		if out := k.ok(t, "apply", "-f", writeTestFile(t, dir, tc.name+".yaml", wfAPIRunYAML(tc.name, tc.yaml))); strings.TrimSpace(out) != "workflowrun.minik8s.io/"+tc.name+" created" {
			t.Fatalf("apply %s: %q", tc.name, out)
		}
		u, err := runs.Get(ctx, tc.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := u.Object["spec"].(map[string]any)["input"]; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: input read back as %#v, want %#v", tc.name, got, tc.want)
		}
	}

	// Unknown fields next to the input are still refused (kubectl's
	// default, server-side strict field validation), inside it never.
	out = k.fails(t, "apply", "-f", writeTestFile(t, dir, "bogus.yaml", wfAPIRunYAML("hello-bogus", " {a: {b: c}}\n  bogus: 1")))
	if !strings.Contains(out, `unknown field "spec.bogus"`) {
		t.Fatalf("apply of a run with spec.bogus: %s", out)
	}

	// A run's spec does not change: a changed input is refused.
	out = k.fails(t, "apply", "-f", writeTestFile(t, dir, "hello-string.yaml", wfAPIRunYAML("hello-string", " another string")))
	if !strings.Contains(out, "spec: Forbidden: field is immutable") {
		t.Fatalf("apply of a changed input: %s", out)
	}
	u, err := runs.Get(ctx, "hello-object", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, "other", "spec", "workflow"); err != nil {
		t.Fatal(err)
	}
	if _, err := runs.Update(ctx, u, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "field is immutable") {
		t.Fatalf("update of spec.workflow: %v", err)
	}

	// The engine's status goes through /status and shows in the table.
	r := wfAPIGetRun(t, dyn, "hello-object")
	start := metav1.NewTime(time.Now().Add(-2 * time.Minute).Truncate(time.Second))
	r.Status = minik8sv1.WorkflowRunStatus{Phase: minik8sv1.WorkflowRunRunning, StartTime: &start, CurrentState: "Greet"}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runs.UpdateStatus(ctx, &unstructured.Unstructured{Object: obj}, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status: %v", err)
	}
	out = k.ok(t, "get", "workflowruns")
	if h := tableHeader(out); !slices.Equal(h, []string{"NAME", "WORKFLOW", "STATUS", "STATE", "DURATION", "AGE"}) {
		t.Fatalf("get workflowruns header %v:\n%s", h, out)
	}
	var row []string
	for _, l := range outputLines(out)[1:] {
		if f := strings.Fields(l); f[0] == "hello-object" {
			row = f
		}
	}
	if len(row) != 6 || row[1] != "hello" || row[2] != "Running" || row[3] != "Greet" || !strings.HasPrefix(row[4], "2m") {
		t.Fatalf("get workflowruns row %v:\n%s", row, out)
	}
	if out := k.ok(t, "get", "wfr", "--field-selector", "status.phase=Running", "-o", "name"); strings.TrimSpace(out) != "workflowrun.minik8s.io/hello-object" {
		t.Fatalf("get wfr --field-selector status.phase=Running: %q", out)
	}
	if out := k.ok(t, "get", "wfr", "-o", "wide"); !slices.Equal(tableHeader(out), []string{"NAME", "WORKFLOW", "STATUS", "STATE", "DURATION", "AGE", "ERROR"}) {
		t.Fatalf("get wfr -o wide:\n%s", out)
	}

	// A Trigger with a schedule cron cannot parse is refused, naming the
	// field; a good one gets its defaults and its columns.
	out = k.fails(t, "apply", "-f", writeTestFile(t, dir, "trigger.yaml", wfAPIBadTriggerYAML))
	if !strings.Contains(out, `spec.schedule.schedule: Invalid value: "every night"`) {
		t.Fatalf("apply of a trigger with a bad schedule: %s", out)
	}
	k.ok(t, "apply", "-f", writeTestFile(t, dir, "trigger.yaml", wfAPITriggerYAML))
	tu, err := dyn.Resource(wfmeta.TriggerResource).Namespace("default").Get(ctx, "nightly", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p, _, _ := unstructured.NestedString(tu.Object, "spec", "schedule", "concurrencyPolicy"); p != "Allow" {
		t.Errorf("concurrencyPolicy %q, want the default Allow", p)
	}
	if p, _, _ := unstructured.NestedMap(tu.Object, "spec", "payload"); !reflect.DeepEqual(p, map[string]any{"name": "night"}) {
		t.Errorf("payload %v", p)
	}
	out = k.ok(t, "get", "triggers")
	if h := tableHeader(out); !slices.Equal(h, []string{"NAME", "TARGET", "SOURCE", "LAST-FIRE", "LAST-RESULT", "FIRED", "AGE"}) {
		t.Fatalf("get triggers header %v:\n%s", h, out)
	}
	if l := outputLines(out)[1]; !strings.Contains(l, "workflow/hello") || !strings.Contains(l, "schedule: */1 * * * *") || !strings.Contains(l, "<none>") {
		t.Fatalf("get triggers row:\n%s", out)
	}
}

func wfAPIGetWorkflow(t *testing.T, dyn dynamic.Interface, name string) *minik8sv1.Workflow {
	t.Helper()
	u, err := dyn.Resource(wfmeta.WorkflowResource).Namespace("default").Get(ctxT(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wf := &minik8sv1.Workflow{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, wf); err != nil {
		t.Fatalf("convert %s: %v", name, err)
	}
	return wf
}

func wfAPIGetRun(t *testing.T, dyn dynamic.Interface, name string) *minik8sv1.WorkflowRun {
	t.Helper()
	u, err := dyn.Resource(wfmeta.WorkflowRunResource).Namespace("default").Get(ctxT(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &minik8sv1.WorkflowRun{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, r); err != nil {
		t.Fatalf("convert %s: %v", name, err)
	}
	return r
}
