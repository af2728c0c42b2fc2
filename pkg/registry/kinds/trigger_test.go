package kinds

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

func scheduleTrigger() *minik8sv1.Trigger {
	return defaulted(&minik8sv1.Trigger{ObjectMeta: nsMeta("nightly"), Spec: minik8sv1.TriggerSpec{
		Target:   minik8sv1.TriggerTarget{Workflow: "hello"},
		Payload:  minik8sv1.NewJSON([]byte(`{"name":"night"}`)),
		Schedule: &minik8sv1.ScheduleSource{Schedule: "*/1 * * * *"},
	}})
}

func TestDefaultTrigger(t *testing.T) {
	tr := scheduleTrigger()
	if tr.Spec.Schedule.ConcurrencyPolicy != "Allow" || *tr.Spec.SuccessfulRunsHistoryLimit != 3 || *tr.Spec.FailedRunsHistoryLimit != 1 {
		t.Errorf("schedule defaults: %+v %+v", tr.Spec, tr.Spec.Schedule)
	}
	ev := defaulted(&minik8sv1.Trigger{ObjectMeta: nsMeta("on-cm"), Spec: minik8sv1.TriggerSpec{
		Target: minik8sv1.TriggerTarget{Function: "greet"}, Event: &minik8sv1.EventSource{APIVersion: "v1", Kind: "ConfigMap"}}})
	if !reflect.DeepEqual(ev.Spec.Event.Types, []string{"ADDED", "MODIFIED", "DELETED"}) {
		t.Errorf("event types %v", ev.Spec.Event.Types)
	}
	web := defaulted(&minik8sv1.Trigger{ObjectMeta: nsMeta("web"), Spec: minik8sv1.TriggerSpec{
		Target: minik8sv1.TriggerTarget{Function: "greet"}, HTTP: &minik8sv1.HTTPSource{},
		SuccessfulRunsHistoryLimit: ptr.To[int32](0)}})
	if !reflect.DeepEqual(web.Spec.HTTP.Methods, []string{"POST"}) || *web.Spec.SuccessfulRunsHistoryLimit != 0 {
		t.Errorf("http defaults: %+v %+v", web.Spec, web.Spec.HTTP)
	}
	// What is set stays.
	forbid := defaulted(mutate(scheduleTrigger(), func(tr *minik8sv1.Trigger) { tr.Spec.Schedule.ConcurrencyPolicy = "Forbid" }))
	if forbid.Spec.Schedule.ConcurrencyPolicy != "Forbid" {
		t.Errorf("concurrencyPolicy %q", forbid.Spec.Schedule.ConcurrencyPolicy)
	}
}

func TestValidateTrigger(t *testing.T) {
	event := func(tr *minik8sv1.Trigger) {
		tr.Spec.Schedule = nil
		tr.Spec.Event = &minik8sv1.EventSource{APIVersion: "v1", Kind: "ConfigMap", Types: []string{"ADDED"}}
	}
	withEvent := func(f func(*minik8sv1.EventSource)) func(*minik8sv1.Trigger) {
		return func(tr *minik8sv1.Trigger) { event(tr); f(tr.Spec.Event) }
	}
	http := func(methods ...string) func(*minik8sv1.Trigger) {
		return func(tr *minik8sv1.Trigger) {
			tr.Spec.Schedule, tr.Spec.HTTP = nil, &minik8sv1.HTTPSource{Methods: methods}
		}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*minik8sv1.Trigger)
		want   []string // "field: type"; empty when valid
	}{
		{name: "schedule", mutate: func(*minik8sv1.Trigger) {}},
		{name: "schedule with time zone", mutate: func(tr *minik8sv1.Trigger) {
			tr.Spec.Schedule.Schedule, tr.Spec.Schedule.TimeZone = "@every 5m", ptr.To("Europe/Paris")
		}},
		{name: "event", mutate: event},
		{name: "event in all namespaces with a selector", mutate: withEvent(func(ev *minik8sv1.EventSource) {
			ev.APIVersion, ev.Kind, ev.Namespace = "apps/v1", "Deployment", "*"
			ev.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
		})},
		{name: "http", mutate: http("GET", "POST")},
		{name: "function target", mutate: func(tr *minik8sv1.Trigger) { tr.Spec.Target = minik8sv1.TriggerTarget{Function: "greet"} }},
		{name: "list payload", mutate: func(tr *minik8sv1.Trigger) { tr.Spec.Payload = minik8sv1.NewJSON([]byte(`[1,{"a":"b"}]`)) }},

		{name: "bad name", mutate: func(tr *minik8sv1.Trigger) { tr.Name = "night.ly" }, want: []string{"metadata.name: Invalid value"}},
		{name: "no target", mutate: func(tr *minik8sv1.Trigger) { tr.Spec.Target = minik8sv1.TriggerTarget{} },
			want: []string{"spec.target: Required value"}},
		{name: "two targets", mutate: func(tr *minik8sv1.Trigger) { tr.Spec.Target.Function = "greet" },
			want: []string{"spec.target.workflow: Forbidden"}},
		{name: "bad target name", mutate: func(tr *minik8sv1.Trigger) { tr.Spec.Target.Workflow = "Hello" },
			want: []string{"spec.target.workflow: Invalid value"}},
		{name: "no source", mutate: func(tr *minik8sv1.Trigger) { tr.Spec.Schedule = nil }, want: []string{"spec: Required value"}},
		{name: "two sources", mutate: func(tr *minik8sv1.Trigger) { tr.Spec.HTTP = &minik8sv1.HTTPSource{Methods: []string{"POST"}} },
			want: []string{"spec.http: Forbidden"}},
		{name: "empty schedule", mutate: func(tr *minik8sv1.Trigger) { tr.Spec.Schedule.Schedule = "" },
			want: []string{"spec.schedule.schedule: Required value"}},
		{name: "bad schedule", mutate: func(tr *minik8sv1.Trigger) { tr.Spec.Schedule.Schedule = "every minute" },
			want: []string{"spec.schedule.schedule: Invalid value"}},
		{name: "six fields", mutate: func(tr *minik8sv1.Trigger) { tr.Spec.Schedule.Schedule = "0 */1 * * * *" },
			want: []string{"spec.schedule.schedule: Invalid value"}},
		{name: "TZ in schedule", mutate: func(tr *minik8sv1.Trigger) { tr.Spec.Schedule.Schedule = "TZ=UTC 0 * * * *" },
			want: []string{"spec.schedule.schedule: Invalid value"}},
		{name: "bad time zone", mutate: func(tr *minik8sv1.Trigger) { tr.Spec.Schedule.TimeZone = ptr.To("Mars/Olympus") },
			want: []string{"spec.schedule.timeZone: Invalid value"}},
		{name: "bad concurrency policy", mutate: func(tr *minik8sv1.Trigger) { tr.Spec.Schedule.ConcurrencyPolicy = "Queue" },
			want: []string{"spec.schedule.concurrencyPolicy: Unsupported value"}},
		{name: "negative starting deadline", mutate: func(tr *minik8sv1.Trigger) { tr.Spec.Schedule.StartingDeadlineSeconds = ptr.To[int64](-1) },
			want: []string{"spec.schedule.startingDeadlineSeconds: Invalid value"}},
		{name: "event without apiVersion and kind", mutate: withEvent(func(ev *minik8sv1.EventSource) { ev.APIVersion, ev.Kind = "", "" }),
			want: []string{"spec.event.apiVersion: Required value", "spec.event.kind: Required value"}},
		{name: "event bad apiVersion", mutate: withEvent(func(ev *minik8sv1.EventSource) { ev.APIVersion = "a/b/c" }),
			want: []string{"spec.event.apiVersion: Invalid value"}},
		{name: "event bad type", mutate: withEvent(func(ev *minik8sv1.EventSource) { ev.Types = []string{"ADDED", "BOOKMARK"} }),
			want: []string{"spec.event.types[1]: Unsupported value"}},
		{name: "event type twice", mutate: withEvent(func(ev *minik8sv1.EventSource) { ev.Types = []string{"ADDED", "ADDED"} }),
			want: []string{"spec.event.types[1]: Duplicate value"}},
		{name: "event bad namespace", mutate: withEvent(func(ev *minik8sv1.EventSource) { ev.Namespace = "Kube_System" }),
			want: []string{"spec.event.namespace: Invalid value"}},
		{name: "event bad selector", mutate: withEvent(func(ev *minik8sv1.EventSource) {
			ev.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
		}), want: []string{"spec.event.selector.matchExpressions[0].operator: Invalid value"}},
		{name: "http bad method", mutate: http("POST", "TRACE"), want: []string{"spec.http.methods[1]: Unsupported value"}},
		{name: "negative history", mutate: func(tr *minik8sv1.Trigger) { tr.Spec.FailedRunsHistoryLimit = ptr.To[int32](-1) },
			want: []string{"spec.failedRunsHistoryLimit: Invalid value"}},
		{name: "negative fired", mutate: func(tr *minik8sv1.Trigger) { tr.Status.Fired = -1 }, want: []string{"status.fired: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := mutate(scheduleTrigger(), tc.mutate)
			checkExactErrors(t, validate(tr, true), tc.want)
		})
	}
}

func TestTriggerCells(t *testing.T) {
	gk := schema.GroupKind{Group: "minik8s.io", Kind: "Trigger"}
	fired := metav1.NewTime(now.Add(-90 * 1e9))
	runCellCases(t, []cellCase{
		{name: "schedule never fired", gk: gk, obj: mutate(scheduleTrigger(), func(tr *minik8sv1.Trigger) { tr.CreationTimestamp = created }),
			want: map[string]interface{}{"Name": "nightly", "Target": "workflow/hello", "Source": "schedule: */1 * * * *",
				"Last-Fire": "<none>", "Last-Result": "", "Fired": int64(0), "Age": "10m"}},
		{name: "event fired", gk: gk, obj: &minik8sv1.Trigger{ObjectMeta: objMeta("on-cm"), Spec: minik8sv1.TriggerSpec{
			Target: minik8sv1.TriggerTarget{Function: "greet"},
			Event:  &minik8sv1.EventSource{APIVersion: "v1", Kind: "ConfigMap", Types: []string{"ADDED", "MODIFIED"}}},
			Status: minik8sv1.TriggerStatus{LastFireTime: &fired, LastResult: "200", Fired: 4}},
			want: map[string]interface{}{"Target": "function/greet", "Source": "event: ConfigMap ADDED,MODIFIED",
				"Last-Fire": "90s", "Last-Result": "200", "Fired": int64(4)}},
		{name: "http", gk: gk, obj: &minik8sv1.Trigger{ObjectMeta: objMeta("web"), Spec: minik8sv1.TriggerSpec{
			Target: minik8sv1.TriggerTarget{Function: "greet"}, HTTP: &minik8sv1.HTTPSource{Methods: []string{"POST"}}}},
			want: map[string]interface{}{"Source": "http"}},
	})
}

// TestWorkflowKindsColumns: the columns of the workflow kinds, plain and -o wide.
func TestWorkflowKindsColumns(t *testing.T) {
	for _, tc := range []struct {
		kind         string
		normal, wide []string
	}{
		{"Workflow", []string{"Name", "States", "Ready", "Age"}, []string{"Start-At", "Resources"}},
		{"WorkflowRun", []string{"Name", "Workflow", "Status", "State", "Duration", "Age"}, []string{"Error"}},
		{"Trigger", []string{"Name", "Target", "Source", "Last-Fire", "Last-Result", "Fired", "Age"}, nil},
	} {
		var normal, wide []string
		for _, c := range printerOf(t, schema.GroupKind{Group: "minik8s.io", Kind: tc.kind}).Columns {
			if c.Priority == 0 {
				normal = append(normal, c.Name)
			} else {
				wide = append(wide, c.Name)
			}
		}
		if !reflect.DeepEqual(normal, tc.normal) || !reflect.DeepEqual(wide, tc.wide) {
			t.Errorf("%s: columns %v wide %v, want %v wide %v", tc.kind, normal, wide, tc.normal, tc.wide)
		}
	}
}
