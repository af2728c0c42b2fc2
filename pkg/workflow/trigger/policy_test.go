package trigger

import (
	"testing"
	"time"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/workflow/invoke"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

func TestConcurrencyPolicyRuns(t *testing.T) {
	tests := []struct {
		policy      string
		wantRuns    int
		wantOldGone bool
	}{
		{policy: minik8sv1.AllowConcurrent, wantRuns: 2},
		{policy: minik8sv1.ForbidConcurrent, wantRuns: 1},
		{policy: minik8sv1.ReplaceConcurrent, wantRuns: 1, wantOldGone: true},
	}
	for _, tc := range tests {
		t.Run(tc.policy, func(t *testing.T) {
			f := newFixture(t)
			tr := newTrigger("hourly", false)
			tr.Spec.Schedule = &minik8sv1.ScheduleSource{Schedule: "@hourly", ConcurrencyPolicy: tc.policy}
			u := f.create(wfmeta.TriggerResource, tr)
			tr.UID = u.GetUID()
			old := f.ownedRun(tr, minik8sv1.WorkflowRunRunning, time.Time{})
			f.clk.SetTime(t0.Add(time.Hour))
			f.startInformers()
			f.reconcile("hourly")
			runs := f.runs()
			if len(runs) != tc.wantRuns {
				t.Fatalf("%d runs, want %d", len(runs), tc.wantRuns)
			}
			gone := true
			for _, r := range runs {
				if r.Name == old.Name {
					gone = false
				}
			}
			if gone != tc.wantOldGone {
				t.Errorf("old run gone = %v, want %v", gone, tc.wantOldGone)
			}
			st := f.trigger("hourly").Status
			wantFired := int64(1)
			if tc.policy == minik8sv1.ForbidConcurrent {
				wantFired = 0
			}
			if st.Fired != wantFired {
				t.Errorf("fired = %d, want %d", st.Fired, wantFired)
			}
			var active []string
			for _, r := range st.Active {
				active = append(active, r.Name)
			}
			if len(active) != len(runs) {
				t.Errorf("active = %v, want the %d runs", active, len(runs))
			}
			if tc.policy == minik8sv1.ForbidConcurrent {
				// When the running one ends, the missed time fires.
				f.setPhase(old, minik8sv1.WorkflowRunSucceeded, t0.Add(61*time.Minute))
				f.clk.SetTime(t0.Add(62 * time.Minute))
				f.reconcile("hourly")
				if n := len(f.runs()); n != 2 {
					t.Errorf("%d runs once the first ended, want 2", n)
				}
			}
		})
	}
}

func TestConcurrencyPolicyFunctions(t *testing.T) {
	tests := []struct {
		policy        string
		wantCalls     int
		wantCancelled bool
	}{
		{policy: minik8sv1.AllowConcurrent, wantCalls: 2},
		{policy: minik8sv1.ForbidConcurrent, wantCalls: 1},
		{policy: minik8sv1.ReplaceConcurrent, wantCalls: 2, wantCancelled: true},
	}
	for _, tc := range tests {
		t.Run(tc.policy, func(t *testing.T) {
			f := newFixture(t)
			f.inv.block = make(chan struct{})
			defer close(f.inv.block)
			tr := newTrigger("hourly", true)
			tr.Spec.Schedule = &minik8sv1.ScheduleSource{Schedule: "@hourly", ConcurrencyPolicy: tc.policy}
			f.create(wfmeta.TriggerResource, tr)
			f.startInformers()
			f.clk.SetTime(t0.Add(time.Hour))
			f.reconcile("hourly")
			f.eventually("first call", func() bool { return len(f.inv.Calls()) == 1 })
			f.clk.SetTime(t0.Add(2 * time.Hour))
			f.reconcile("hourly")
			if tc.wantCancelled {
				f.eventually("the replaced call counted", func() bool { st := f.trigger("hourly").Status; t.Logf("%+v", st); return st.Failed == 1 })
			}
			f.eventually("calls", func() bool { return len(f.inv.Calls()) == tc.wantCalls })
			calls := f.inv.Calls()
			if got := calls[0]; got.name != "fn" || got.body != `{"hello":"world"}` || got.header.Get(TriggerHeader) != "default/hourly" {
				t.Errorf("call = %+v", got)
			}
			time.Sleep(20 * time.Millisecond)
			if n := len(f.inv.Calls()); n != tc.wantCalls {
				t.Errorf("%d calls, want %d", n, tc.wantCalls)
			}
			if f.c.callsOf("default/hourly") == 0 {
				t.Error("no call in flight")
			}
		})
	}
}

func TestFunctionOutcome(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		body       string
		wantResult string
		wantOK     bool
	}{
		{name: "success", status: 200, body: `{"x":1}`, wantResult: "Succeeded", wantOK: true},
		{name: "error", status: 500, body: `{"errorMessage":"boom","errorType":"ValueError"}`, wantResult: "Failed (HTTP 500: boom)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.inv.resp = &invoke.Response{Status: tc.status, Body: []byte(tc.body)}
			tr := newTrigger("hourly", true)
			tr.Spec.Schedule = &minik8sv1.ScheduleSource{Schedule: "@hourly"}
			f.create(wfmeta.TriggerResource, tr)
			f.startInformers()
			f.clk.SetTime(t0.Add(time.Hour))
			f.reconcile("hourly")
			f.eventually("outcome recorded", func() bool {
				st := f.trigger("hourly").Status
				return st.Succeeded+st.Failed == 1
			})
			st := f.trigger("hourly").Status
			if st.Fired != 1 || st.LastRun != "function/fn" || st.LastResult != tc.wantResult || (st.Succeeded == 1) != tc.wantOK {
				t.Errorf("status = %+v", st)
			}
		})
	}
}

func TestHistoryLimits(t *testing.T) {
	f := newFixture(t)
	tr := newTrigger("hist", false)
	tr.Spec.HTTP = &minik8sv1.HTTPSource{}
	tr.Spec.SuccessfulRunsHistoryLimit = ptr(int32(2))
	u := f.create(wfmeta.TriggerResource, tr)
	tr.UID = u.GetUID()
	var succeeded, failed []string
	for i := range 4 {
		r := f.ownedRun(tr, minik8sv1.WorkflowRunSucceeded, t0.Add(time.Duration(i)*time.Minute))
		succeeded = append(succeeded, r.Name)
	}
	for i, phase := range []string{minik8sv1.WorkflowRunFailed, minik8sv1.WorkflowRunTimedOut} {
		r := f.ownedRun(tr, phase, t0.Add(time.Duration(10+i)*time.Minute))
		failed = append(failed, r.Name)
	}
	running := f.ownedRun(tr, minik8sv1.WorkflowRunRunning, time.Time{})
	f.startInformers()
	f.reconcile("hist")
	f.reconcile("hist")

	var left []string
	for _, r := range f.runs() {
		left = append(left, r.Name)
	}
	want := []string{succeeded[2], succeeded[3], failed[1], running.Name}
	if !sameSet(left, want) {
		t.Errorf("runs left = %v, want %v", left, want)
	}
	st := f.trigger("hist").Status
	if st.Succeeded != 4 || st.Failed != 2 || len(st.Active) != 1 || st.Active[0].Name != running.Name {
		t.Errorf("status = %+v", st)
	}
	if st.URL != "http://minik8s-gateway.kube-system/trigger/default/hist" {
		t.Errorf("url = %q", st.URL)
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}
