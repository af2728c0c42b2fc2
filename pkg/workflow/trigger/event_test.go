package trigger

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

func configMap(ns, name, rv string, created time.Time, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetResourceVersion(rv)
	u.SetCreationTimestamp(metav1.NewTime(created))
	u.SetLabels(labels)
	return u
}

func TestMatches(t *testing.T) {
	app := map[string]string{"app": "x"}
	after := t0.Add(time.Minute)
	tests := []struct {
		name   string
		event  minik8sv1.EventSource
		susp   bool
		typ    string
		obj    *unstructured.Unstructured
		old    *unstructured.Unstructured
		wanted bool
	}{
		{name: "added after the trigger", typ: "ADDED", obj: configMap("default", "a", "2", after, nil), wanted: true},
		{name: "added before the trigger", typ: "ADDED", obj: configMap("default", "a", "2", t0.Add(-time.Minute), nil)},
		{name: "modified", typ: "MODIFIED", obj: configMap("default", "a", "3", t0.Add(-time.Hour), nil),
			old: configMap("default", "a", "2", t0.Add(-time.Hour), nil), wanted: true},
		{name: "resync", typ: "MODIFIED", obj: configMap("default", "a", "2", after, nil), old: configMap("default", "a", "2", after, nil)},
		{name: "deleted", typ: "DELETED", obj: configMap("default", "a", "2", t0.Add(-time.Hour), nil), wanted: true},
		{name: "type not listed", event: minik8sv1.EventSource{Types: []string{"DELETED"}}, typ: "ADDED",
			obj: configMap("default", "a", "2", after, nil)},
		{name: "type listed", event: minik8sv1.EventSource{Types: []string{"ADDED", "DELETED"}}, typ: "DELETED",
			obj: configMap("default", "a", "2", after, nil), wanted: true},
		{name: "selector matches", event: minik8sv1.EventSource{Selector: &metav1.LabelSelector{MatchLabels: app}}, typ: "ADDED",
			obj: configMap("default", "a", "2", after, app), wanted: true},
		{name: "selector does not match", event: minik8sv1.EventSource{Selector: &metav1.LabelSelector{MatchLabels: app}}, typ: "ADDED",
			obj: configMap("default", "a", "2", after, map[string]string{"app": "y"})},
		{name: "other namespace", typ: "ADDED", obj: configMap("other", "a", "2", after, nil)},
		{name: "named namespace", event: minik8sv1.EventSource{Namespace: "other"}, typ: "ADDED", obj: configMap("other", "a", "2", after, nil), wanted: true},
		{name: "all namespaces", event: minik8sv1.EventSource{Namespace: "*"}, typ: "ADDED", obj: configMap("other", "a", "2", after, nil), wanted: true},
		{name: "cluster-scoped object", typ: "ADDED", obj: configMap("", "a", "2", after, nil), wanted: true},
		{name: "suspended", susp: true, typ: "ADDED", obj: configMap("default", "a", "2", after, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTrigger("ev", false)
			ev := tc.event
			ev.APIVersion, ev.Kind = "v1", "ConfigMap"
			tr.Spec.Event = &ev
			tr.Spec.Suspend = &tc.susp
			if got := matches(tr, tc.typ, tc.obj, tc.old); got != tc.wanted {
				t.Errorf("matches = %v, want %v", got, tc.wanted)
			}
		})
	}
}

// TestEventTriggers runs the controller: only changes made after a
// trigger exists fire it, each with the object and the event type.
func TestEventTriggers(t *testing.T) {
	f := newFixture(t)
	app := map[string]string{"app": "x"}
	f.create(configMaps, configMap("default", "old", "", t0.Add(-time.Hour), app))
	f.create(configMaps, configMap("other", "elsewhere", "", t0.Add(-time.Hour), app))

	wf := newTrigger("cm", false)
	wf.Spec.Event = &minik8sv1.EventSource{APIVersion: "v1", Kind: "ConfigMap", Selector: &metav1.LabelSelector{MatchLabels: app}}
	f.create(wfmeta.TriggerResource, wf)
	fn := newTrigger("cm-fn", true)
	fn.Spec.Event = &minik8sv1.EventSource{APIVersion: "v1", Kind: "ConfigMap", Namespace: "*", Types: []string{"MODIFIED"}}
	f.create(wfmeta.TriggerResource, fn)
	bogus := newTrigger("bogus", false)
	bogus.Spec.Event = &minik8sv1.EventSource{APIVersion: "example.com/v1", Kind: "Bogus"}
	f.create(wfmeta.TriggerResource, bogus)

	f.startAll()
	f.eventually("event sources running", func() bool {
		return f.c.sources.synced(sourceKey{configMaps, "default"}) && f.c.sources.synced(sourceKey{configMaps, ""})
	})
	f.eventually("bogus not ready", func() bool {
		c := readyOf(f.trigger("bogus"))
		return c.Status == metav1.ConditionFalse && c.Reason == ReasonUnknownKind
	})
	time.Sleep(50 * time.Millisecond)
	if n := len(f.runs()); n != 0 {
		t.Fatalf("%d runs for objects that were there before, want none", n)
	}
	if n := len(f.inv.Calls()); n != 0 {
		t.Fatalf("%d calls for objects that were there before, want none", n)
	}

	f.clk.SetTime(t0.Add(time.Minute))
	f.create(configMaps, configMap("default", "new", "", time.Time{}, app))
	f.create(configMaps, configMap("default", "unlabelled", "", time.Time{}, nil))
	f.eventually("ADDED fired", func() bool { return len(f.runs()) == 1 })

	old, err := f.dyn.Resource(configMaps).Namespace("default").Get(f.ctx, "old", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old.Object["data"] = map[string]any{"k": "v"}
	if _, err := f.dyn.Resource(configMaps).Namespace("default").Update(f.ctx, old, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("MODIFIED fired", func() bool { return len(f.runs()) == 2 && len(f.inv.Calls()) == 1 })
	if err := f.dyn.Resource(configMaps).Namespace("default").Delete(f.ctx, "new", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("DELETED fired", func() bool { return len(f.runs()) == 3 })

	var got []string
	for _, run := range f.runs() {
		var obj map[string]any
		if err := json.Unmarshal(run.Spec.Input.Bytes(), &obj); err != nil {
			t.Fatal(err)
		}
		name, _, _ := unstructured.NestedString(obj, "metadata", "name")
		got = append(got, run.Annotations[wfmeta.EventTypeAnnotation]+" "+name)
		if run.Labels[wfmeta.TriggerLabel] != "cm" {
			t.Errorf("run %s labels = %v", run.Name, run.Labels)
		}
	}
	if want := []string{"ADDED new", "MODIFIED old", "DELETED new"}; !slices.Equal(got, want) {
		t.Errorf("runs fired by %v, want %v", got, want)
	}
	call := f.inv.Calls()[0]
	if call.header.Get(EventTypeHeader) != "MODIFIED" || !json.Valid([]byte(call.body)) {
		t.Errorf("call = %+v", call)
	}
	f.eventually("status counts the firings", func() bool { return f.trigger("cm").Status.Fired == 3 })

	// Triggers gone: their informers stop.
	for _, name := range []string{"cm", "cm-fn", "bogus"} {
		if err := f.dyn.Resource(wfmeta.TriggerResource).Namespace("default").Delete(f.ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.eventually("event sources stopped", func() bool { return len(f.c.sources.running()) == 0 })
}
