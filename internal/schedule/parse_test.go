package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// anchor is the creation time the tests' schedules count from: a Thursday.
var anchor = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func mustParse(tb testing.TB, cron, every, tz string) *Pattern {
	tb.Helper()
	p, err := Parse(cron, every, tz, anchor, time.Time{}, time.Time{})
	if err != nil {
		tb.Fatalf("Parse(%q, %q, %q): %v", cron, every, tz, err)
	}
	return p
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParseRejectsWithFieldAndReason(t *testing.T) {
	tests := []struct {
		name                 string
		cron, every, tz      string
		start, end           string
		wantField, wantError string
	}{
		// Which field.
		{name: "neither", wantField: "cron",
			wantError: `cron: set cron (e.g. "0 9 * * MON-FRI") or every (e.g. "15m")`},
		{name: "blank", cron: "  ", every: "\t", wantField: "cron",
			wantError: `cron: set cron (e.g. "0 9 * * MON-FRI") or every (e.g. "15m")`},
		{name: "both", cron: "* * * * *", every: "1m", wantField: "every",
			wantError: "every: set either cron or every, not both"},

		// Shape of the expression.
		{name: "one word", cron: "daily", wantField: "cron",
			wantError: "cron: 1 fields given; want 5 fields (minute hour day-of-month month day-of-week), 6 with a leading seconds field, or a macro such as @daily"},
		{name: "seven fields", cron: "0 0 0 1 1 * 2030", wantField: "cron",
			wantError: "cron: 7 fields given; want 5 fields (minute hour day-of-month month day-of-week), 6 with a leading seconds field, or a macro such as @daily"},
		{name: "four fields", cron: "0 0 * *", wantField: "cron",
			wantError: "cron: 4 fields given; want 5 fields (minute hour day-of-month month day-of-week), 6 with a leading seconds field, or a macro such as @daily"},
		{name: "TZ prefix", cron: "TZ=Europe/Berlin 0 9 * * *", wantField: "cron",
			wantError: "cron: zone prefixes (TZ=, CRON_TZ=) are not allowed; set the timezone field instead"},
		{name: "CRON_TZ prefix", cron: "CRON_TZ=UTC 0 9 * * *", wantField: "cron",
			wantError: "cron: zone prefixes (TZ=, CRON_TZ=) are not allowed; set the timezone field instead"},
		{name: "lower-case TZ prefix", cron: "tz=UTC 0 9 * * *", wantField: "cron",
			wantError: "cron: zone prefixes (TZ=, CRON_TZ=) are not allowed; set the timezone field instead"},
		{name: "@every", cron: "@every 5m", wantField: "cron",
			wantError: `cron: @every is not a cron macro here; set the every field instead (e.g. "15m")`},
		{name: "unknown macro", cron: "@reboot", wantField: "cron",
			wantError: `cron: unknown macro "@reboot"; use @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly`},
		{name: "too long", cron: "0 0 * * " + strings.Repeat("1,", 200) + "2", wantField: "cron",
			wantError: "cron: the expression is longer than 256 characters"},

		// One field, named by its position in what the user wrote.
		{name: "hour out of range", cron: "0 25 * * *", wantField: "cron",
			wantError: `cron: field 2 (hour) "25" is out of range 0-23`},
		{name: "hour out of range with seconds", cron: "0 0 25 * * *", wantField: "cron",
			wantError: `cron: field 3 (hour) "25" is out of range 0-23`},
		{name: "second out of range", cron: "60 * * * * *", wantField: "cron",
			wantError: `cron: field 1 (second) "60" is out of range 0-59`},
		{name: "minute in a range", cron: "0-60 * * * *", wantField: "cron",
			wantError: `cron: field 1 (minute) "0-60": "60" is out of range 0-59`},
		{name: "day of month zero", cron: "0 0 0 * *", wantField: "cron",
			wantError: `cron: field 3 (day of month) "0" is out of range 1-31`},
		{name: "day of month 32", cron: "0 0 32 * *", wantField: "cron",
			wantError: `cron: field 3 (day of month) "32" is out of range 1-31`},
		{name: "month 13", cron: "0 0 1 13 *", wantField: "cron",
			wantError: `cron: field 4 (month) "13" is out of range 1-12 or JAN-DEC`},
		{name: "day of week 8", cron: "0 0 * * 8", wantField: "cron",
			wantError: `cron: field 5 (day of week) "8" is out of range 0-7 or SUN-SAT; 0 and 7 are Sunday`},
		{name: "misspelt day", cron: "0 9 * * MON-FRX", wantField: "cron",
			wantError: `cron: field 5 (day of week) "MON-FRX": "FRX" is not a number or a day name (allowed: 0-7 or SUN-SAT; 0 and 7 are Sunday)`},
		{name: "quoted as written", cron: "0 9 * * mon-frx", wantField: "cron",
			wantError: `cron: field 5 (day of week) "mon-frx": "frx" is not a number or a day name (allowed: 0-7 or SUN-SAT; 0 and 7 are Sunday)`},
		{name: "day name as month", cron: "0 9 * MON *", wantField: "cron",
			wantError: `cron: field 4 (month) "MON" is not a number or a month name (allowed: 1-12 or JAN-DEC)`},
		{name: "name in hour", cron: "0 JAN * * *", wantField: "cron",
			wantError: `cron: field 2 (hour) "JAN" is not a number (allowed: 0-23)`},
		{name: "garbage", cron: "a b c d e", wantField: "cron",
			wantError: `cron: field 1 (minute) "a" is not a number (allowed: 0-59)`},
		{name: "negative", cron: "-5 * * * *", wantField: "cron",
			wantError: `cron: field 1 (minute) "-5": a range is missing a value`},
		{name: "plus sign", cron: "+5 * * * *", wantField: "cron",
			wantError: `cron: field 1 (minute) "+5" is not a number (allowed: 0-59)`},
		{name: "empty list element", cron: "1,,2 * * * *", wantField: "cron",
			wantError: `cron: field 1 (minute) "1,,2": a list element is empty`},
		{name: "two hyphens", cron: "1-2-3 * * * *", wantField: "cron",
			wantError: `cron: field 1 (minute) "1-2-3" has more than one - (a range is low-high)`},
		{name: "step zero", cron: "*/0 * * * *", wantField: "cron",
			wantError: `cron: field 1 (minute) "*/0": step "0" must be a whole number of at least 1`},
		{name: "step not a number", cron: "*/x * * * *", wantField: "cron",
			wantError: `cron: field 1 (minute) "*/x": step "x" must be a whole number of at least 1`},
		{name: "two slashes", cron: "*/2/3 * * * *", wantField: "cron",
			wantError: `cron: field 1 (minute) "*/2/3": step "2/3" must be a whole number of at least 1`},
		{name: "step as large as the range", cron: "*/60 * * * *", wantField: "cron",
			wantError: `cron: field 1 (minute) "*/60": step (60) must be less than range size (60): "*/60"`},
		{name: "question mark in hour", cron: "0 ? * * *", wantField: "cron",
			wantError: `cron: field 2 (hour) "?": ? is allowed only as the whole day-of-month or day-of-week field`},
		{name: "question mark in a list", cron: "0 0 ?,1 * *", wantField: "cron",
			wantError: `cron: field 3 (day of month) "?,1": ? is allowed only as the whole day-of-month or day-of-week field`},
		{name: "last day extension", cron: "0 0 L * *", wantField: "cron",
			wantError: `cron: field 3 (day of month) "L" is not a number (allowed: 1-31); the L, W, # and H extensions are not supported`},
		{name: "nth weekday extension", cron: "0 0 * * FRI#3", wantField: "cron",
			wantError: `cron: field 5 (day of week) "FRI#3" is not a number or a day name (allowed: 0-7 or SUN-SAT; 0 and 7 are Sunday); the L, W, # and H extensions are not supported`},
		{name: "hash extension", cron: "H * * * *", wantField: "cron",
			wantError: `cron: field 1 (minute) "H" is not a number (allowed: 0-59); the L, W, # and H extensions are not supported`},

		// Patterns that never fire.
		{name: "February 30", cron: "0 0 30 2 *", wantField: "cron",
			wantError: `cron: the pattern never fires: day of month "30" does not occur in month "2" (February has 29 days at most; April, June, September and November have 30)`},
		{name: "April 31", cron: "0 0 31 4 *", wantField: "cron",
			wantError: `cron: the pattern never fires: day of month "31" does not occur in month "4" (February has 29 days at most; April, June, September and November have 30)`},
		{name: "31st of short months only", cron: "0 0 31 FEB,APR,JUN,SEP,NOV ?", wantField: "cron",
			wantError: `cron: the pattern never fires: day of month "31" does not occur in month "FEB,APR,JUN,SEP,NOV" (February has 29 days at most; April, June, September and November have 30)`},

		// every.
		{name: "every not a duration", every: "90x", wantField: "every",
			wantError: `every: "90x" is not a duration; write one such as "90s", "15m", "1h30m" or "7d" (units ms, s, m, h, d)`},
		{name: "every in weeks", every: "2w", wantField: "every",
			wantError: `every: "2w" is not a duration; write one such as "90s", "15m", "1h30m" or "7d" (units ms, s, m, h, d); there are no week or year units: write weeks in days, e.g. "14d"`},
		{name: "every in days too long", every: "367d", wantField: "every",
			wantError: `every: "367d" is longer than the maximum of 366 days (366d)`},
		{name: "every without unit", every: "60", wantField: "every",
			wantError: `every: "60" is not a duration; write one such as "90s", "15m", "1h30m" or "7d" (units ms, s, m, h, d)`},
		{name: "every too short", every: "999ms", wantField: "every",
			wantError: `every: "999ms" is shorter than the minimum of 1s`},
		{name: "every negative", every: "-1h", wantField: "every",
			wantError: `every: "-1h" is shorter than the minimum of 1s`},
		{name: "every too long", every: "8785h", wantField: "every",
			wantError: `every: "8785h" is longer than the maximum of 366 days (366d)`},
		{name: "every below a millisecond", every: "1.0000001s", wantField: "every",
			wantError: `every: "1.0000001s" is not a whole number of milliseconds`},

		// timezone.
		{name: "unknown zone", cron: "0 9 * * *", tz: "Europe/Pariss", wantField: "timezone",
			wantError: `timezone: unknown IANA zone "Europe/Pariss"; names look like "Europe/Berlin", "America/New_York" or "UTC"`},
		{name: "Local", cron: "0 9 * * *", tz: "Local", wantField: "timezone",
			wantError: `timezone: "Local" is not an IANA zone name; names look like "Europe/Berlin", "America/New_York" or "UTC"`},
		{name: "a path", cron: "0 9 * * *", tz: "../../etc/passwd", wantField: "timezone",
			wantError: `timezone: "../../etc/passwd" is not an IANA zone name; names look like "Europe/Berlin", "America/New_York" or "UTC"`},
		{name: "an offset", every: "1h", tz: "+02:00", wantField: "timezone",
			wantError: `timezone: "+02:00" is not an IANA zone name; names look like "Europe/Berlin", "America/New_York" or "UTC"`},

		// Bounds.
		{name: "end before start", cron: "0 9 * * *", start: "2026-02-01T00:00:00Z", end: "2026-01-31T00:00:00Z",
			wantField: "end_at", wantError: "end_at: end_at is before start_at"},
		{name: "end before the first cron instant", cron: "0 9 * * *", tz: "Europe/Berlin", end: "2026-01-01T07:59:59Z",
			wantField: "end_at", wantError: "end_at: the schedule never fires before end_at (its first instant would be 2026-01-01T08:00:00Z)"},
		{name: "end before the first instant after start", cron: "0 9 * * *", start: "2026-03-01T10:00:00Z", end: "2026-03-02T08:59:59Z",
			wantField: "end_at", wantError: "end_at: the schedule never fires before end_at (its first instant would be 2026-03-02T09:00:00Z)"},
		{name: "end before the anchor", every: "1h", end: "2025-12-31T23:59:59.999Z",
			wantField: "end_at", wantError: "end_at: the schedule never fires before end_at (its first instant would be 2026-01-01T00:00:00Z)"},
		{name: "leap day after end", cron: "0 0 29 2 *", end: "2028-02-28T23:59:59Z",
			wantField: "end_at", wantError: "end_at: the schedule never fires before end_at (its first instant would be 2028-02-29T00:00:00Z)"},
		{name: "start after year 9999", every: "1h", start: "9999-12-31T23:59:59.5Z",
			wantField: "start_at", wantError: "start_at: the schedule never fires after start_at before the year 10000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var start, end time.Time
			if tt.start != "" {
				start = utc(tt.start)
			}
			if tt.end != "" {
				end = utc(tt.end)
			}
			p, err := Parse(tt.cron, tt.every, tt.tz, anchor, start, end)
			if err == nil {
				t.Fatalf("Parse accepted it: %v", p)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not a *FieldError", err, err)
			}
			if fe.Field != tt.wantField {
				t.Errorf("field %q, want %q", fe.Field, tt.wantField)
			}
			if err.Error() != tt.wantError {
				t.Errorf("error\n got %s\nwant %s", err, tt.wantError)
			}
		})
	}
}

func TestParseNeedsAnAnchor(t *testing.T) {
	_, err := Parse("", "1h", "", time.Time{}, time.Time{}, time.Time{})
	var fe *FieldError
	if err == nil || errors.As(err, &fe) {
		t.Fatalf("zero anchor: got %v, want a plain error", err)
	}
}

func TestStringIsNormalized(t *testing.T) {
	tests := []struct{ cron, every, want string }{
		{cron: "0 9 * * MON-FRI", want: "0 9 * * MON-FRI"},
		{cron: "  0\t9  *   * mon-fri ", want: "0 9 * * MON-FRI"},
		{cron: "30 0 9 * jan,Jul sun", want: "30 0 9 * JAN,JUL SUN"},
		{cron: "@Daily", want: "@daily"},
		{cron: "@ANNUALLY", want: "@annually"},
		{cron: "0 0 ? * 7", want: "0 0 ? * 7"},
		{every: "90s", want: "1m30s"},
		{every: "60m", want: "1h0m0s"},
		{every: "1500ms", want: "1.5s"},
	}
	for _, tt := range tests {
		p := mustParse(t, tt.cron, tt.every, "")
		if got := p.String(); got != tt.want {
			t.Errorf("Parse(%q, %q).String() = %q, want %q", tt.cron, tt.every, got, tt.want)
		}
		// The normalized form parses again to the same pattern.
		var q *Pattern
		if tt.cron != "" {
			q = mustParse(t, p.String(), "", "")
		} else {
			q = mustParse(t, "", p.String(), "")
		}
		if got, want := q.NextN(anchor, 5), p.NextN(anchor, 5); !equalTimes(got, want) {
			t.Errorf("%q parsed again: %v, want %v", p, got, want)
		}
	}
}

func equalTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}
