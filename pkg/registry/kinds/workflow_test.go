package kinds

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

// helloDefinition is a two-state machine: a Task calling a function, then Succeed.
const helloDefinition = `{"Comment":"hello","StartAt":"Greet","States":{` +
	`"Greet":{"Type":"Task","Resource":"function:greet","Next":"Done"},` +
	`"Done":{"Type":"Succeed"}}}`

func validWorkflow() *minik8sv1.Workflow {
	return defaulted(&minik8sv1.Workflow{ObjectMeta: nsMeta("hello"),
		Spec: minik8sv1.WorkflowSpec{Definition: minik8sv1.JSON{Raw: []byte(helloDefinition)}}})
}

func TestValidateWorkflow(t *testing.T) {
	def := func(s string) func(*minik8sv1.Workflow) {
		return func(wf *minik8sv1.Workflow) { wf.Spec.Definition = minik8sv1.JSON{Raw: []byte(s)} }
	}
	for _, tc := range []struct {
		name   string
		mutate func(*minik8sv1.Workflow)
		want   []string // "field: type"; empty when valid
	}{
		{name: "valid", mutate: func(*minik8sv1.Workflow) {}},
		{name: "one Pass state", mutate: def(`{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`)},
		{name: "no definition", mutate: def(``), want: []string{"spec.definition: Required value"}},
		{name: "not an object", mutate: def(`"hello"`), want: []string{"spec.definition: Invalid value"}},
		{name: "unknown Next", mutate: def(`{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B"}}}`),
			want: []string{"spec.definition.States[A].Next: Invalid value"}},
		{name: "StartAt names no state", mutate: def(`{"StartAt":"X","States":{"A":{"Type":"Pass","End":true}}}`),
			want: []string{"spec.definition.StartAt: Invalid value"}},
		{name: "no States", mutate: def(`{"StartAt":"A"}`), want: []string{"spec.definition.States: Required value"}},
		{name: "unknown field", mutate: def(`{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}},"Bogus":1}`),
			want: []string{"spec.definition.Bogus: Forbidden"}},
		{name: "bad name", mutate: func(wf *minik8sv1.Workflow) { wf.Name = "1hello" }, want: []string{"metadata.name: Invalid value"}},
		{name: "bad condition", mutate: func(wf *minik8sv1.Workflow) {
			wf.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: "Maybe"}}
		}, want: []string{"status.conditions[0].status: Unsupported value", "status.conditions[0].lastTransitionTime: Required value",
			"status.conditions[0].reason: Required value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wf := mutate(validWorkflow(), tc.mutate)
			checkExactErrors(t, validate(wf, true), tc.want)
		})
	}
}

func TestWorkflowCells(t *testing.T) {
	gk := schema.GroupKind{Group: "minik8s.io", Kind: "Workflow"}
	wf := func(def string, st minik8sv1.WorkflowStatus) *minik8sv1.Workflow {
		return &minik8sv1.Workflow{ObjectMeta: objMeta("hello"), Spec: minik8sv1.WorkflowSpec{Definition: minik8sv1.JSON{Raw: []byte(def)}}, Status: st}
	}
	ready := minik8sv1.WorkflowStatus{Resources: []string{"function:greet"},
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "ResourcesFound"}}}
	missing := minik8sv1.WorkflowStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "ResourceNotFound"}}}
	runCellCases(t, []cellCase{
		{name: "ready", gk: gk, obj: wf(helloDefinition, ready),
			want: map[string]interface{}{"Name": "hello", "States": int64(2), "Ready": "True", "Age": "10m", "Start-At": "Greet", "Resources": "function:greet"}},
		{name: "resource missing", gk: gk, obj: wf(helloDefinition, missing), want: map[string]interface{}{"Ready": "False (ResourceNotFound)"}},
		{name: "no status yet", gk: gk, obj: wf(helloDefinition, minik8sv1.WorkflowStatus{}), want: map[string]interface{}{"Ready": "Unknown", "Resources": ""}},
		{name: "unparsable definition", gk: gk, obj: wf(`[1,2]`, minik8sv1.WorkflowStatus{}), want: map[string]interface{}{"States": int64(0), "Start-At": ""}},
	})

	// What an unstructured client holds renders the same: the definition as YAML would give it.
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "minik8s.io/v1", "kind": "Workflow",
		"metadata": map[string]interface{}{"name": "hello", "creationTimestamp": created.UTC().Format(time.RFC3339)},
		"spec": map[string]interface{}{"definition": map[string]interface{}{"StartAt": "A", "States": map[string]interface{}{
			"A": map[string]interface{}{"Type": "Pass", "End": true}}}},
	}}
	if got := render(t, gk, u); got["States"] != int64(1) || got["Start-At"] != "A" || got["Age"] != "10m" {
		t.Errorf("unstructured Workflow rendered as %v", got)
	}
}
