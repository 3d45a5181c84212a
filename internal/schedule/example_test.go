package schedule_test

import (
	"fmt"
	"time"

	"github.com/kairos-sh/kairos/internal/schedule"
)

// On 29 March 2026 Berlin's clocks skip from 02:00 to 03:00: a schedule for
// 02:30 fires at 03:00 that day.
func ExampleParse() {
	created := time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC)
	p, err := schedule.Parse("30 2 * * *", "", "Europe/Berlin", created, time.Time{}, time.Time{})
	if err != nil {
		panic(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	for _, at := range p.NextN(created, 3) {
		fmt.Println(at.Format(time.RFC3339), at.In(berlin).Format("15:04 MST"))
	}
	// Output:
	// 2026-03-28T01:30:00Z 02:30 CET
	// 2026-03-29T01:00:00Z 03:00 CEST
	// 2026-03-30T00:30:00Z 02:30 CEST
}

func ExampleFieldError() {
	created := time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC)
	_, err := schedule.Parse("0 25 * * *", "", "", created, time.Time{}, time.Time{})
	fmt.Println(err)
	_, err = schedule.Parse("", "90s", "Europe/Pariss", created, time.Time{}, time.Time{})
	fmt.Println(err)
	// Output:
	// cron: field 2 (hour) "25" is out of range 0-23
	// timezone: unknown IANA zone "Europe/Pariss"; names look like "Europe/Berlin", "America/New_York" or "UTC"
}
