package history

import (
	"context"
	"testing"

	"encoding/json"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/fake"
)

func template(image string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image, Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}}},
	}
}

// TestPatchRestoresTemplate: applying a revision to a parent whose
// template changed since gives back the revision's template exactly, as
// kubectl rollout undo does it.
func TestPatchRestoresTemplate(t *testing.T) {
	data, err := Patch(template("nginx:1"))
	if err != nil {
		t.Fatal(err)
	}
	current := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: *template("nginx:2")}}
	current.Spec.Template.Spec.Containers = append(current.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox"})
	cur, _ := json.Marshal(current)
	out, err := strategicpatch.StrategicMergePatch(cur, data.Raw, &appsv1.DaemonSet{})
	if err != nil {
		t.Fatal(err)
	}
	var got appsv1.DaemonSet
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if cs := got.Spec.Template.Spec.Containers; len(cs) != 1 || cs[0].Image != "nginx:1" {
		t.Errorf("containers after the patch = %+v, want nginx:1 alone", cs)
	}
	tmpl, err := Template(&appsv1.ControllerRevision{Data: data})
	if err != nil || tmpl.Spec.Containers[0].Image != "nginx:1" || tmpl.Labels["app"] != "web" {
		t.Errorf("Template = %+v, %v", tmpl, err)
	}
}

func TestCreateStepsPastCollisions(t *testing.T) {
	ctx := context.Background()
	client := fake.NewSimpleClientset()
	parent := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ds", UID: "u1"}}
	gvk := appsv1.SchemeGroupVersion.WithKind("DaemonSet")
	d1, _ := Patch(template("a"))
	d2, _ := Patch(template("b"))
	var cc int32
	r1, err := Create(ctx, client.AppsV1(), parent, gvk, New(parent, gvk, map[string]string{"app": "web"}, d1, 1, &cc), &cc)
	if err != nil || cc != 0 || r1.Labels[appsv1.ControllerRevisionHashLabelKey] == "" || r1.Labels["app"] != "web" {
		t.Fatalf("first create = %+v, %v, collisions %d", r1, err, cc)
	}
	// The same data again: the existing revision.
	again, err := Create(ctx, client.AppsV1(), parent, gvk, New(parent, gvk, nil, d1, 1, &cc), &cc)
	if err != nil || again.Name != r1.Name || cc != 0 {
		t.Errorf("same data = %v, %v, collisions %d", again.Name, err, cc)
	}
	// Other data under a taken name: the name of collision 1.
	taken := New(parent, gvk, nil, d2, 2, &cc)
	taken.Name = r1.Name
	if _, err := client.AppsV1().ControllerRevisions("ns").Update(ctx, taken, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r3, err := Create(ctx, client.AppsV1(), parent, gvk, New(parent, gvk, nil, d1, 3, &cc), &cc)
	if err != nil || cc != 1 || r3.Name == r1.Name {
		t.Errorf("after a collision = %v, %v, collisions %d", r3.Name, err, cc)
	}
	list := []*appsv1.ControllerRevision{r3, r1}
	Sort(list)
	if list[0] != r1 || Next(list) != 4 || len(FindEqual(list, r3)) != 2 || len(Owned(list, "u1")) != 2 {
		t.Errorf("Sort/Next/FindEqual/Owned: %v %d", list, Next(list))
	}
}
