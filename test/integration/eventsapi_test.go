package integration

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// events.k8s.io/v1 Events are core Events under other field names: one
// written through either API is read, listed and deleted through both.
func TestEventsAPI(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	v1events := c.client.EventsV1().Events("default")
	coreEvents := c.client.CoreV1().Events("default")
	now := metav1.NewMicroTime(time.Now().Truncate(time.Microsecond))
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "web.1", Labels: map[string]string{"test": "events"}},
		EventTime:  now, ReportingController: "example.com/controller", ReportingInstance: "controller-1",
		Action: "Scale", Reason: "Scaled", Type: corev1.EventTypeNormal, Note: "scaled to 3",
		Regarding: corev1.ObjectReference{Kind: "Deployment", Namespace: "default", Name: "web", APIVersion: "apps/v1"},
	}
	if _, err := v1events.Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	core, err := coreEvents.Get(ctx, "web.1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if core.Message != "scaled to 3" || core.InvolvedObject.Name != "web" || core.ReportingController != "example.com/controller" || core.Action != "Scale" {
		t.Errorf("through core/v1: %+v", core)
	}
	// A core Event reads through events.k8s.io.
	if _, err := coreEvents.Create(ctx, &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "web.2", Labels: map[string]string{"test": "events"}}, Message: "pulled",
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-x"}, Reason: "Pulled", Type: corev1.EventTypeNormal, Count: 2,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := v1events.Get(ctx, "web.2", metav1.GetOptions{})
	if err != nil || got.Note != "pulled" || got.Regarding.Name != "web-x" || got.DeprecatedCount != 2 {
		t.Errorf("web.2 through events.k8s.io: %v, %+v", err, got)
	}
	// Patch, and the stricter checks of events.k8s.io.
	patched, err := v1events.Patch(ctx, "web.1", types.MergePatchType, []byte(`{"note":"scaled to 4"}`), metav1.PatchOptions{})
	if err != nil || patched.Note != "scaled to 4" {
		t.Errorf("patching the note: %v, %+v", err, patched)
	}
	if _, err := v1events.Patch(ctx, "web.1", types.MergePatchType, []byte(`{"reason":"Other"}`), metav1.PatchOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("changing the reason: %v, want Invalid", err)
	}
	bad := ev.DeepCopy()
	bad.Name, bad.ReportingController = "bad", ""
	if _, err := v1events.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("an event without reportingController: %v, want Invalid", err)
	}
	// An event without a source is selected by its reporting controller.
	bySource, err := coreEvents.List(ctx, metav1.ListOptions{FieldSelector: "source=example.com/controller"})
	if err != nil || len(bySource.Items) != 1 || bySource.Items[0].Name != "web.1" {
		t.Errorf("core events with source=example.com/controller: %v, %v", err, bySource)
	}
	byRegarding, err := v1events.List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=web-x"})
	if err != nil || len(byRegarding.Items) != 1 || byRegarding.Items[0].Name != "web.2" {
		t.Errorf("events.k8s.io events with regarding.name=web-x: %v, %v", err, byRegarding)
	}
	list, err := v1events.List(ctx, metav1.ListOptions{LabelSelector: "test=events"})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("list: %v, %d items", err, len(list.Items))
	}
	if err := v1events.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "test=events"}); err != nil {
		t.Fatal(err)
	}
	if left, err := coreEvents.List(ctx, metav1.ListOptions{LabelSelector: "test=events"}); err != nil || len(left.Items) != 0 {
		t.Errorf("after deleting the collection through events.k8s.io, core/v1 lists %v, %v", err, left)
	}
}
