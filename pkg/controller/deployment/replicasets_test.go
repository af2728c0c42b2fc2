package deployment

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
)

func TestComputeHash(t *testing.T) {
	d := rollingDeployment(3, "1", "0")
	h := computeHash(&d.Spec.Template, nil)
	if h != computeHash(d.Spec.Template.DeepCopy(), nil) {
		t.Fatal("hash is not deterministic")
	}
	if strings.ContainsAny(h, "aeiou013") || h == "" {
		t.Fatalf("hash %q is not safe-encoded", h)
	}
	if h == computeHash(&d.Spec.Template, ptr.To[int32](1)) {
		t.Fatal("collision count does not change the hash")
	}
	other := d.Spec.Template.DeepCopy()
	other.Spec.Containers[0].Image = "nginx:2"
	if h == computeHash(other, nil) {
		t.Fatal("a different image hashes the same")
	}
	// Map order must not matter.
	a, b := d.Spec.Template.DeepCopy(), d.Spec.Template.DeepCopy()
	a.Labels = map[string]string{"x": "1", "y": "2", "z": "3"}
	b.Labels = map[string]string{"z": "3", "y": "2", "x": "1"}
	if computeHash(a, nil) != computeHash(b, nil) {
		t.Fatal("label order changes the hash")
	}
}

func TestEqualIgnoreHash(t *testing.T) {
	d := rollingDeployment(3, "1", "0")
	rsTemplate := d.Spec.Template.DeepCopy()
	rsTemplate.Labels = withLabel(rsTemplate.Labels, appsv1.DefaultDeploymentUniqueLabelKey, "abc")
	if !equalIgnoreHash(&d.Spec.Template, rsTemplate) {
		t.Fatal("templates differing only in the hash label are not equal")
	}
	if d.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != "" || rsTemplate.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != "abc" {
		t.Fatal("equalIgnoreHash changed its arguments")
	}
	rsTemplate.Spec.Containers[0].Image = "nginx:2"
	if equalIgnoreHash(&d.Spec.Template, rsTemplate) {
		t.Fatal("different images are equal")
	}
}

func TestSetNewReplicaSetAnnotations(t *testing.T) {
	d := rollingDeployment(4, "1", "0")
	d.Annotations = map[string]string{
		"kubernetes.io/change-cause":                       "kubectl set image",
		AnnotationRevision:                                 "7",
		"kubectl.kubernetes.io/last-applied-configuration": "{}",
	}
	rs := rsOf("web-abc", 0, 0, 0)
	if !setNewReplicaSetAnnotations(d, rs, "3", false) {
		t.Fatal("no change reported")
	}
	want := map[string]string{
		"kubernetes.io/change-cause": "kubectl set image", AnnotationRevision: "3",
		AnnotationDesiredReplicas: "4", AnnotationMaxReplicas: "5",
	}
	if fmt.Sprint(rs.Annotations) != fmt.Sprint(want) {
		t.Fatalf("annotations %v, want %v", rs.Annotations, want)
	}
	if setNewReplicaSetAnnotations(d, rs, "3", true) {
		t.Fatal("a second pass changed something")
	}
	// Rolled back to: the revision moves up and the old one is history.
	if !setNewReplicaSetAnnotations(d, rs, "5", true) || rs.Annotations[AnnotationRevision] != "5" || rs.Annotations[AnnotationRevisionHistory] != "3" {
		t.Fatalf("after rollback: %v", rs.Annotations)
	}
	setNewReplicaSetAnnotations(d, rs, "8", true)
	if rs.Annotations[AnnotationRevisionHistory] != "3,5" {
		t.Fatalf("history %q, want 3,5", rs.Annotations[AnnotationRevisionHistory])
	}
	// Never down.
	if setNewReplicaSetAnnotations(d, rs, "2", true) || rs.Annotations[AnnotationRevision] != "8" {
		t.Fatalf("revision went down: %v", rs.Annotations)
	}
}

func TestRevisionsToDelete(t *testing.T) {
	mk := func(name string, rev string, size int32, mutate ...func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
		rs := annotated(rsOf(name, size, size, time.Hour), AnnotationRevision, rev)
		for _, m := range mutate {
			m(rs)
		}
		return rs
	}
	old := []*appsv1.ReplicaSet{
		mk("r4", "4", 0), mk("r1", "1", 0), mk("r3", "3", 0), mk("r2", "2", 2),
		mk("r5", "5", 0, func(rs *appsv1.ReplicaSet) { rs.Generation, rs.Status.ObservedGeneration = 2, 1 }),
		mk("gone", "0", 0, func(rs *appsv1.ReplicaSet) { rs.DeletionTimestamp = &rs.CreationTimestamp }),
	}
	cases := []struct {
		limit int32
		want  string
	}{
		{limit: 10, want: "[]"},
		{limit: 5, want: "[]"},
		{limit: 3, want: "[r1]"}, // r2 still has pods
		{limit: 1, want: "[r1 r3 r4]"},
		{limit: 0, want: "[r1 r3 r4]"}, // r5's status is not caught up
	}
	for _, tc := range cases {
		var got []string
		for _, rs := range revisionsToDelete(old, tc.limit) {
			got = append(got, rs.Name)
		}
		if fmt.Sprint(got) != tc.want && !(tc.want == "[]" && got == nil) {
			t.Errorf("limit %d: deleting %v, want %s", tc.limit, got, tc.want)
		}
	}
}
