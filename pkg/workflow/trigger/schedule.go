package trigger

import (
	"time"

	"github.com/robfig/cron/v3"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/cronschedule"
)

// tooManyMissed is how many missed times make the controller suspect a
// wrong clock or a stuck controller, as for CronJobs.
const tooManyMissed = 100

// nextScheduleDelta pads the requeue for the next due time, so that a
// slightly early timer still finds the time due.
const nextScheduleDelta = 100 * time.Millisecond

// schedule is a parsed cron schedule in its time zone.
type schedule struct {
	cron cron.Schedule
	loc  *time.Location
}

// parseSchedule parses a schedule source; its time zone defaults to UTC.
func parseSchedule(src *minik8sv1.ScheduleSource) (schedule, error) {
	loc := time.UTC
	if src.TimeZone != nil && *src.TimeZone != "" {
		l, err := cronschedule.LoadLocation(*src.TimeZone)
		if err != nil {
			return schedule{}, err
		}
		loc = l
	}
	s, err := cronschedule.Parse(src.Schedule)
	if err != nil {
		return schedule{}, err
	}
	return schedule{cron: s, loc: loc}, nil
}

// next is the first due time after t; the zero time if there is none.
func (s schedule) next(t time.Time) time.Time { return s.cron.Next(t.In(s.loc)) }

// mostRecent is the latest due time in (earliest, now], if any, and
// whether more than tooManyMissed fell in that range.
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
	// More than tooManyMissed: look back from now over a window that
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

// requeueAfter is how long until the next due time after now (0: never).
func (s schedule) requeueAfter(now time.Time) time.Duration {
	next := s.next(now)
	if next.IsZero() {
		return 0
	}
	return next.Sub(now) + nextScheduleDelta
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
