package apiserver

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

// TestStrategicMergePatchIntoJSON: a strategic merge patch (kubectl
// apply's) reaches into a JSON value (a workflow's definition) as a JSON
// merge patch does: objects merged key by key at any depth, null deleting
// a key, lists replaced; the Go fields around it keep their strategies.
func TestStrategicMergePatchIntoJSON(t *testing.T) {
	wf := &minik8sv1.Workflow{
		TypeMeta:   metav1.TypeMeta{APIVersion: "minik8s.io/v1", Kind: "Workflow"},
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default", Labels: map[string]string{"a": "b"}},
		Spec: minik8sv1.WorkflowSpec{Definition: minik8sv1.JSON{Raw: []byte(`{"StartAt":"A","States":{` +
			`"A":{"Type":"Task","Resource":"function:f","Parameters":{"x":{"y":1,"z":2}},"Retry":[{"ErrorEquals":["States.ALL"]}],"Next":"B"},` +
			`"B":{"Type":"Succeed"}}}`)}},
		Status: minik8sv1.WorkflowStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "R"}}},
	}
	patch := `{"metadata":{"labels":{"c":"d"}},"spec":{"definition":{"States":{` +
		`"A":{"Parameters":{"x":{"y":null,"w":3}},"Retry":[{"ErrorEquals":["States.Timeout"]}]},` +
		`"B":null,"C":{"Type":"Succeed"}}}}}`
	out, err := applyPatch(types.StrategicMergePatchType, wf, []byte(patch))
	if err != nil {
		t.Fatal(err)
	}
	var got minik8sv1.Workflow
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	var def, want any
	if err := json.Unmarshal(got.Spec.Definition.Raw, &def); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal([]byte(`{"StartAt":"A","States":{`+
		`"A":{"Type":"Task","Resource":"function:f","Parameters":{"x":{"z":2,"w":3}},"Retry":[{"ErrorEquals":["States.Timeout"]}],"Next":"B"},`+
		`"C":{"Type":"Succeed"}}}`), &want)
	if !reflect.DeepEqual(def, want) {
		t.Errorf("definition after the patch: %s", got.Spec.Definition.Raw)
	}
	if !reflect.DeepEqual(got.Labels, map[string]string{"a": "b", "c": "d"}) || len(got.Status.Conditions) != 1 {
		t.Errorf("object after the patch: %+v", got.ObjectMeta)
	}

	// Go fields still follow their patch strategies: containers merge by name.
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "x"}, {Name: "b", Image: "y"}}}}
	out, err = applyPatch(types.StrategicMergePatchType, pod, []byte(`{"spec":{"containers":[{"name":"b","image":"z"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	var p corev1.Pod
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Spec.Containers) != 2 || p.Spec.Containers[1].Image != "z" {
		t.Errorf("containers after the patch: %+v", p.Spec.Containers)
	}
}
