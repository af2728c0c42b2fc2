package cronjob

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/minik8s/minik8s/pkg/cronschedule"
)

// errTZInSchedule refuses a time zone in spec.schedule.
var errTZInSchedule = cronschedule.ErrTZInSchedule

// timeZone is the CronJob's location: spec.timeZone, else the
// controller's local zone.
func timeZone(cj *batchv1.CronJob) (*time.Location, error) {
	if cj.Spec.TimeZone == nil {
		return time.Local, nil
	}
	return cronschedule.LoadLocation(*cj.Spec.TimeZone)
}

// parseSchedule parses spec (the CronJob's schedule) for evaluation in
// loc, as the apiserver's validation parses it.
func parseSchedule(spec string, loc *time.Location) (cronschedule.Schedule, error) {
	return cronschedule.New(spec, loc)
}

// earliest is where the search for due times starts: the last scheduled
// time (or the CronJob's creation), but no earlier than
// startingDeadlineSeconds before now.
func earliest(cj *batchv1.CronJob, now time.Time) time.Time {
	t := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		t = cj.Status.LastScheduleTime.Time
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil {
		if limit := now.Add(-time.Duration(*d) * time.Second); limit.After(t) {
			t = limit
		}
	}
	return t
}

// jobName is the deterministic name of the Job for a scheduled time.
func jobName(cj *batchv1.CronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, scheduled.Unix()/60)
}
