package schedule

import (
	"strings"
	"testing"
	"time"
)

// checkNext checks the first instants of a pattern after from, given in UTC.
func checkNext(t *testing.T, p *Pattern, from string, want ...string) {
	t.Helper()
	got := p.NextN(utc(from), len(want))
	gotS := make([]string, len(got))
	for i, g := range got {
		gotS[i] = g.Format(time.RFC3339Nano)
	}
	if strings.Join(gotS, " ") != strings.Join(want, " ") {
		t.Errorf("%q after %s:\n got %v\nwant %v", p, from, gotS, want)
	}
}

func TestMacros(t *testing.T) {
	// anchor, 2026-01-01, is a Thursday.
	tests := []struct {
		macro string
		want  []string
	}{
		{"@yearly", []string{"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"}},
		{"@annually", []string{"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"}},
		{"@monthly", []string{"2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"}},
		{"@weekly", []string{"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"}},
		{"@daily", []string{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"}},
		{"@midnight", []string{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"}},
		{"@hourly", []string{"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.macro, func(t *testing.T) {
			checkNext(t, mustParse(t, tt.macro, "", ""), "2026-01-01T00:00:00Z", tt.want...)
		})
	}
	t.Run("in a zone", func(t *testing.T) {
		checkNext(t, mustParse(t, "@daily", "", "America/New_York"), "2026-01-01T00:00:00Z",
			"2026-01-01T05:00:00Z", "2026-01-02T05:00:00Z")
	})
}

func TestSecondsField(t *testing.T) {
	t.Run("five fields fire at second 0", func(t *testing.T) {
		checkNext(t, mustParse(t, "* * * * *", "", ""), "2026-01-01T10:00:00.5Z",
			"2026-01-01T10:01:00Z", "2026-01-01T10:02:00Z")
	})
	t.Run("six fields lead with seconds", func(t *testing.T) {
		checkNext(t, mustParse(t, "*/20 * * * * *", "", ""), "2026-01-01T10:00:30Z",
			"2026-01-01T10:00:40Z", "2026-01-01T10:01:00Z", "2026-01-01T10:01:20Z")
	})
	t.Run("a second in a daily pattern", func(t *testing.T) {
		checkNext(t, mustParse(t, "30 0 9 * * *", "", ""), "2026-01-01T09:00:30Z",
			"2026-01-02T09:00:30Z", "2026-01-03T09:00:30Z")
	})
	t.Run("every second", func(t *testing.T) {
		checkNext(t, mustParse(t, "* * * * * *", "", ""), "2026-01-01T23:59:58.999Z",
			"2026-01-01T23:59:59Z", "2026-01-02T00:00:00Z")
	})
}

// TestDayOfMonthOrDayOfWeek holds the Vixie cron rule: both day fields
// restricted means either may match; a field starting with * or being ?
// means both must.
func TestDayOfMonthOrDayOfWeek(t *testing.T) {
	// January 2026: Friday the 2nd, 9th, 16th; Tuesday the 13th; Monday the 5th, 12th, 19th.
	tests := []struct {
		name, cron string
		want       []string
	}{
		{"both restricted: the 13th or a Friday", "0 0 13 * FRI", []string{
			"2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z", "2026-01-13T00:00:00Z", "2026-01-16T00:00:00Z"}},
		{"day of month only", "0 0 13 * *", []string{
			"2026-01-13T00:00:00Z", "2026-02-13T00:00:00Z"}},
		{"day of week only", "0 0 * * FRI", []string{
			"2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z"}},
		{"? for day of month", "0 0 ? * FRI", []string{
			"2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z"}},
		{"? for day of week", "0 0 13 * ?", []string{
			"2026-01-13T00:00:00Z", "2026-02-13T00:00:00Z"}},
		{"*/2 counts as a star: odd days that are Mondays", "0 0 */2 * MON", []string{
			"2026-01-05T00:00:00Z", "2026-01-19T00:00:00Z", "2026-02-09T00:00:00Z"}},
		{"a range over the whole month is restricted: either", "0 0 1-31 * MON", []string{
			"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"}},
		{"7 is Sunday", "0 0 * * 7", []string{
			"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"}},
		{"a weekday range wrapping over the weekend", "0 0 * * FRI-MON", []string{
			"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-05T00:00:00Z", "2026-01-09T00:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkNext(t, mustParse(t, tt.cron, "", ""), "2026-01-01T00:00:00Z", tt.want...)
		})
	}
}

func TestLeapDay(t *testing.T) {
	p := mustParse(t, "0 0 29 2 *", "", "")
	checkNext(t, p, "2026-01-01T00:00:00Z", "2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z")
	// 2100 is no leap year: the 8-year gap is the longest a pattern can have.
	checkNext(t, p, "2096-03-01T00:00:00Z", "2104-02-29T00:00:00Z", "2108-02-29T00:00:00Z")
	if got, want := p.Period(), 4*365*24*time.Hour+24*time.Hour; got != want {
		t.Errorf("Period %v, want %v", got, want)
	}
	// The 29th of every month skips only February in common years.
	checkNext(t, mustParse(t, "0 12 29 * *", "", ""), "2026-01-30T00:00:00Z",
		"2026-03-29T12:00:00Z", "2026-04-29T12:00:00Z")
	// A day that some selected months lack fires in the others.
	checkNext(t, mustParse(t, "0 0 31 2,3 *", "", ""), "2026-01-01T00:00:00Z",
		"2026-03-31T00:00:00Z", "2027-03-31T00:00:00Z")
}

func TestListsRangesStepsAndNames(t *testing.T) {
	tests := []struct {
		cron string
		want []string
	}{
		{"5/20 * * * *", []string{"2026-01-01T00:05:00Z", "2026-01-01T00:25:00Z", "2026-01-01T00:45:00Z", "2026-01-01T01:05:00Z"}},
		{"0-30/15 * * * *", []string{"2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z", "2026-01-01T01:00:00Z"}},
		{"0 22-1 * * *", []string{"2026-01-01T01:00:00Z", "2026-01-01T22:00:00Z", "2026-01-01T23:00:00Z", "2026-01-02T00:00:00Z"}},
		{"0 9,17 * * *", []string{"2026-01-01T09:00:00Z", "2026-01-01T17:00:00Z", "2026-01-02T09:00:00Z"}},
		{"0 0 1 jan,Jul *", []string{"2026-07-01T00:00:00Z", "2027-01-01T00:00:00Z"}},
		{"0 0 1 NOV-FEB *", []string{"2026-02-01T00:00:00Z", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"}},
		{"0 0 1 */4 *", []string{"2026-05-01T00:00:00Z", "2026-09-01T00:00:00Z", "2027-01-01T00:00:00Z"}},
		{"59 23 31 12 *", []string{"2026-12-31T23:59:00Z", "2027-12-31T23:59:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.cron, func(t *testing.T) {
			checkNext(t, mustParse(t, tt.cron, "", ""), "2026-01-01T00:00:00Z", tt.want...)
		})
	}
}
