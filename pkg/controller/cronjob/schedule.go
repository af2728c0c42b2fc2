package cronjob

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"

	"github.com/minik8s/minik8s/pkg/cronschedule"
)

// tooManyMissed is how many missed times make the controller suspect a
// wrong clock or a stuck controller, as in Kubernetes.
const tooManyMissed = 100

// nextScheduleDelta pads the requeue for the next due time, so that a
// slightly early timer still finds the time due.
const nextScheduleDelta = 100 * time.Millisecond

// errTZInSchedule refuses a time zone in spec.schedule.
var errTZInSchedule = cronschedule.ErrTZInSchedule

// schedule is a parsed cron schedule in its time zone.
type schedule struct {
	cron cron.Schedule
	loc  *time.Location
}

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
func parseSchedule(spec string, loc *time.Location) (schedule, error) {
	s, err := cronschedule.Parse(spec)
	if err != nil {
		return schedule{}, err
	}
	return schedule{cron: s, loc: loc}, nil
}

// next is the first due time after t; the zero time if there is none
// within five years (a 31st of February).
func (s schedule) next(t time.Time) time.Time {
	// The parsed schedule has no zone of its own: it is evaluated in the
	// zone of the time it is given.
	return s.cron.Next(t.In(s.loc))
}

// mostRecent is the latest due time in (earliest, now], if any, and
// whether more than tooManyMissed fell in that range. It never walks
// through all the missed times when there are many.
func (s schedule) mostRecent(earliest, now time.Time) (last *time.Time, many bool) {
	t := s.next(earliest)
	if t.IsZero() || t.After(now) {
		return nil, false
	}
	for n := 1; ; n++ {
		nt := s.next(t)
		if nt.IsZero() || nt.After(now) {
			return &t, false
		}
		if n == tooManyMissed {
			break
		}
		t = nt
	}
	// More than tooManyMissed: look back from now, over a window that
	// doubles until it holds a due time, then walk that window.
	gap := max(s.next(t).Sub(t), time.Second)
	for window := gap; ; window *= 2 {
		from := now.Add(-window)
		if !from.After(t) {
			from = t
		}
		first := s.next(from)
		if first.IsZero() || first.After(now) {
			continue
		}
		last := first
		for {
			nt := s.next(last)
			if nt.IsZero() || nt.After(now) {
				return &last, true
			}
			last = nt
		}
	}
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

// requeueAfter is how long until the schedule's next due time after now
// (0 if it never comes).
func (s schedule) requeueAfter(now time.Time) time.Duration {
	next := s.next(now)
	if next.IsZero() {
		return 0
	}
	return next.Sub(now) + nextScheduleDelta
}

// jobName is the deterministic name of the Job for a scheduled time.
func jobName(cj *batchv1.CronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, scheduled.Unix()/60)
}
