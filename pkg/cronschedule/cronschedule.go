package cronschedule

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // time zones load on hosts without zoneinfo.

	"github.com/robfig/cron/v3"
)

// ErrTZInSchedule refuses a schedule that names its own time zone (TZ= or
// CRON_TZ=): a CronJob's zone is its spec.timeZone.
var ErrTZInSchedule = errors.New("TZ and CRON_TZ are not supported in spec.schedule; use spec.timeZone")

// Parse parses a CronJob's spec.schedule as Kubernetes does, with
// robfig/cron's standard parser: five fields (minute hour day-of-month
// month day-of-week) with *, ?, lists, ranges, steps and month and weekday
// names, or a descriptor (@yearly, @annually, @monthly, @weekly, @daily,
// @midnight, @hourly, @every <duration>). Beyond the library it refuses a
// time zone in the schedule (ErrTZInSchedule), an @every duration that is
// not positive (which the library would run every second) and an empty
// item in a list ("1,,2", which the library reads as "1,2").
//
// The schedule has no zone of its own: it is evaluated in the zone of the
// time given to Next.
func Parse(spec string) (cron.Schedule, error) {
	if strings.Contains(spec, "TZ") {
		return nil, ErrTZInSchedule
	}
	if rest, ok := strings.CutPrefix(spec, "@every "); ok {
		if d, err := time.ParseDuration(rest); err == nil && d <= 0 {
			return nil, fmt.Errorf("duration must be positive: %s", spec)
		}
	}
	for _, f := range strings.Fields(spec) {
		if slices.Contains(strings.Split(f, ","), "") {
			return nil, fmt.Errorf("empty list item: %s", f)
		}
	}
	return cron.ParseStandard(spec)
}

// LoadLocation is a CronJob's spec.timeZone as a location. An empty zone
// and "Local" are refused: when a CronJob runs must not depend on the
// zone of the machine that runs the controller.
func LoadLocation(tz string) (*time.Location, error) {
	if tz == "" || strings.EqualFold(tz, "local") {
		return nil, fmt.Errorf("unknown time zone %s", tz)
	}
	return time.LoadLocation(tz)
}
