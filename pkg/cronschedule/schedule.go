package cronschedule

import (
	"time"

	"github.com/robfig/cron/v3"
)

// TooManyMissed is how many missed times make a controller suspect a
// wrong clock or a stuck controller, as Kubernetes' CronJob controller
// does.
const TooManyMissed = 100

// NextDelta pads the requeue for the next due time, so that a slightly
// early timer still finds the time due.
const NextDelta = 100 * time.Millisecond

// Schedule is a parsed cron schedule evaluated in a time zone: the
// CronJob controller's and the workflow triggers' schedules.
type Schedule struct {
	cron cron.Schedule
	loc  *time.Location
}

// New parses spec, as the apiserver's validation does, for evaluation in
// loc.
func New(spec string, loc *time.Location) (Schedule, error) {
	s, err := Parse(spec)
	if err != nil {
		return Schedule{}, err
	}
	return Schedule{cron: s, loc: loc}, nil
}

// Next is the first due time after t; the zero time if there is none
// within five years (a 31st of February).
func (s Schedule) Next(t time.Time) time.Time {
	// The parsed schedule has no zone of its own: it is evaluated in the
	// zone of the time it is given.
	return s.cron.Next(t.In(s.loc))
}

// MostRecent is the latest due time in (earliest, now], if any, and
// whether more than TooManyMissed fell in that range. It never walks
// through all the missed times when there are many.
func (s Schedule) MostRecent(earliest, now time.Time) (last *time.Time, many bool) {
	t := s.Next(earliest)
	if t.IsZero() || t.After(now) {
		return nil, false
	}
	for n := 1; ; n++ {
		nt := s.Next(t)
		if nt.IsZero() || nt.After(now) {
			return &t, false
		}
		if n == TooManyMissed {
			break
		}
		t = nt
	}
	// More than TooManyMissed: look back from now, over a window that
	// doubles until it holds a due time, then walk that window.
	gap := max(s.Next(t).Sub(t), time.Second)
	for window := gap; ; window *= 2 {
		from := now.Add(-window)
		if !from.After(t) {
			from = t
		}
		first := s.Next(from)
		if first.IsZero() || first.After(now) {
			continue
		}
		last := first
		for {
			nt := s.Next(last)
			if nt.IsZero() || nt.After(now) {
				return &last, true
			}
			last = nt
		}
	}
}

// RequeueAfter is how long until the next due time after now, padded by
// NextDelta (0 if it never comes).
func (s Schedule) RequeueAfter(now time.Time) time.Duration {
	next := s.Next(now)
	if next.IsZero() {
		return 0
	}
	return next.Sub(now) + NextDelta
}
