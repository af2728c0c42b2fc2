package cronschedule

import (
	"errors"
	"testing"

	"github.com/robfig/cron/v3"
)

func TestParse(t *testing.T) {
	valid := []string{
		"* * * * *", "*/5 * * * *", "0 0 * * *", "0,15,30,45 * * * *", "0 9-17 * * MON-FRI", "0 0 1 jan,jul ?",
		"5/15 * * * *", "0 0 1-31/2 * sun", "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight",
		"@hourly", "@every 1h30m", "  0 0 * * *  ",
	}
	for _, s := range valid {
		if _, err := Parse(s); err != nil {
			t.Errorf("Parse(%q) = %v, want ok", s, err)
		}
	}
	invalid := []string{
		"", "* * * *", "* * * * * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * * 13 *", "* * * * 7",
		"*/0 * * * *", "5-1 * * * *", "a * * * *", "@often", "@every nonsense", "@every -1m", "@every 0s", "1,,2 * * * *",
	}
	for _, s := range invalid {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) succeeded, want error", s)
		}
	}
	for _, s := range []string{"TZ=UTC * * * * *", "CRON_TZ=Asia/Tokyo 0 9 * * *"} {
		if _, err := Parse(s); !errors.Is(err, ErrTZInSchedule) {
			t.Errorf("Parse(%q) = %v, want ErrTZInSchedule", s, err)
		}
	}
	s, err := Parse("0 9-17/4 * * MON-FRI")
	if err != nil {
		t.Fatal(err)
	}
	if s := s.(*cron.SpecSchedule); s.Minute != 1 || s.Hour != (1<<9|1<<13|1<<17) || s.Dow != (1<<1|1<<2|1<<3|1<<4|1<<5) {
		t.Errorf("unexpected bits: %+v", s)
	}
}

func TestLoadLocation(t *testing.T) {
	for _, tz := range []string{"", "Local", "local", "Mars/Olympus"} {
		if _, err := LoadLocation(tz); err == nil {
			t.Errorf("LoadLocation(%q) succeeded", tz)
		}
	}
	if loc, err := LoadLocation("UTC"); err != nil || loc.String() != "UTC" {
		t.Errorf("LoadLocation(UTC) = %v, %v", loc, err)
	}
}
