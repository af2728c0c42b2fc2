package trigger

import (
	"time"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/cronschedule"
)

// parseSchedule parses a schedule source; its time zone defaults to UTC.
func parseSchedule(src *minik8sv1.ScheduleSource) (cronschedule.Schedule, error) {
	loc := time.UTC
	if src.TimeZone != nil && *src.TimeZone != "" {
		l, err := cronschedule.LoadLocation(*src.TimeZone)
		if err != nil {
			return cronschedule.Schedule{}, err
		}
		loc = l
	}
	return cronschedule.New(src.Schedule, loc)
}

// earliest is where the search for due times starts: the last schedule
// time (the status's, or a later one this controller fired or skipped
// and its cache may not show yet), else the trigger's creation, but no
// earlier than startingDeadlineSeconds before now.
func earliest(tr *minik8sv1.Trigger, remembered, now time.Time) time.Time {
	t := tr.CreationTimestamp.Time
	if tr.Status.LastScheduleTime != nil {
		t = tr.Status.LastScheduleTime.Time
	}
	if remembered.After(t) {
		t = remembered
	}
	if d := tr.Spec.Schedule.StartingDeadlineSeconds; d != nil {
		if limit := now.Add(-time.Duration(*d) * time.Second); limit.After(t) {
			t = limit
		}
	}
	return t
}
