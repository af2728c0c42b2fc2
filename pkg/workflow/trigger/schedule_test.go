package trigger

import (
	"github.com/minik8s/minik8s/pkg/cronschedule"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

func TestScheduleTimes(t *testing.T) {
	tests := []struct {
		name        string
		schedule    string
		tz          *string
		earliest    time.Time
		now         time.Time
		wantRecent  time.Time // zero: none due
		wantMany    bool
		wantRequeue time.Duration
		wantErr     string
	}{
		{name: "not due yet", schedule: "*/5 * * * *", earliest: t0, now: t0.Add(2 * time.Minute),
			wantRequeue: 3*time.Minute + cronschedule.NextDelta},
		{name: "due exactly", schedule: "*/5 * * * *", earliest: t0, now: t0.Add(5 * time.Minute),
			wantRecent: t0.Add(5 * time.Minute), wantRequeue: 5*time.Minute + cronschedule.NextDelta},
		{name: "latest of several missed", schedule: "@hourly", earliest: t0, now: t0.Add(150 * time.Minute),
			wantRecent: t0.Add(2 * time.Hour), wantRequeue: 30*time.Minute + cronschedule.NextDelta},
		{name: "too many missed", schedule: "* * * * *", earliest: t0, now: t0.Add(3 * time.Hour),
			wantRecent: t0.Add(3 * time.Hour), wantMany: true, wantRequeue: time.Minute + cronschedule.NextDelta},
		{name: "time zone", schedule: "0 12 * * *", tz: ptr("Europe/Paris"), earliest: t0, now: t0.Add(2 * time.Hour),
			wantRecent: time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC), wantRequeue: 23*time.Hour + cronschedule.NextDelta},
		{name: "bad schedule", schedule: "61 * * * *", wantErr: "end of range"},
		{name: "bad time zone", schedule: "@daily", tz: ptr("Mars/Olympus"), wantErr: "unknown time zone"},
		{name: "TZ in schedule", schedule: "CRON_TZ=UTC * * * * *", wantErr: "TZ"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parseSchedule(&minik8sv1.ScheduleSource{Schedule: tc.schedule, TimeZone: tc.tz})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseSchedule: %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			recent, many := s.MostRecent(tc.earliest, tc.now)
			switch {
			case tc.wantRecent.IsZero() && recent != nil:
				t.Errorf("mostRecent = %v, want none", recent)
			case !tc.wantRecent.IsZero() && (recent == nil || !recent.Equal(tc.wantRecent)):
				t.Errorf("mostRecent = %v, want %v", recent, tc.wantRecent)
			}
			if many != tc.wantMany {
				t.Errorf("many = %v, want %v", many, tc.wantMany)
			}
			if got := s.RequeueAfter(tc.now); got != tc.wantRequeue {
				t.Errorf("requeueAfter = %v, want %v", got, tc.wantRequeue)
			}
		})
	}
}

func TestEarliest(t *testing.T) {
	last := t0.Add(time.Hour)
	now := t0.Add(3 * time.Hour)
	tests := []struct {
		name       string
		lastSched  *time.Time
		remembered time.Time
		deadline   *int64
		want       time.Time
	}{
		{name: "creation", want: t0},
		{name: "last schedule time", lastSched: &last, want: last},
		{name: "remembered is later", lastSched: &last, remembered: last.Add(time.Minute), want: last.Add(time.Minute)},
		{name: "deadline bounds it", lastSched: &last, deadline: ptr(int64(60)), want: now.Add(-time.Minute)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTrigger("t", false)
			tr.Spec.Schedule = &minik8sv1.ScheduleSource{Schedule: "@hourly", StartingDeadlineSeconds: tc.deadline}
			if tc.lastSched != nil {
				tr.Status.LastScheduleTime = &metav1.Time{Time: *tc.lastSched}
			}
			if got := earliest(tr, tc.remembered, now); !got.Equal(tc.want) {
				t.Errorf("earliest = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestScheduleFiring moves a schedule trigger through time.
func TestScheduleFiring(t *testing.T) {
	f := newFixture(t)
	f.clk.SetTime(t0.Add(2 * time.Minute))
	tr := newTrigger("every5", false)
	tr.Spec.Schedule = &minik8sv1.ScheduleSource{Schedule: "*/5 * * * *"}
	f.create(wfmeta.TriggerResource, tr)
	f.startInformers()

	if d := f.reconcile("every5"); d != 3*time.Minute+cronschedule.NextDelta {
		t.Errorf("requeue = %v, want 3m0.1s", d)
	}
	if runs := f.runs(); len(runs) != 0 {
		t.Fatalf("%d runs before the first time, want none", len(runs))
	}
	got := f.trigger("every5")
	if c := readyOf(got); c.Status != metav1.ConditionTrue || c.Reason != ReasonActive || c.ObservedGeneration != 1 {
		t.Errorf("Ready = %+v, want True/Active for generation 1", c)
	}

	f.clk.SetTime(t0.Add(5 * time.Minute))
	if d := f.reconcile("every5"); d != 5*time.Minute+cronschedule.NextDelta {
		t.Errorf("requeue = %v, want 5m0.1s", d)
	}
	runs := f.runs()
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	run := runs[0]
	if !strings.HasPrefix(run.Name, "wf-") || run.Spec.Workflow != "wf" || string(run.Spec.Input.Bytes()) != `{"hello":"world"}` {
		t.Errorf("run %s: workflow %q input %s", run.Name, run.Spec.Workflow, run.Spec.Input.Bytes())
	}
	if run.Labels[wfmeta.WorkflowLabel] != "wf" || run.Labels[wfmeta.TriggerLabel] != "every5" {
		t.Errorf("run labels = %v", run.Labels)
	}
	if ref := metav1.GetControllerOf(run); ref == nil || ref.Kind != "Trigger" || ref.Name != "every5" {
		t.Errorf("run controller = %+v, want the trigger", ref)
	}
	got = f.trigger("every5")
	st := got.Status
	if st.Fired != 1 || st.LastRun != run.Name || st.LastResult != ResultRunning || len(st.Active) != 1 ||
		st.LastScheduleTime == nil || !st.LastScheduleTime.Time.Equal(t0.Add(5*time.Minute)) || st.LastFireTime == nil {
		t.Errorf("status = %+v", st)
	}
	if ev := f.events(); !containsPrefix(ev, "Normal Fired Started workflow run "+run.Name) {
		t.Errorf("events = %v, want Fired", ev)
	}

	// The same time again (a requeue, a cache behind): nothing.
	f.clk.SetTime(t0.Add(6 * time.Minute))
	f.reconcile("every5")
	if n := len(f.runs()); n != 1 {
		t.Errorf("%d runs after a second sync, want 1", n)
	}

	// The run ends: counted once, out of the active list.
	f.setPhase(run, minik8sv1.WorkflowRunSucceeded, t0.Add(6*time.Minute))
	f.reconcile("every5")
	f.reconcile("every5")
	st = f.trigger("every5").Status
	if st.Succeeded != 1 || st.Failed != 0 || len(st.Active) != 0 || st.LastResult != minik8sv1.WorkflowRunSucceeded {
		t.Errorf("status after the run = %+v", st)
	}
	if got := f.runs()[0].Annotations[CountedAnnotation]; got != "true" {
		t.Errorf("counted annotation = %q", got)
	}
}

func containsPrefix(ss []string, p string) bool {
	for _, s := range ss {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func TestScheduleSkips(t *testing.T) {
	tests := []struct {
		name      string
		mutate    func(*minik8sv1.Trigger)
		now       time.Time
		wantRuns  int
		wantReady string
		wantEvent string
	}{
		{name: "suspended", now: t0.Add(time.Hour),
			mutate:   func(tr *minik8sv1.Trigger) { tr.Spec.Suspend = ptr(true) },
			wantRuns: 0, wantReady: ReasonSuspended},
		{name: "missed deadline", now: t0.Add(150 * time.Minute),
			mutate: func(tr *minik8sv1.Trigger) {
				tr.Spec.Schedule.StartingDeadlineSeconds = ptr(int64(60))
				tr.Status.LastScheduleTime = &metav1.Time{Time: t0}
			},
			wantRuns: 0, wantReady: ReasonActive},
		{name: "late within deadline", now: t0.Add(2*time.Hour + 30*time.Second),
			mutate: func(tr *minik8sv1.Trigger) {
				tr.Spec.Schedule.StartingDeadlineSeconds = ptr(int64(60))
				tr.Status.LastScheduleTime = &metav1.Time{Time: t0}
			},
			wantRuns: 1, wantReady: ReasonActive},
		{name: "missed without deadline fires the latest", now: t0.Add(150 * time.Minute),
			mutate:   func(tr *minik8sv1.Trigger) { tr.Status.LastScheduleTime = &metav1.Time{Time: t0} },
			wantRuns: 1, wantReady: ReasonActive},
		{name: "target not found", now: t0.Add(time.Hour),
			mutate:   func(tr *minik8sv1.Trigger) { tr.Spec.Target.Workflow = "nope" },
			wantRuns: 0, wantReady: ReasonTargetNotFound},
		{name: "invalid schedule", now: t0.Add(time.Hour),
			mutate:   func(tr *minik8sv1.Trigger) { tr.Spec.Schedule.Schedule = "every day" },
			wantRuns: 0, wantReady: ReasonInvalidSource},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.clk.SetTime(tc.now)
			tr := newTrigger("hourly", false)
			tr.Spec.Schedule = &minik8sv1.ScheduleSource{Schedule: "@hourly"}
			tc.mutate(tr)
			f.create(wfmeta.TriggerResource, tr)
			f.startInformers()
			f.reconcile("hourly")
			if n := len(f.runs()); n != tc.wantRuns {
				t.Errorf("%d runs, want %d", n, tc.wantRuns)
			}
			if c := readyOf(f.trigger("hourly")); c.Reason != tc.wantReady {
				t.Errorf("Ready = %+v, want reason %s", c, tc.wantReady)
			}
		})
	}
}
