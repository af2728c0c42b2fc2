package cronjob

import (
	"errors"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/cronschedule"
)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("no tzdata for %s: %v", name, err)
	}
	return loc
}

func TestMostRecent(t *testing.T) {
	utc := time.UTC
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			panic(err)
		}
		return tm
	}
	tests := []struct {
		name     string
		schedule string
		tz       string
		earliest string
		now      string
		want     string // "" for none
		many     bool
	}{
		{name: "every minute, not yet", schedule: "* * * * *", earliest: "2026-03-01T12:00:00Z", now: "2026-03-01T12:00:59Z"},
		{name: "every minute, due", schedule: "* * * * *", earliest: "2026-03-01T12:00:00Z", now: "2026-03-01T12:01:00Z", want: "2026-03-01T12:01:00Z"},
		{name: "every minute, a few missed: the latest", schedule: "* * * * *", earliest: "2026-03-01T12:00:00Z", now: "2026-03-01T12:05:30Z", want: "2026-03-01T12:05:00Z"},
		{name: "100 missed is not too many", schedule: "* * * * *", earliest: "2026-03-01T12:00:00Z", now: "2026-03-01T13:40:00Z", want: "2026-03-01T13:40:00Z"},
		{name: "101 missed is too many", schedule: "* * * * *", earliest: "2026-03-01T12:00:00Z", now: "2026-03-01T13:41:10Z", want: "2026-03-01T13:41:00Z", many: true},
		{name: "years missed", schedule: "*/5 * * * *", earliest: "2016-03-01T12:00:00Z", now: "2026-03-01T12:07:00Z", want: "2026-03-01T12:05:00Z", many: true},
		{name: "irregular schedule, many missed", schedule: "30 6-16/4 * * 1-5", earliest: "2026-01-01T00:00:00Z", now: "2026-03-01T12:00:00Z",
			want: "2026-02-27T14:30:00Z", many: true}, // 2026-03-01 is a Sunday
		{name: "@hourly", schedule: "@hourly", earliest: "2026-03-01T12:00:00Z", now: "2026-03-01T14:10:00Z", want: "2026-03-01T14:00:00Z"},
		{name: "@daily in UTC", schedule: "@daily", earliest: "2026-03-01T12:00:00Z", now: "2026-03-02T00:00:01Z", want: "2026-03-02T00:00:00Z"},
		{name: "@daily in Tokyo", schedule: "@daily", tz: "Asia/Tokyo", earliest: "2026-03-01T12:00:00Z", now: "2026-03-02T00:00:01Z", want: "2026-03-01T15:00:00Z"},
		{name: "9am New York in winter", schedule: "0 9 * * *", tz: "America/New_York", earliest: "2026-01-10T00:00:00Z", now: "2026-01-10T14:00:00Z", want: "2026-01-10T14:00:00Z"},
		{name: "9am New York in summer", schedule: "0 9 * * *", tz: "America/New_York", earliest: "2026-07-10T00:00:00Z", now: "2026-07-10T14:00:00Z", want: "2026-07-10T13:00:00Z"},
		// As in Kubernetes (same library): a time that the clocks skip does not run that day.
		{name: "DST gap: 2:30 does not exist on 8 March", schedule: "30 2 * * *", tz: "America/New_York", earliest: "2026-03-08T00:00:00Z", now: "2026-03-08T12:00:00Z"},
		{name: "the day after the DST gap", schedule: "30 2 * * *", tz: "America/New_York", earliest: "2026-03-08T00:00:00Z", now: "2026-03-09T12:00:00Z", want: "2026-03-09T06:30:00Z"},
		{name: "31 February never comes", schedule: "0 0 31 2 *", earliest: "2026-01-01T00:00:00Z", now: "2026-03-01T00:00:00Z"},
		{name: "@every", schedule: "@every 90m", earliest: "2026-03-01T12:00:00Z", now: "2026-03-01T15:10:00Z", want: "2026-03-01T15:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc := utc
			if tt.tz != "" {
				loc = mustLoad(t, tt.tz)
			}
			s, err := parseSchedule(tt.schedule, loc)
			if err != nil {
				t.Fatal(err)
			}
			got, many := s.MostRecent(at(tt.earliest), at(tt.now))
			switch {
			case tt.want == "" && got != nil:
				t.Errorf("got %v, want none", got.UTC())
			case tt.want != "" && (got == nil || !got.Equal(at(tt.want))):
				t.Errorf("got %v, want %s", got, tt.want)
			}
			if many != tt.many {
				t.Errorf("many = %v, want %v", many, tt.many)
			}
		})
	}
}

func TestParseSchedule(t *testing.T) {
	for _, spec := range []string{"TZ=UTC * * * * *", "CRON_TZ=Asia/Tokyo 0 9 * * *"} {
		if _, err := parseSchedule(spec, time.UTC); !errors.Is(err, errTZInSchedule) {
			t.Errorf("%q: err %v, want errTZInSchedule", spec, err)
		}
	}
	for _, spec := range []string{"61 * * * *", "* * *", "@fortnightly", ""} {
		if _, err := parseSchedule(spec, time.UTC); err == nil {
			t.Errorf("%q parsed", spec)
		}
	}
	for _, spec := range []string{"*/15 1-5 * jan,feb mon-fri", "@weekly", "@midnight", "0 0 1 1 *"} {
		if _, err := parseSchedule(spec, time.UTC); err != nil {
			t.Errorf("%q: %v", spec, err)
		}
	}
}

func TestEarliest(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cj := func(last *time.Time, deadline *int64) *batchv1.CronJob {
		c := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
			Spec: batchv1.CronJobSpec{StartingDeadlineSeconds: deadline}}
		if last != nil {
			c.Status.LastScheduleTime = &metav1.Time{Time: *last}
		}
		return c
	}
	lastTime := t0.Add(-10 * time.Minute)
	tests := []struct {
		name string
		cj   *batchv1.CronJob
		want time.Time
	}{
		{"creation", cj(nil, nil), t0.Add(-time.Hour)},
		{"last schedule", cj(&lastTime, nil), lastTime},
		{"deadline cuts the search", cj(&lastTime, ptr.To[int64](60)), t0.Add(-time.Minute)},
		{"deadline further back than the last schedule", cj(&lastTime, ptr.To[int64](3600)), lastTime},
	}
	for _, tt := range tests {
		if got := earliest(tt.cj, t0); !got.Equal(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRequeueAfterAndJobName(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	s, _ := parseSchedule("* * * * *", time.UTC)
	if got := s.RequeueAfter(now); got != 30*time.Second+cronschedule.NextDelta {
		t.Errorf("requeueAfter = %v", got)
	}
	h, _ := parseSchedule("@hourly", time.UTC)
	if got := h.RequeueAfter(now); got != 59*time.Minute+30*time.Second+cronschedule.NextDelta {
		t.Errorf("hourly requeueAfter = %v", got)
	}
	never, _ := parseSchedule("0 0 31 2 *", time.UTC)
	if got := never.RequeueAfter(now); got != 0 {
		t.Errorf("never requeueAfter = %v", got)
	}
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "hello"}}
	if got := jobName(cj, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)); got != "hello-29539440" {
		t.Errorf("jobName = %s", got)
	}
}
