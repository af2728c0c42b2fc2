package validation

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// cronSchedule is a parsed standard (5-field) cron expression: one bit per
// allowed value of each field.
type cronSchedule struct {
	minute, hour, dom, month, dow uint64
	// every is set for "@every <duration>" schedules instead of the fields.
	every time.Duration
}

// cronField describes the allowed range and the names of one cron field.
type cronField struct {
	name     string
	min, max int
	names    map[string]int
}

var (
	cronMinute = cronField{name: "minute", min: 0, max: 59}
	cronHour   = cronField{name: "hour", min: 0, max: 23}
	cronDom    = cronField{name: "day of month", min: 1, max: 31}
	cronMonth  = cronField{name: "month", min: 1, max: 12, names: map[string]int{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	}}
	cronDow = cronField{name: "day of week", min: 0, max: 6, names: map[string]int{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
	}}

	// cronDescriptors are the "@" shorthands of the standard cron syntax.
	cronDescriptors = map[string]string{
		"@yearly":   "0 0 1 1 *",
		"@annually": "0 0 1 1 *",
		"@monthly":  "0 0 1 * *",
		"@weekly":   "0 0 * * 0",
		"@daily":    "0 0 * * *",
		"@midnight": "0 0 * * *",
		"@hourly":   "0 * * * *",
	}
)

// parseCronSchedule parses the schedule syntax CronJobs accept: five fields
// (minute hour day-of-month month day-of-week) with *, ?, lists, ranges,
// steps and month/weekday names, or one of the @yearly/@annually/@monthly/
// @weekly/@daily/@midnight/@hourly descriptors, or "@every <duration>".
func parseCronSchedule(spec string) (*cronSchedule, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("empty spec string")
	}
	if strings.HasPrefix(spec, "@") {
		if rest, ok := strings.CutPrefix(spec, "@every "); ok {
			d, err := time.ParseDuration(strings.TrimSpace(rest))
			if err != nil {
				return nil, fmt.Errorf("failed to parse duration %s: %v", spec, err)
			}
			if d <= 0 {
				return nil, fmt.Errorf("duration must be positive: %s", spec)
			}
			return &cronSchedule{every: d}, nil
		}
		expanded, ok := cronDescriptors[strings.ToLower(spec)]
		if !ok {
			return nil, fmt.Errorf("unrecognized descriptor: %s", spec)
		}
		spec = expanded
	}
	fields := strings.Fields(spec)
	if len(fields) != 5 {
		return nil, fmt.Errorf("expected exactly 5 fields, found %d: %v", len(fields), fields)
	}
	s := &cronSchedule{}
	var err error
	for i, f := range []struct {
		bits *uint64
		def  cronField
	}{
		{&s.minute, cronMinute}, {&s.hour, cronHour}, {&s.dom, cronDom}, {&s.month, cronMonth}, {&s.dow, cronDow},
	} {
		if *f.bits, err = parseCronField(fields[i], f.def); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// parseCronField parses a comma-separated list of cron terms.
func parseCronField(expr string, f cronField) (uint64, error) {
	var bits uint64
	for _, term := range strings.Split(expr, ",") {
		b, err := parseCronTerm(term, f)
		if err != nil {
			return 0, err
		}
		bits |= b
	}
	return bits, nil
}

// parseCronTerm parses one term: "*", "?", "n", "a-b", each optionally
// followed by "/step" ("n/step" means n through the field's maximum).
func parseCronTerm(term string, f cronField) (uint64, error) {
	if term == "" {
		return 0, fmt.Errorf("empty %s term", f.name)
	}
	rangePart, stepPart, hasStep := strings.Cut(term, "/")
	var lo, hi int
	switch {
	case rangePart == "*" || rangePart == "?":
		lo, hi = f.min, f.max
	default:
		a, b, isRange := strings.Cut(rangePart, "-")
		var err error
		if lo, err = parseCronValue(a, f); err != nil {
			return 0, err
		}
		hi = lo
		if isRange {
			if hi, err = parseCronValue(b, f); err != nil {
				return 0, err
			}
		} else if hasStep {
			hi = f.max
		}
	}
	step := 1
	if hasStep {
		var err error
		if step, err = strconv.Atoi(stepPart); err != nil || step <= 0 {
			return 0, fmt.Errorf("invalid step %q in %s: %s", stepPart, f.name, term)
		}
	}
	if lo < f.min {
		return 0, fmt.Errorf("beginning of range (%d) below minimum (%d): %s", lo, f.min, term)
	}
	if hi > f.max {
		return 0, fmt.Errorf("end of range (%d) above maximum (%d): %s", hi, f.max, term)
	}
	if lo > hi {
		return 0, fmt.Errorf("beginning of range (%d) beyond end of range (%d): %s", lo, hi, term)
	}
	var bits uint64
	for v := lo; v <= hi; v += step {
		bits |= 1 << uint(v)
	}
	return bits, nil
}

// parseCronValue parses a number or, where the field has them, a name.
func parseCronValue(s string, f cronField) (int, error) {
	if v, ok := f.names[strings.ToLower(s)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("failed to parse %s value %q", f.name, s)
	}
	return v, nil
}
