package schedule

import (
	"testing"
	"time"
)

// The slowest inputs: a pattern that never fires searches the whole horizon;
// 29 February after 2096 waits eight years; an every-second pattern asked from
// inside a repeated hour.

func BenchmarkParse(b *testing.B) {
	for b.Loop() {
		if _, err := Parse("0 9 * * MON-FRI", "", "Europe/Berlin", anchor, time.Time{}, time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseNeverFires(b *testing.B) {
	for b.Loop() {
		if _, err := Parse("59 59 23 31 2,4,6,9,11 *", "", "Europe/Berlin", anchor, time.Time{}, time.Time{}); err == nil {
			b.Fatal("parsed")
		}
	}
}

func BenchmarkNextLeapDay(b *testing.B) {
	p := mustParse(b, "0 0 29 2 *", "", "Europe/Berlin")
	from := utc("2096-03-01T00:00:00Z")
	for b.Loop() {
		p.Next(from)
	}
}

func BenchmarkNextInRepeatedHour(b *testing.B) {
	p := mustParse(b, "* * * * * *", "", "Europe/Berlin")
	from := utc("2026-10-25T01:00:00Z")
	for b.Loop() {
		p.Next(from)
	}
}

func BenchmarkNextEvery(b *testing.B) {
	p := mustParse(b, "", "90s", "")
	from := utc("2030-06-01T12:34:56.789Z")
	for b.Loop() {
		p.Next(from)
	}
}
