package schedule

import (
	"testing"
	"time"
)

func parseBounded(t *testing.T, cron, every string, anchor time.Time, start, end string) *Pattern {
	t.Helper()
	var s, e time.Time
	if start != "" {
		s = utc(start)
	}
	if end != "" {
		e = utc(end)
	}
	p, err := Parse(cron, every, "", anchor, s, e)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStartAndEndAreInclusive(t *testing.T) {
	p := parseBounded(t, "0 * * * *", "", anchor, "2026-01-01T11:00:00Z", "2026-01-01T13:00:00Z")
	checkNext(t, p, "2026-01-01T00:00:00Z",
		"2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z", "2026-01-01T13:00:00Z")
	if at, ok := p.Next(utc("2026-01-01T13:00:00Z")); ok {
		t.Errorf("Next after end_at = %v, want none", at)
	}
	if got := p.NextN(utc("2026-01-01T00:00:00Z"), 10); len(got) != 3 {
		t.Errorf("NextN(10) gave %d instants, want the 3 before end_at", len(got))
	}
}

func TestStartBetweenInstants(t *testing.T) {
	p := parseBounded(t, "0 * * * *", "", anchor, "2026-01-01T10:30:00Z", "")
	checkNext(t, p, "2026-01-01T00:00:00Z", "2026-01-01T11:00:00Z")
	checkNext(t, p, "2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z")
}

// TestBoundsBelowAMillisecond: start rounds up, end down, so that no instant
// lies outside the bounds as given.
func TestBoundsBelowAMillisecond(t *testing.T) {
	p := parseBounded(t, "", "1s", utc("2026-01-01T11:00:00Z"),
		"2026-01-01T11:00:00.0005Z", "2026-01-01T11:00:02.9999Z")
	checkNext(t, p, "2026-01-01T00:00:00Z", "2026-01-01T11:00:01Z", "2026-01-01T11:00:02Z")
}

func TestEveryCountsFromAnchor(t *testing.T) {
	a := utc("2026-01-01T10:00:00.250Z")
	p := parseBounded(t, "", "90s", a, "", "")
	checkNext(t, p, "2026-01-01T00:00:00Z", // before the anchor: the anchor itself
		"2026-01-01T10:00:00.25Z", "2026-01-01T10:01:30.25Z", "2026-01-01T10:03:00.25Z")
	checkNext(t, p, "2026-01-01T10:00:00.25Z", "2026-01-01T10:01:30.25Z")
	checkNext(t, p, "2026-01-01T10:01:30.249Z", "2026-01-01T10:01:30.25Z")
	checkNext(t, p, "2027-01-01T00:00:00Z", "2027-01-01T00:00:00.25Z") // 350,000 intervals on

	// A start after the anchor keeps the anchor's grid.
	p = parseBounded(t, "", "90s", a, "2026-01-01T10:02:00Z", "")
	checkNext(t, p, "2026-01-01T00:00:00Z", "2026-01-01T10:03:00.25Z")

	// The anchor is truncated to the millisecond.
	p = parseBounded(t, "", "1s", utc("2026-01-01T10:00:00.2509Z"), "", "")
	checkNext(t, p, "2026-01-01T00:00:00Z", "2026-01-01T10:00:00.25Z")

	// The longest interval.
	p = parseBounded(t, "", "8784h", a, "", "")
	checkNext(t, p, "2026-01-01T10:00:00.25Z", "2027-01-02T10:00:00.25Z")
}

func TestNextN(t *testing.T) {
	p := mustParse(t, "", "1h", "")
	if got := p.NextN(anchor, 0); len(got) != 0 {
		t.Errorf("NextN(0) = %v", got)
	}
	if got := p.NextN(anchor, -1); len(got) != 0 {
		t.Errorf("NextN(-1) = %v", got)
	}
	got := p.NextN(anchor, 1000)
	if len(got) != 1000 {
		t.Fatalf("NextN(1000) gave %d", len(got))
	}
	for i, at := range got {
		if want := anchor.Add(time.Duration(i+1) * time.Hour); !at.Equal(want) {
			t.Fatalf("instant %d = %v, want %v", i, at, want)
		}
	}
}

func TestPeriod(t *testing.T) {
	tests := []struct {
		cron, every string
		want        time.Duration
	}{
		{every: "90s", want: 90 * time.Second},
		{cron: "@hourly", want: time.Hour},
		{cron: "*/15 * * * *", want: 15 * time.Minute},
		{cron: "*/10 * * * * *", want: 10 * time.Second},
		{cron: "0 9 * * MON-FRI", want: 24 * time.Hour}, // the anchor is a Thursday
		{cron: "@monthly", want: 28 * 24 * time.Hour},   // February
	}
	for _, tt := range tests {
		if got := mustParse(t, tt.cron, tt.every, "").Period(); got != tt.want {
			t.Errorf("Period of %q%q = %v, want %v", tt.cron, tt.every, got, tt.want)
		}
	}
}

func TestInstantsAreUTCAndMilliseconds(t *testing.T) {
	p := parseBounded(t, "", "1.001s", utc("2026-01-01T10:00:00.001Z"), "", "")
	for _, at := range p.NextN(utc("2026-01-01T10:00:00.0004Z"), 5) {
		if at.Location() != time.UTC || at.Nanosecond()%int(time.Millisecond) != 0 {
			t.Errorf("instant %v is not a UTC millisecond", at)
		}
	}
	c := mustParse(t, "*/7 * * * * *", "", "Asia/Kathmandu")
	for _, at := range c.NextN(utc("2026-01-01T10:00:00.0004Z"), 5) {
		if at.Location() != time.UTC || at.Nanosecond() != 0 {
			t.Errorf("cron instant %v is not a UTC second", at)
		}
	}
}

func TestNoInstantAfterYear9999(t *testing.T) {
	p := mustParse(t, "0 0 1 1 *", "", "")
	if at, ok := p.Next(utc("9999-01-01T00:00:00Z")); ok {
		t.Errorf("Next = %v, want none", at)
	}
	e := mustParse(t, "", "1h", "")
	if at, ok := e.Next(utc("9999-12-31T23:00:00Z")); ok {
		t.Errorf("Next = %v, want none", at)
	}
	if at, ok := e.Next(time.Date(1<<30, 1, 1, 0, 0, 0, 0, time.UTC)); ok {
		t.Errorf("Next = %v, want none", at)
	}
}

func TestFirstNewWallSkipsRepeatedWallTimes(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	tests := []struct{ t, want string }{
		{"2026-10-25T00:20:00Z", "2026-10-25T02:20:01Z"}, // 02:20 CEST: the next second
		{"2026-10-25T01:20:00Z", "2026-10-25T03:00:00Z"}, // 02:20 CET: 02:20-02:59 were shown
		{"2026-10-25T02:20:00Z", "2026-10-25T03:20:01Z"}, // 03:20 CET: past the repeats
		{"2026-03-29T01:20:00Z", "2026-03-29T03:20:01Z"}, // 03:20 CEST, after a gap
	}
	for _, tt := range tests {
		if got := firstNewWall(utc(tt.t), berlin); !got.Equal(utc(tt.want)) {
			t.Errorf("firstNewWall(%s) = %v, want %s", tt.t, got, tt.want)
		}
	}
}

// TestConcurrentUse: a Pattern is read-only once parsed.
func TestConcurrentUse(t *testing.T) {
	p := mustParse(t, "*/5 * * * *", "", "Europe/Berlin")
	done := make(chan []time.Time)
	for range 4 {
		go func() { done <- p.NextN(anchor, 100) }()
	}
	first := <-done
	for range 3 {
		if got := <-done; !equalTimes(got, first) {
			t.Error("concurrent NextN calls disagree")
		}
	}
}
